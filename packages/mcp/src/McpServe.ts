/**
 * An agentloop `Toolkit` served as an MCP server, on `effect/ai`'s `McpServer`.
 *
 * Every call goes through `Toolkit.executeAllSafe`, as a call of the agent
 * loop does: arguments decoded with the tool's Schema, its approval asked of
 * the `Approval` service, its time limit kept, its `execute_tool` span
 * recorded. A call that does not succeed (bad arguments, a failure, a denied
 * approval, a timeout) is a result with `isError: true` and the reason as its
 * text, so the client's model can read it and try again, as MCP `2025-11-25`
 * asks for argument errors too; the server goes on answering.
 *
 * @since 0.2.0
 */
import { Tool, Toolkit } from "@agentloop/core"
import type { Item } from "@agentloop/core"
import { McpProtocol, McpSchema, McpServer } from "effect/ai"
import * as ByteSize from "effect/ByteSize"
import type * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import {
  Headers,
  HttpEffect,
  HttpIncomingMessage,
  HttpRouter,
  HttpServerRequest,
  HttpServerResponse
} from "effect/http"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Schema from "effect/Schema"
import type { Stdio } from "effect/Stdio"
import * as McpResult from "./McpResult.ts"

/**
 * How the server introduces itself to clients.
 *
 * @since 0.2.0
 * @category models
 */
export interface Info {
  readonly name: string
  readonly version: string
  /** What the client's model should know about using these tools. */
  readonly instructions?: string | undefined
}

/**
 * A transport to serve on: {@link layerServerStdio} or {@link layerServerHttp}.
 *
 * @since 0.2.0
 * @category services
 */
export class ServerTransport extends Context.Service<ServerTransport, {
  readonly serve: (
    info: Info,
    registrations: Layer.Layer<never, never, McpServer.McpServer>
  ) => Layer.Layer<never, Cause.IllegalArgumentError>
}>()("@agentloop/mcp/McpServe/ServerTransport") {}

/**
 * Serves `toolkit` as an MCP server named by `info`, on the transport layer
 * provided to it. The server runs while the layer is alive (`Layer.launch` for
 * a program that is only the server). A tool's input Schema becomes its
 * input JSON Schema, as a model would see it; a tool whose output encodes to a
 * JSON object also declares an output schema, and its results carry
 * `structuredContent`. What a tool attaches to its output (`Tool.make`'s
 * `content`) follows the output's text as MCP content blocks (see
 * `McpResult.blocks`).
 *
 * @example
 * ```ts
 * import { Tool, Toolkit } from "@agentloop/core"
 * import { Mcp } from "@agentloop/mcp"
 * import { Effect, Layer, Schema } from "effect"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   output: Schema.Finite,
 *   execute: ({ a, b }) => Effect.succeed(a + b)
 * })
 *
 * // A stdio server: `NodeRuntime.runMain(Layer.launch(server.pipe(Layer.provide(NodeServices.layer))))`.
 * export const server = Mcp.serve(Toolkit.make(add), { name: "calculator", version: "1.0.0" }).pipe(
 *   Layer.provide(Mcp.layerServerStdio())
 * )
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const serve = <R>(
  toolkit: Toolkit.Toolkit<R>,
  info: Info
): Layer.Layer<never, Cause.IllegalArgumentError, R | ServerTransport> =>
  Layer.unwrap(Effect.gen(function*() {
    const transport = yield* ServerTransport
    return transport.serve(info, register(toolkit, yield* Effect.context<R>()))
  }))

/**
 * Serves over this process's standard input and output (`Stdio`, which
 * `NodeServices.layer` from `@effect/platform-node` provides). Standard output
 * carries nothing but protocol while the server runs: Effect's loggers write
 * to standard error, and so do `console.log`, `info`, `debug` and `warn`.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerServerStdio = (): Layer.Layer<ServerTransport, never, Stdio> =>
  Layer.effect(ServerTransport)(Effect.map(Effect.context<Stdio>(), (stdio) =>
    ServerTransport.of({
      serve: (info, registrations) =>
        McpServer.layerStdio({ ...info, protocols, registrations }).pipe(
          Layer.provide(Layer.succeedContext(stdio)),
          Layer.provide(consoleToStderr),
          Layer.provide(Layer.succeed(Logger.LogToStderr, true)),
          running
        )
    })))

/**
 * Serves MCP's streamable HTTP transport at `path` of the `HttpRouter`: give
 * the result to `HttpRouter.serve`. Authenticate requests in the router (any
 * caller holding a session id can use it); a request with an `Origin` header
 * is refused unless the origin is in `allowedOrigins`. A request body larger
 * than `maxBodySize` (default 4 MiB; 64 KiB for an initialize, which a
 * session keeps) is refused without being read whole. A session lives until
 * its client ends it, which most clients never do: past `maxSessions`
 * (default 1000), the least recently used one is ended, and its client must
 * initialize again.
 *
 * @example
 * ```ts
 * import { Tool, Toolkit } from "@agentloop/core"
 * import { Mcp } from "@agentloop/mcp"
 * import { Effect, Layer, Schema } from "effect"
 * import { HttpRouter } from "effect/http"
 *
 * const now = Tool.make({
 *   name: "now",
 *   description: "The time on the server",
 *   input: Schema.Struct({}),
 *   output: Schema.String,
 *   execute: () => Effect.sync(() => new Date().toISOString())
 * })
 *
 * // Give it an `HttpServer`, e.g. `NodeHttpServer.layer(createServer, { port: 3000 })`.
 * export const app = HttpRouter.serve(
 *   Mcp.serve(Toolkit.make(now), { name: "clock", version: "1.0.0" }).pipe(
 *     Layer.provide(Mcp.layerServerHttp({ path: "/mcp" }))
 *   )
 * )
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layerServerHttp = (options: {
  readonly path: HttpRouter.PathInput
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /** The largest request body read (default 4 MiB): a larger one is refused, the connection closed. */
  readonly maxBodySize?: ByteSize.Input | undefined
  /** The most sessions kept (default 1000): past it, the least recently used one is ended. */
  readonly maxSessions?: number | undefined
}): Layer.Layer<ServerTransport, never, HttpRouter.HttpRouter> =>
  Layer.effect(ServerTransport)(Effect.map(Effect.context<HttpRouter.HttpRouter>(), (context) => {
    const { maxBodySize, maxSessions, ...http } = options
    const limits: Limits = {
      body: maxBodySize === undefined ? defaultMaxBodySize : ByteSize.fromInputUnsafe(maxBodySize),
      sessions: Math.max(1, maxSessions ?? 1000)
    }
    return ServerTransport.of({
      serve: (info, registrations) =>
        McpServer.layerHttp({ ...info, ...http, protocols, registrations, allowSessionTermination: true }).pipe(
          Layer.provide(
            Layer.sync(HttpRouter.HttpRouter, () => guarded(Context.get(context, HttpRouter.HttpRouter), limits))
          ),
          running
        )
    })
  }))

