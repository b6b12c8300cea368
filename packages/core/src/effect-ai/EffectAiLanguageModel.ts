/**
 * agentloop's `LanguageModel` and `effect/ai`'s, one as the other, so an
 * application can run agentloop agents on an `effect/ai` provider layer, and
 * `effect/ai` code (`generateText`, `streamText`, `Chat`) on an agentloop
 * provider layer.
 *
 * @since 0.2.0
 */
import { IdGenerator, LanguageModel as AiLanguageModel, Tool as AiTool, Toolkit as AiToolkit } from "effect/ai"
import type { Response } from "effect/ai"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import * as AiError from "../AiError.ts"
import type { ToolDefinition, TurnOptions } from "../LanguageModel.ts"
import { LanguageModel } from "../LanguageModel.ts"
import { isTurnComplete } from "../TurnDelta.ts"
import * as EffectAiError from "./EffectAiError.ts"
import * as EffectAiPrompt from "./EffectAiPrompt.ts"
import * as EffectAiResponse from "./EffectAiResponse.ts"

/**
 * Provides `effect/ai`'s `LanguageModel` from agentloop's: `generateText`,
 * `streamText` and `generateObject` of `effect/ai` ask the agentloop provider
 * for one turn. Tools are sent with their JSON Schema; structured output with
 * the JSON Schema of its Schema. A prompt's file parts are images and files
 * of the history (see `EffectAiPrompt.toHistory`), which the agentloop
 * provider maps or refuses before sending anything.
 *
 * @example
 * ```ts
 * import { EffectAi } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 * import { LanguageModel } from "effect/ai"
 *
 * const program = LanguageModel.generateText({ prompt: "Say hi" }).pipe(Effect.map((response) => response.text))
 * const model = EffectAi.toEffectAiLanguageModel.pipe(Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("hi")])))
 *
 * console.log(await Effect.runPromise(program.pipe(Effect.provide(model)))) // hi
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const toEffectAiLanguageModel: Layer.Layer<AiLanguageModel.LanguageModel, never, LanguageModel> = Layer
  .effect(AiLanguageModel.LanguageModel)(
    Effect.gen(function*() {
      const model = yield* LanguageModel
      const turn = (options: AiLanguageModel.ProviderOptions) =>
        Stream.unwrap(
          Effect.map(request(options), ({ history, turnOptions }) => model.streamTurn(history, turnOptions))
        )
      return yield* AiLanguageModel.make({
        generateText: (options) =>
          turn(options).pipe(
            Stream.filter(isTurnComplete),
            Stream.runHead,
            Effect.flatMap((complete): Effect.Effect<Array<Response.PartEncoded>, AiError.AiError> =>
              complete._tag === "Some"
                ? Effect.fromResult(EffectAiResponse.turnParts(complete.value.turn))
                : Effect.fail(new AiError.IncompleteTurn({ message: "The turn ended without turn_complete" }))
            ),
            Effect.mapError(EffectAiError.fromAiError)
          ),
        streamText: (options) =>
          Stream.unwrap(Effect.map(turnId, (id) => {
            const encode = EffectAiResponse.makeStreamEncoder(id)
            return turn(options).pipe(
              Stream.flatMap((delta) => {
                const parts = encode(delta)
                return Result.isFailure(parts) ? Stream.fail(parts.failure) : Stream.fromIterable(parts.success)
              }),
              Stream.mapError(EffectAiError.fromAiError)
            )
          }))
      })
    })
  )

/** An id for a streamed turn, from the `IdGenerator` effect/ai provides (its default outside a response). */
const turnId = Effect.serviceOption(IdGenerator.IdGenerator).pipe(
  Effect.flatMap((generator) => Option.getOrElse(generator, () => IdGenerator.defaultIdGenerator).generateId())
)

