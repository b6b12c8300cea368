/**
 * `effect/ai` toolkits as agentloop toolkits, and back.
 *
 * An `effect/ai` toolkit with its handlers (what `McpClient.toolkit` returns,
 * and what an Effect application already wrote) runs in an agentloop agent
 * with {@link fromEffectAi}; an agentloop toolkit runs under `effect/ai`'s
 * `LanguageModel` with {@link toEffectAi}. Either way, a call keeps the
 * semantics of the side that owns the tool, and what a tool shows the model
 * besides its result (agentloop's `content`, `effect/ai`'s `modelOutput`)
 * goes along.
 *
 * @since 0.2.0
 */
import { Prompt, Tool as AiTool, Toolkit as AiToolkit } from "effect/ai"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as JsonSchema from "effect/JsonSchema"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import * as Stream from "effect/Stream"
import type * as AiError from "../AiError.ts"
import * as Item from "../Item.ts"
import * as ProviderContent from "../provider/ProviderContent.ts"
import * as Tool from "../Tool.ts"
import * as Toolkit from "../Toolkit.ts"
import * as EffectAiContent from "./EffectAiContent.ts"

/**
 * The agentloop toolkit of an `effect/ai` toolkit with its handlers (yield the
 * `effect/ai` toolkit with its handler layer provided to get one).
 *
 * Arguments are decoded with each tool's parameters Schema before the call, so
 * a bad one is a mistake the model reads; a tool built with a raw JSON Schema
 * (`Tool.dynamic`) gets its arguments as they are, checked only for being an
 * object. The output is the success value encoded with the tool's success
 * Schema; preliminary results are progress events; a failure, whatever the
 * tool's `failureMode`, is a failure the model reads. A `needsApproval` that is
 * a boolean carries over; a function of the parameters is asked with the
 * decoded input, and one that answers with an Effect counts as "needs
 * approval". Provider-defined tools are left out: agentloop runs only tools
 * it can call. A tool's `toModelOutput` (what `effect/ai` shows the model in
 * place of the result) becomes the output's `content`, its text as text and
 * its files as images and files, shown after the result's JSON; a part that
 * cannot be carried (see `EffectAiContent.fromFilePart`) fails the call with
 * the reason, which the model reads.
 *
 * @example
 * ```ts
 * import { EffectAi, Toolkit } from "@agentloop/core"
 * import { Effect, Schema } from "effect"
 * import { Tool as AiTool, Toolkit as AiToolkit } from "effect/ai"
 *
 * const GetTime = AiTool.make("GetTime", { description: "The time", success: Schema.String })
 * const Clock = AiToolkit.make(GetTime)
 *
 * const program = Effect.gen(function*() {
 *   const toolkit = EffectAi.fromEffectAiToolkit(yield* Clock)
 *   const [result] = yield* Toolkit.executeAllSafe(toolkit, [
 *     { type: "function_call", id: "fc_1", status: "completed", call_id: "c1", name: "GetTime", arguments: "{}" }
 *   ])
 *   return result!.output.output
 * }).pipe(Effect.provide(Clock.toLayer({ GetTime: () => Effect.succeed("noon") })))
 *
 * console.log(await Effect.runPromise(program)) // "noon"
 * ```
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromEffectAiToolkit = <Tools extends Record<string, AiTool.Any>>(
  toolkit: AiToolkit.WithHandler<Tools>
): Toolkit.Toolkit<AiTool.HandlerServices<Tools[keyof Tools]>> =>
  Toolkit.make(
    ...Object.values(toolkit.tools).flatMap((tool) =>
      AiTool.isProviderDefined(tool) ? [] : [fromEffectAiTool(toolkit, tool)]
    )
  )

const JsonObject = Schema.Record(Schema.String, Schema.Json)

const fromEffectAiTool = <Tools extends Record<string, AiTool.Any>>(
  toolkit: AiToolkit.WithHandler<Tools>,
  tool: AiTool.Any
): Tool.Any<AiTool.HandlerServices<Tools[keyof Tools]>> => {
  const raw = AiTool.isDynamic(tool) && tool.jsonSchema !== undefined
  // agentloop decodes the JSON arguments to the parameters' type, then encodes them again for `handle`,
  // which decodes what it is given: a Date parameter is an ISO string for the model, a Date for the handler.
  // Like every agentloop tool's, these Schemas must not need services.
  const parameters: Schema.Codec<unknown, { readonly [key: string]: unknown }> = raw
    ? JsonObject
    : Schema.make(tool.parametersSchema.ast)
  const success: Schema.Codec<unknown, unknown> = Schema.make(tool.successSchema.ast)
  const encodeParameters = Schema.encodeUnknownEffect(parameters)
  const approval = tool.needsApproval
  const made = Tool.make({
    name: tool.name,
    description: AiTool.getDescription(tool) ?? "",
    input: parameters,
    output: withContent(success),
    content: (output) => output.content,
    needsApproval: typeof approval === "function"
      ? (input) => {
        const answer = approval(input, { toolCallId: "", messages: [] })
        return typeof answer === "boolean" ? answer : true
      }
      : approval,
    execute: (input) =>
      Stream.unwrap(Effect.gen(function*() {
        const encoded = yield* encodeParameters(input)
        // `handle` is typed by the toolkit's record of tools; this tool is one of them, by name.
        const results = yield* toolkit.handle(tool.name, encoded as never)
        return results.pipe(
          Stream.mapEffect((result): Effect.Effect<Tool.StreamEvent<unknown, Shown>, unknown> => {
            if (result.isFailure) return Effect.fail(result.result)
            if (result.preliminary) return Effect.succeed(Tool.progress(result.result))
            const content = EffectAiContent.fromModelOutput(
              result.modelOutput ?? [],
              (position, part) => `${tool.name}'s modelOutput[${position}] (file ${part.mediaType})`
            )
            return Result.isFailure(content)
              ? Effect.fail(content.failure)
              : Effect.succeed(Tool.done({ result: result.result, content: content.success }))
          })
        )
      }))
  })
  return { ...made, parameters: AiTool.getJsonSchema(tool) }
}

/** An effect/ai tool's result, and the parts of its `modelOutput` as agentloop shows them. */
interface Shown {
  readonly result: unknown
  readonly content: ReadonlyArray<Item.ToolContentPart>
}