interface Limits {
  readonly body: ByteSize.ByteSize
  readonly sessions: number
}

const defaultMaxBodySize = ByteSize.mebibytes(4)

// Only an initialize comes without a session, and a session keeps its payload for as long as it lives.
const sessionlessMaxBodySize = ByteSize.kibibytes(64)

type Handler = (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse>

const sessionHeader = "mcp-session-id"

/**
 * The router `McpServer` adds its routes to, with what it does not bound
 * bounded: `effect/http` reads a body whole, unbounded unless `MaxBodySize`
 * says otherwise, and a session lives until its client ends it, which most
 * never do. Past `limits.sessions`, the least recently used one is ended as
 * its client's DELETE would end it.
 */
const guarded = (router: HttpRouter.HttpRouter, limits: Limits): HttpRouter.HttpRouter => {
  // Sessions by id, least recently used first.
  const sessions = new Set<string>()
  let terminate: Handler | undefined
  const touch = (id: string | undefined) => {
    if (id === undefined) return
    sessions.delete(id)
    sessions.add(id)
  }
  const evict = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<void> =>
    Effect.suspend(() => {
      const oldest = sessions.size > limits.sessions ? sessions.values().next().value : undefined
      if (oldest === undefined || terminate === undefined) return Effect.void
      sessions.delete(oldest)
      return Effect.andThen(
        terminate(request.modify({ headers: Headers.set(request.headers, sessionHeader, oldest) })),
        evict(request)
      )
    })
  return HttpRouter.HttpRouter.of({
    ...router,
    add: (method, path, handler, routeOptions) => {
      const handle: Handler = (request) =>
        (HttpServerResponse.isHttpServerResponse(handler)
          ? Effect.succeed(handler)
          : Effect.isEffect(handler)
          ? handler
          : handler(request)) as Effect.Effect<HttpServerResponse.HttpServerResponse>
      if (method === "DELETE") terminate = handle
      return router.add(method, path, (request) => {
        const session = request.headers[sessionHeader]
        const limit = session === undefined ? sessionlessMaxBodySize : limits.body
        const bounded = Effect.provideService(
          handle(request),
          HttpIncomingMessage.MaxBodySize,
          ByteSize.min(limit, limits.body)
        )
        if (method === "DELETE") {
          // Only a DELETE that ended the session (not one refused for its origin) frees its place.
          return Effect.tap(
            bounded,
            (response) => Effect.sync(() => session !== undefined && response.status < 300 && sessions.delete(session))
          )
        }
        if (method !== "POST") return bounded
        // The session id of an initialize is set on the response as it is sent: look then.
        return Effect.tap(bounded, () =>
          HttpEffect.appendPreResponseHandler((_, response) => {
            // Only ids the server issued are kept: a made-up one must not take a place.
            if (session === undefined) touch(response.headers[sessionHeader])
            else if (response.status === 404) sessions.delete(session)
            else if (sessions.has(session)) touch(session)
            return Effect.as(evict(request), response)
          }))
      }, routeOptions)
    }
  })
}

// A server layer, without the services it provides: what runs is the point.
const running = <A, E>(server: Layer.Layer<A, E>): Layer.Layer<never, E> => Layer.provide(Layer.empty, server)

// The revisions the official SDKs speak; `2026-07-28` is sessionless and not yet spoken by them.
const protocols = [McpProtocol.v2025_11_25, McpProtocol.v2025_06_18, McpProtocol.v2025_03_26] as const

const consoleToStderr: Layer.Layer<never> = Layer.effectDiscard(Effect.acquireRelease(
  Effect.sync(() => {
    const console = globalThis.console
    const saved = { log: console.log, info: console.info, debug: console.debug, warn: console.warn }
    console.log =
      console.info =
      console.debug =
      console.warn =
        console.error
    return saved
  }),
  (saved) => Effect.sync(() => Object.assign(globalThis.console, saved))
))

const register = <R>(
  toolkit: Toolkit.Toolkit<R>,
  services: Context.Context<R>
): Layer.Layer<never, never, McpServer.McpServer> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const server = yield* McpServer.McpServer
    let calls = 0
    for (const tool of toolkit.tools) {
      const outputSchema = objectSchema(tool)
      yield* server.addTool({
        tool: new McpSchema.Tool({
          name: tool.name,
          description: tool.description,
          inputSchema: yield* inputSchema(tool),
          ...(outputSchema === undefined ? {} : { outputSchema })
        }),
        annotations: Context.empty(),
        handle: (payload) =>
          Effect.suspend(() => {
            calls += 1
            return call(toolkit, tool.name, payload, calls, outputSchema !== undefined)
          }).pipe(Effect.updateContext((request: Context.Context<never>) => Context.merge(services, request)))
      })
    }
  }))

