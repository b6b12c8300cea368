/**
 * `effect/ai` toolkits as agentloop toolkits, and back.
 *
 * An `effect/ai` toolkit with its handlers (what `McpClient.toolkit` returns,
 * and what an Effect application already wrote) runs in an agentloop agent
 * with {@link fromEffectAi}; an agentloop toolkit runs under `effect/ai`'s
 * `LanguageModel` with {@link toEffectAi}. Either way, a call keeps the
 * semantics of the side that owns the tool.
 *
 * @since 0.2.0
 */
import { Context, Effect, Schema, Stream } from "effect"
import type { JsonSchema } from "effect"
import { Tool as AiTool, Toolkit as AiToolkit } from "effect/ai"
import type * as Item from "../Item.ts"
import * as Tool from "../Tool.ts"
import * as Toolkit from "../Toolkit.ts"

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
 * it can call.
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
    output: success,
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
          Stream.mapEffect((result): Effect.Effect<Tool.StreamEvent<unknown, unknown>, unknown> => {
            if (result.isFailure) return Effect.fail(result.result)
            return Effect.succeed(result.preliminary ? Tool.progress(result.result) : Tool.done(result.result))
          })
        )
      }))
  })
  return { ...made, parameters: AiTool.getJsonSchema(tool) }
}

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
 * reason, never a failure of `generateText`.
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
    const handlers: AiToolkit.HandlersFrom<Record<string, EffectAiTool>> = Object.fromEntries(
      toolkit.tools.map((tool) => [
        tool.name,
        (params: unknown, context: AiToolkit.HandlerContext<EffectAiTool>) =>
          Effect.flatMap(Effect.context<never>(), (current) => {
            calls += 1
            const call = runCall(toolkit, tool.name, params, context.toolCallId ?? `effect_ai_${calls}`)
            // The call's own services (its span, an Approval provided around it) win over the captured ones.
            return Effect.provideContext(call, Context.merge(services, current))
          })
      ])
    )
    return yield* aiToolkit.pipe(Effect.provideContext(yield* aiToolkit.toHandlers(handlers)))
  })

const decodeJson = Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Json))

const runCall = <R>(
  toolkit: Toolkit.Toolkit<R>,
  name: string,
  params: unknown,
  callId: string
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
    return Toolkit.isMistake(result!) ? Effect.fail(output) : Effect.succeed(output)
  })
}