const ShownSchema = Schema.Struct({ result: Schema.Unknown, content: Schema.Array(Item.ToolContentPart) })

/**
 * The result schema of a tool whose output carries what it shows the model
 * besides: it encodes as the result alone (what the model reads as JSON), and
 * decodes with nothing shown.
 */
const withContent = (success: Schema.Codec<unknown, unknown>): Schema.Codec<Shown, unknown> =>
  success.pipe(Schema.decodeTo(ShownSchema, {
    decode: SchemaGetter.transform((result): typeof ShownSchema.Encoded => ({ result, content: [] })),
    encode: SchemaGetter.transform((shown: typeof ShownSchema.Encoded) => shown.result)
  }))

/**
 * An agentloop tool as `effect/ai` runs it: a dynamic tool with the tool's
 * JSON Schema, whose success is the output's JSON and whose failure is the
 * `{"error": …}` JSON the model would read.
 *
 * @since 0.2.0
 * @category models
 */
export type EffectAiTool = AiTool.Dynamic<string, {
  readonly parameters: JsonSchema.JsonSchema
  readonly success: typeof Schema.Json
  readonly failure: typeof Schema.Json
  readonly failureMode: "return"
}>

/**
 * The `effect/ai` toolkit, with its handlers, of an agentloop toolkit: give it
 * to `LanguageModel.generateText({ toolkit })` of `effect/ai`.
 *
 * Every call runs through `Toolkit.executeAllSafe`, as in an agentloop agent:
 * arguments decoded with the tool's Schema, the `Approval` service asked for a
 * tool that needs approval (so `effect/ai`'s own approval is not used), time
 * limits kept, the `execute_tool` span recorded. A call that does not succeed
 * is returned to the model as a failure (`failureMode: "return"`) carrying the
 * reason, never a failure of `generateText`. What a tool attaches to its
 * output (`Tool.make`'s `content`: a screenshot, a page) is the result's
 * `modelOutput`, which `effect/ai` shows the model in place of the result: the
 * output's JSON as text, then the attached text, images and files.
 *
 * @example
 * ```ts
 * import { EffectAi, Tool, Toolkit } from "@agentloop/core"
 * import { Effect, Schema, Stream } from "effect"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   output: Schema.Finite,
 *   execute: ({ a, b }) => Effect.succeed(a + b)
 * })
 *
 * const program = Effect.gen(function*() {
 *   const toolkit = yield* EffectAi.toEffectAiToolkit(Toolkit.make(add))
 *   const results = yield* toolkit.handle("add", { a: 2, b: 3 }).pipe(Stream.unwrap, Stream.runCollect)
 *   return results[0]!.result
 * })
 *
 * console.log(await Effect.runPromise(program)) // 5
 * ```
 *
 * @since 0.2.0
 * @category conversions
 */