const decodeInputSchema = Schema.decodeUnknownEffect(McpSchema.ToolJson)

// MCP requires `type: "object"` at the root. Arguments are always an object (providers send nothing
// else), but an empty Struct's schema says only "not null": say "object" as well.
const inputSchema = (tool: Tool.Any<unknown>): Effect.Effect<McpSchema.ToolJson> =>
  decodeInputSchema(tool.parameters.type === undefined ? { ...tool.parameters, type: "object" } : tool.parameters)
    .pipe(
      Effect.mapError((error) =>
        new Error(`Mcp.serve: the input of tool "${tool.name}" is not a JSON object: ${error.message}`)
      ),
      Effect.orDie
    )

// Structured content must be an object: only such outputs declare a schema.
const objectSchema = (tool: Tool.Any<unknown>): McpSchema.ToolOutputJson | undefined => {
  const schema = Tool.toParameters(tool.output)
  return schema.type === "object" ? schema : undefined
}

/** The arguments as a call's JSON text; `undefined` when they nest too deep for `JSON.stringify` (the stack's limit). */
const argumentsText = (payload: unknown): string | undefined => {
  try {
    return JSON.stringify(payload ?? {})
  } catch {
    return undefined
  }
}

const tooDeep = new McpSchema.CallToolResult({
  isError: true,
  content: [{ type: "text", text: "The arguments nest too deep to be read: send them as a flatter JSON object." }]
})

const call = <R>(
  toolkit: Toolkit.Toolkit<R>,
  name: string,
  payload: unknown,
  index: number,
  structured: boolean
): Effect.Effect<McpSchema.CallToolResult, never, R> => {
  const text = argumentsText(payload)
  if (text === undefined) return Effect.succeed(tooDeep)
  const functionCall: Item.FunctionCall = {
    type: "function_call",
    id: `fc_mcp_${index}`,
    status: "completed",
    call_id: `mcp_${index}`,
    name,
    arguments: text
  }
  return Effect.map(Toolkit.executeAllSafe(toolkit, [functionCall]), ([result]) => toResult(result!, structured))
}

const toResult = (result: Toolkit.Result, structured: boolean): McpSchema.CallToolResult => {
  if (result.outcome !== "success") {
    const text = result.output.output === JSON.stringify({ error: result.reason })
      ? result.reason
      : result.output.output
    return new McpSchema.CallToolResult({ isError: true, content: [{ type: "text", text }] })
  }
  const encoded: unknown = JSON.parse(result.output.output)
  return new McpSchema.CallToolResult({
    content: [
      { type: "text", text: typeof encoded === "string" ? encoded : result.output.output },
      ...McpResult.blocks(result.output.content ?? [])
    ],
    ...(structured ? { structuredContent: encoded } : {})
  })
}