const request = (options: AiLanguageModel.ProviderOptions) =>
  Effect.map(EffectAiPrompt.toHistory(options.prompt), ({ history, instructions }) => {
    const { allowed, toolChoice } = EffectAiPrompt.toToolChoice(options.toolChoice)
    const tools = options.tools.flatMap((tool): ReadonlyArray<ToolDefinition> =>
      AiTool.isProviderDefined(tool) || (allowed !== undefined && !allowed(tool.name))
        ? []
        : [{ name: tool.name, description: AiTool.getDescription(tool) ?? "", parameters: AiTool.getJsonSchema(tool) }]
    )
    const format = options.responseFormat
    const turnOptions: TurnOptions = {
      ...(instructions === undefined ? {} : { instructions }),
      ...(tools.length === 0 ? {} : { tools, toolChoice }),
      ...(format.type === "json"
        ? { output: { name: format.objectName, schema: AiTool.getJsonSchemaFromSchema(format.schema) } }
        : {})
    }
    return { history, turnOptions }
  })

/**
 * Provides agentloop's `LanguageModel` from `effect/ai`'s (an OpenAI,
 * Anthropic or other provider layer of the Effect ecosystem): each turn is
 * one `streamText` with tool-call resolution off, agentloop running the tools.
 * `provider` names it in traces and errors (default `"effect-ai"`).
 *
 * The model and its parameters are the `effect/ai` layer's own: a turn's
 * `model` and `params` are not sent. Structured output (`output`) is refused
 * with `InvalidRequest`: `effect/ai` streams no structured output.
 *
 * @example
 * ```ts
 * import { AgentLoop, EffectAi } from "@agentloop/core"
 * import { Effect, Layer, Result, Stream } from "effect"
 * import { LanguageModel } from "effect/ai"
 *
 * // An effect/ai model that always says "hello"; a real app provides OpenAiLanguageModel or the like.
 * const effectAiModel = Layer.effect(LanguageModel.LanguageModel)(LanguageModel.make({
 *   generateText: () => Effect.succeed([]),
 *   streamText: () =>
 *     Stream.make(
 *       { type: "text-delta", id: "t", delta: "hello" },
 *       { type: "finish", reason: "stop", usage: { inputTokens: { total: 3 }, outputTokens: { total: 1 } } }
 *     )
 * }))
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   const result = yield* agent.run({ input: "Greet me" })
 *   return result._tag === "Stopped" ? result.output : ""
 * }).pipe(
 *   Effect.provide(AgentLoop.layer),
 *   Effect.provide(EffectAi.fromEffectAiLanguageModel().pipe(Layer.provide(effectAiModel)))
 * )
 *
 * console.log(await Effect.runPromise(program)) // hello
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const fromEffectAiLanguageModel = (
  options: { readonly provider?: string | undefined } = {}
): Layer.Layer<LanguageModel, never, AiLanguageModel.LanguageModel> =>
  Layer.effect(LanguageModel)(Effect.gen(function*() {
    const model = yield* AiLanguageModel.LanguageModel
    const provider = options.provider ?? "effect-ai"
    return LanguageModel.of({
      provider,
      streamTurn: (history, turnOptions) =>
        turnOptions.output !== undefined
          ? Stream.fail(
            new AiError.InvalidRequest({ provider, message: "Structured output is not streamed by effect/ai models" })
          )
          : Stream.suspend(() => {
            const prompt = EffectAiPrompt.fromHistory(history, turnOptions.instructions)
            if (Result.isFailure(prompt)) return Stream.fail(prompt.failure)
            const decoder = EffectAiResponse.makeStreamDecoder()
            const toolkit = AiToolkit.make(...(turnOptions.tools ?? []).map((tool) =>
              AiTool.dynamic(tool.name, { description: tool.description, parameters: tool.parameters })
            ))
            return model.streamText({
              prompt: prompt.success,
              toolkit,
              toolChoice: EffectAiPrompt.fromToolChoice(turnOptions.toolChoice),
              disableToolCallResolution: true
            }).pipe(
              Stream.mapError((error) =>
                EffectAiError.toAiError(error, provider)
              ),
              Stream.flatMap((part) => Stream.fromIterable(decoder.decode(part))),
              Stream.concat(Stream.suspend(() =>
                decoder.completed()
                  ? Stream.empty
                  : Stream.fail(
                    new AiError.IncompleteTurn({ message: `${provider}: the stream ended without a finish` })
                  )
              ))
            )
          })
    })
  }))