export const toEffectAiToolkit = <R>(
  toolkit: Toolkit.Toolkit<R>
): Effect.Effect<AiToolkit.WithHandler<Record<string, EffectAiTool>>, never, R> =>
  Effect.gen(function*() {
    const services = yield* Effect.context<R>()
    const tools = toolkit.tools.map((tool): EffectAiTool =>
      AiTool.dynamic(tool.name, {
        description: tool.description,
        parameters: tool.parameters,
        success: Schema.Json,
        failure: Schema.Json,
        failureMode: "return"
      })
    )
    const aiToolkit: AiToolkit.Toolkit<Record<string, EffectAiTool>> = AiToolkit.make(...tools)
    let calls = 0
    // What a running call's tool attached to its output, by call id, until its result is handed on.
    const shown = new Map<string, ReadonlyArray<Prompt.ToolModelOutputPart>>()
    const handlers: AiToolkit.HandlersFrom<Record<string, EffectAiTool>> = Object.fromEntries(
      toolkit.tools.map((tool) => [
        tool.name,
        (params: unknown, context: AiToolkit.HandlerContext<EffectAiTool>) =>
          Effect.flatMap(Effect.context<never>(), (current) => {
            const call = runCall(toolkit, tool.name, params, context.toolCallId ?? `effect_ai_${++calls}`, shown)
            // The call's own services (its span, an Approval provided around it) win over the captured ones.
            return Effect.provideContext(call, Context.merge(services, current))
          })
      ])
    )
    const handled = yield* aiToolkit.pipe(Effect.provideContext(yield* aiToolkit.toHandlers(handlers)))
    return {
      tools: handled.tools,
      handle: (name, params, toolCallId, options) => {
        // Every call gets an id here, so that its handler and its result find what it showed.
        const callId = toolCallId ?? `effect_ai_${++calls}`
        return Effect.map(handled.handle(name, params, callId, options), (results) =>
          results.pipe(
            Stream.map((result) => {
              const modelOutput = shown.get(callId)
              return modelOutput === undefined || result.isFailure || result.preliminary
                ? result
                : { ...result, modelOutput }
            }),
            Stream.ensuring(Effect.sync(() => shown.delete(callId)))
          ))
      }
    }
  })

const decodeJson = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Json))

const decodeModelOutput = Schema.decodeUnknownResult(Schema.Array(Prompt.ToolModelOutputPart))

/**
 * What a tool shows the model: its output's text, then what it attached, as
 * `modelOutput`; fails, as the reason the model reads, for a part that
 * cannot be carried.
 */
const modelOutputOf = (
  name: string,
  output: Item.FunctionCallOutput
): Result.Result<ReadonlyArray<Prompt.ToolModelOutputPart>, AiError.InvalidRequest> =>
  Result.flatMap(
    EffectAiContent.toModelOutput(
      output.output,
      output.content ?? [],
      (position, part) => `tool "${name}" output content[${position}] (${part.type})`
    ),
    (parts) =>
      Result.mapError(
        decodeModelOutput(parts),
        (error) => ProviderContent.refuse(EffectAiContent.provider, `tool "${name}" output`, error.message)
      )
  )

const runCall = <R>(
  toolkit: Toolkit.Toolkit<R>,
  name: string,
  params: unknown,
  callId: string,
  shown: Map<string, ReadonlyArray<Prompt.ToolModelOutputPart>>
): Effect.Effect<Schema.Json, Schema.Json, R> => {
  const call: Item.FunctionCall = {
    type: "function_call",
    id: `fc_${callId}`,
    status: "completed",
    call_id: callId,
    name,
    arguments: JSON.stringify(params ?? {})
  }
  return Effect.flatMap(Toolkit.executeAllSafe(toolkit, [call]), ([result]) => {
    const output = decodeJson(result!.output.output)
    if (Toolkit.isMistake(result!)) return Effect.fail(output)
    if (result!.output.content === undefined || result!.output.content.length === 0) return Effect.succeed(output)
    const modelOutput = modelOutputOf(name, result!.output)
    if (Result.isFailure(modelOutput)) return Effect.fail({ error: modelOutput.failure.message })
    shown.set(callId, modelOutput.success)
    return Effect.succeed(output)
  })
}
