/**
 * An MCP server's tools as an agentloop `Toolkit`.
 *
 * Each tool keeps the name the server lists (after an optional prefix), its
 * description, and its input JSON Schema exactly as the server wrote it: that
 * is what the model sees, and arguments that break it are a mistake the model
 * reads before any call. A call's result is the text of its content, with its
 * images attached as the output's `content` (see `McpResult.shown`); a result
 * with `isError: true`, a protocol error or a server gone away is a mistake
 * the model reads, never a crash. Approval and timeouts work as for any
 * agentloop tool, and each call is an `execute_tool` span naming the server.
 *
 * @since 0.2.0
 */
import { Item, Tool, Toolkit } from "@agentloop/core"
import type { McpClientError, McpSchema } from "effect/ai"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import type * as Scope from "effect/Scope"
import * as McpArguments from "./McpArguments.ts"
import * as McpConnection from "./McpConnection.ts"
import * as McpResult from "./McpResult.ts"

/**
 * A call whose result the server marked `isError: true`; `message` is the
 * result's text, which the model reads.
 *
 * @since 0.2.0
 * @category errors
 */
export class McpToolError extends Schema.TaggedError<McpToolError>()("McpToolError", {
  tool: Schema.String,
  message: Schema.String
}) {}

/**
 * Options of {@link toolkit}.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /** Put before every tool's name (`"files_"` makes `read` `files_read`), to tell servers apart. */
  readonly prefix?: string | undefined
  /**
   * Whether a call waits for the `Approval` service: for every call, or as a
   * function of the tool's name (as the server lists it, without the prefix)
   * and its arguments.
   */
  readonly needsApproval?: boolean | ((tool: string, input: McpArguments.Arguments) => boolean) | undefined
  /** The time limit of each call; the call is cancelled on the server when it passes. */
  readonly timeout?: Duration.Input | undefined
  /** The time limit of connecting and listing the tools (default 60 seconds). */
  readonly connectTimeout?: Duration.Input | undefined
  /**
   * What becomes of the images in a result: `"attach"` (the default) shows
   * them to the model as image parts of the output's `content`;
   * `"describe"` writes a placeholder naming each one in the text instead,
   * for a model whose provider takes no images in a tool's result (Chat
   * Completions, Gemini before Gemini 3), which would refuse the next turn.
   */
  readonly images?: "attach" | "describe" | undefined
}

/**
 * Connects to `server`, lists its tools and gives them as a toolkit, for as
 * long as the scope is open; closing it ends a stdio server's process. Tools
 * whose name (with the prefix) a model provider refuses (anything but 1 to 64
 * letters, digits, `_` and `-`), or that would make every model request too
 * long (see {@link maxSchemaLength} and {@link maxToolsLength}), are left out
 * with a warning in the log; tools the server requires to run as tasks are
 * left out by `effect/ai`. The list is read once: a server
 * that restarted, or changed its tools, needs a new `toolkit`.
 *
 * @example
 * ```ts
 * import { AgentLoop, Approval } from "@agentloop/core"
 * import { Mcp } from "@agentloop/mcp"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { NodeServices } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { createRequire } from "node:module"
 *
 * const everything = Mcp.stdio({
 *   command: process.execPath,
 *   args: [createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]
 * })
 *
 * const program = Effect.gen(function*() {
 *   const toolkit = yield* Mcp.toolkit(everything, { needsApproval: (tool) => tool !== "echo" })
 *   const agent = yield* AgentLoop.AgentLoop
 *   return yield* agent.run({ input: "Say hi through echo", toolkit })
 * }).pipe(Effect.scoped)
 *
 * const script = [
 *   MockLanguageModel.callsTurn([{ name: "echo", arguments: { message: "hi" } }]),
 *   MockLanguageModel.textTurn("It said: Echo: hi")
 * ]
 * const result = await Effect.runPromise(program.pipe(
 *   Effect.provide(AgentLoop.layer),
 *   Effect.provide(Layer.mergeAll(MockLanguageModel.layer(script), NodeServices.layer, Approval.allowAll))
 * ))
 * console.log(result._tag) // Stopped
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const toolkit = <S extends McpConnection.Server>(
  server: S,
  options: Options = {}
): Effect.Effect<Toolkit.Toolkit, McpClientError.McpClientError, Scope.Scope | McpConnection.Requirements<S>> =>
  Effect.gen(function*() {
    const connection = yield* McpConnection.connect(server, { timeout: options.connectTimeout })
    const descriptors = yield* connection.client.listTools()
    const tools: Array<Tool.Any<never>> = []
    const names = new Set<string>()
    let total = 0
    for (const descriptor of descriptors) {
      const name = `${options.prefix ?? ""}${descriptor.name}`
      const schema = schemaLength(descriptor.inputSchema)
      const length = name.length + bounded(description(descriptor)).length + schema
      const leftOut = !validName.test(name)
        ? "model providers accept only 1 to 64 letters, digits, _ and -"
        : names.has(name)
        ? "listed twice"
        : schema > maxSchemaLength
        ? `its input schema is over ${maxSchemaLength} characters`
        : total + length > maxToolsLength
        ? `the server's tools are over ${maxToolsLength} characters with it`
        : undefined
      if (leftOut !== undefined) {
        yield* Effect.logWarning(`MCP server "${connection.name}": tool "${name.slice(0, 80)}" left out: ${leftOut}`)
        continue
      }
      total += length
      names.add(name)
      tools.push(fromDescriptor(connection, descriptor, name, options))
    }
    yield* Effect.annotateCurrentSpan({
      "agentloop.mcp.server.name": connection.name,
      "agentloop.mcp.tools": names.size
    })
    return Toolkit.make(...tools)
  }).pipe(Effect.withSpan("Mcp.toolkit", { attributes: { "agentloop.mcp.transport": server._tag } }))

/**
 * The longest description of a server's tool kept, in characters: every
 * model request carries it, and a hostile server could make each one cost
 * a fortune. A longer one is cut.
 *
 * @since 0.2.0
 * @category limits
 */
export const maxDescriptionLength = 8192

/**
 * The largest input schema of a server's tool, as JSON characters: every
 * model request carries it too. A tool with a larger one is left out, with a
 * warning in the log.
 *
 * @since 0.2.0
 * @category limits
 */
export const maxSchemaLength = 65_536

/**
 * The most characters a server's tools may add to every model request,
 * together: their names, descriptions (once cut) and input schemas. A tool
 * that would take them past it is left out, with a warning in the log: a
 * server listing thousands of tools, each within the bounds above, would
 * otherwise make every request megabytes long.
 *
 * @since 0.3.0
 * @category limits
 */
export const maxToolsLength = 1_048_576

/** The length of `schema` as JSON; infinite when it cannot be written (nested deeper than the stack). */
const schemaLength = (schema: unknown): number => {
  try {
    return (JSON.stringify(schema) ?? "").length
  } catch {
    // No model would take it either.
    return Number.POSITIVE_INFINITY
  }
}

const description = (descriptor: McpSchema.Tool): string => descriptor.description ?? descriptor.title ?? ""

const bounded = (description: string): string =>
  description.length <= maxDescriptionLength ? description : `${description.slice(0, maxDescriptionLength - 1)}…`

// What OpenAI, Gemini and Anthropic all accept as a function name.
const validName = /^[a-zA-Z0-9_-]{1,64}$/

/** The result's text, which the model reads as the output's JSON, and the images shown after it. */
const Output = Schema.String.pipe(Schema.decodeTo(
  Schema.Struct({ text: Schema.String, content: Schema.Array(Item.ToolContentPart) }),
  {
    decode: SchemaGetter.transform((text: string) => ({ text, content: [] })),
    encode: SchemaGetter.transform((shown: { readonly text: string }) => shown.text)
  }
))

const fromDescriptor = (
  connection: McpConnection.Connection,
  descriptor: McpSchema.Tool,
  name: string,
  options: Options
): Tool.Any<never> => {
  const approval = options.needsApproval
  const tool = Tool.make({
    name,
    description: bounded(description(descriptor)),
    input: McpArguments.schema(descriptor.inputSchema),
    output: Output,
    content: (shown) => shown.content,
    timeout: options.timeout,
    needsApproval: typeof approval === "function" ? (input) => approval(descriptor.name, input) : approval,
    execute: (input) =>
      Effect.annotateCurrentSpan(connection.attributes).pipe(
        Effect.andThen(connection.client.callTool({ tool: descriptor, arguments: input })),
        Effect.flatMap((result) =>
          result.isError === true
            ? Effect.fail(new McpToolError({ tool: descriptor.name, message: McpResult.text(result) }))
            : Effect.succeed(McpResult.shown(result, { images: options.images }))
        )
      )
  })
  // The model sees the schema as the server wrote it, not one derived from the checking Schema.
  return { ...tool, parameters: descriptor.inputSchema }
}
