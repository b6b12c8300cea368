/**
 * The model service: one streaming turn per call.
 *
 * Agent code asks `LanguageModel` for turns and never names a provider; the
 * provider is whatever `Layer` the application provides (`@agentloop/responses`,
 * `@agentloop/gemini`, `@agentloop/anthropic`, several of them tried in order
 * with {@link fallback}, or `MockLanguageModel` from `@agentloop/testing`).
 *
 * @since 0.1.0
 */
import * as Arr from "effect/Array"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ExecutionPlan from "effect/ExecutionPlan"
import type * as JsonSchema from "effect/JsonSchema"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as AiError from "./AiError.ts"
import type * as Item from "./Item.ts"
import type { TurnDelta } from "./TurnDelta.ts"

/**
 * Sampling and length parameters; a provider ignores the ones it does not support.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ModelParams = Schema.Struct({
  temperature: Schema.optionalKey(Schema.Number),
  topP: Schema.optionalKey(Schema.Number),
  maxOutputTokens: Schema.optionalKey(Schema.Number),
  stopSequences: Schema.optionalKey(Schema.Array(Schema.String)),
  reasoningEffort: Schema.optionalKey(Schema.Literals(["minimal", "low", "medium", "high"]))
})
export type ModelParams = typeof ModelParams.Type

/**
 * A tool as the model sees it: a name, a description and the JSON Schema of its arguments.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolDefinition {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema.JsonSchema
}

/**
 * Which tools the model may or must call.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolChoice = "auto" | "none" | "required" | { readonly name: string }

/**
 * Structured output: the model must answer with JSON matching `schema`.
 *
 * @since 0.1.0
 * @category models
 */
export interface OutputFormat {
  readonly name: string
  readonly schema: JsonSchema.JsonSchema
}

/**
 * Everything about a request except the history.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnOptions {
  /** The model to ask; a provider layer has its own default. */
  readonly model?: string | undefined
  readonly instructions?: string | undefined
  readonly tools?: ReadonlyArray<ToolDefinition> | undefined
  readonly toolChoice?: ToolChoice | undefined
  readonly output?: OutputFormat | undefined
  readonly params?: ModelParams | undefined
}

/**
 * Streams model turns. The stream ends with exactly one `turn_complete`; it is
 * lazy, so nothing is sent until it is pulled, and interrupting it aborts the request.
 *
 * @since 0.1.0
 * @category services
 */
export class LanguageModel extends Context.Service<LanguageModel, {
  readonly provider: string
  streamTurn(history: ReadonlyArray<Item.Item>, options: TurnOptions): Stream.Stream<TurnDelta, AiError.AiError>
}>()("@agentloop/core/LanguageModel") {}

/**
 * One model of a {@link fallback}: the layer that provides it, the model to
 * ask of it, how often to try it, and which errors move on from it.
 *
 * @since 0.2.0
 * @category fallback
 */
export interface FallbackStep<E = never, R = never> {
  readonly layer: Layer.Layer<LanguageModel, E, R>
  /**
   * The model this step asks for, instead of the turn's `options.model`
   * (which names another provider's model as often as not). Without it, the
   * turn's model is asked for, or the layer's own default.
   */
  readonly model?: string | undefined
  /** How many times this step is tried before the next one; default 1. Each try runs the provider's own retries. */
  readonly attempts?: number | undefined
  /**
   * The errors that move on: another try of this step while it has attempts
   * left, else the next step. Any other error ends the turn. Default
   * `AiError.isProviderFailure`: `Unavailable`, `RateLimited`,
   * `QuotaExceeded`, `Timeout` and `AuthFailed`.
   */
  readonly moveOn?: ((error: AiError.AiError) => boolean) | undefined
}

type StepError<S> = S extends FallbackStep<infer E, infer _R> ? E : never
type StepServices<S> = S extends FallbackStep<infer _E, infer R> ? R : never

/**
 * A `LanguageModel` that asks the models of `steps` in order, on Effect's
 * `ExecutionPlan`: a turn goes to the first; when it fails with an error that
 * moves on (see {@link FallbackStep.moveOn}) before its first delta, the same
 * step is tried again while it has attempts left, then the next step, and so
 * on; the last step's error ends the turn when every step failed.
 *
 * A turn falls back only before its first delta: a delta that reached the
 * consumer is never replayed, so a failure after one ends the turn as it
 * would without a fallback. The completed turn names the provider that
 * answered (`Turn.provider`) and its model (`Turn.model`, the step's `model`
 * when the provider reports none), so its cost is priced for the model that
 * answered; the turn's span says so too (`gen_ai.provider.name` and
 * `gen_ai.response.model` from the turn, `gen_ai.request.model` of the last
 * attempt), with a `gen_ai.fallback` event for each failed attempt (its
 * provider, step, attempt and `error.type`). Each step's layer is built once, with the fallback's.
 *
 * @since 0.2.0
 * @category fallback
 * @example
 * ```ts
 * import { AiError, Item, LanguageModel, Turn } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Stream } from "effect"
 *
 * const scripted = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
 *   Layer.effect(LanguageModel.LanguageModel, Effect.map(MockLanguageModel.make(script), ({ model }) => model))
 * const down = scripted([new AiError.Unavailable({ provider: "mock", status: 529, message: "Overloaded" })])
 * const up = scripted([MockLanguageModel.textTurn("Hi!")])
 *
 * const program = Effect.gen(function*() {
 *   const model = yield* LanguageModel.LanguageModel
 *   const deltas = yield* Stream.runCollect(model.streamTurn([Item.userMessage("Hello")], {}))
 *   const last = deltas.at(-1)
 *   if (last?.type === "turn_complete") console.log(Turn.text(last.turn), last.turn.model) // Hi! backup-model
 * })
 * Effect.runPromise(program.pipe(Effect.provide(LanguageModel.fallback(
 *   { layer: down },
 *   { layer: up, model: "backup-model" }
 * ))))
 * ```
 */
export const fallback = <const Steps extends Arr.NonEmptyReadonlyArray<FallbackStep<unknown, unknown>>>(
  ...steps: Steps
): Layer.Layer<LanguageModel, StepError<Steps[number]>, StepServices<Steps[number]>> =>
  // Each step's layer fails with, and needs, a member of the unions: the steps are steps of the unions.
  fallbackOf(steps as Arr.NonEmptyReadonlyArray<FallbackStep<StepError<Steps[number]>, StepServices<Steps[number]>>>)

const fallbackOf = <E, R>(list: Arr.NonEmptyReadonlyArray<FallbackStep<E, R>>): Layer.Layer<LanguageModel, E, R> =>
  Layer.effect(
    LanguageModel,
    Effect.gen(function*() {
      const models: Array<LanguageModel["Service"]> = []
      for (const step of list) models.push(Context.get(yield* Layer.build(step.layer), LanguageModel))
      const streamTurn = (
        history: ReadonlyArray<Item.Item>,
        options: TurnOptions
      ): Stream.Stream<TurnDelta, AiError.AiError> => {
        // Errors that must not move on: any after a delta, and those a step does not move on from.
        const settled = new WeakSet<AiError.AiError>()
        const plan = ExecutionPlan.make(...Arr.map(list, (step, i) => ({
          provide: Context.make(LanguageModel, models[i]!),
          attempts: step.attempts,
          while: (error: AiError.AiError) => !settled.has(error)
        })))
        const attempt = Stream.unwrap(Effect.gen(function*() {
          const { stepIndex } = yield* ExecutionPlan.CurrentMetadata
          const step = list[stepIndex]!
          const model = yield* LanguageModel
          const moveOn = step.moveOn ?? AiError.isProviderFailure
          const request = step.model === undefined ? options : { ...options, model: step.model }
          if (request.model !== undefined) yield* Effect.annotateCurrentSpan("gen_ai.request.model", request.model)
          let emitted = false
          return model.streamTurn(history, request).pipe(
            Stream.map((delta): TurnDelta => {
              emitted = true
              if (delta.type !== "turn_complete") return delta
              const answered = delta.turn.model ?? step.model
              return {
                type: "turn_complete",
                turn: {
                  ...delta.turn,
                  provider: delta.turn.provider ?? model.provider,
                  ...(answered === undefined ? {} : { model: answered })
                }
              }
            }),
            Stream.tapError((error) =>
              Effect.sync(() => {
                if (emitted || !moveOn(error)) settled.add(error)
              })
            )
          )
        }))
        return attempt.pipe(
          Stream.withExecutionPlan(plan, { onEvent: recordAttempt(models) })
        )
      }
      return LanguageModel.of({ provider: models[0]!.provider, streamTurn })
    })
  )

/** Records a failed attempt of a fallback as an event on the current span. */
const recordAttempt = (models: ReadonlyArray<LanguageModel["Service"]>) =>
(
  event: ExecutionPlan.Event<AiError.AiError>
): Effect.Effect<void> =>
  event._tag !== "AttemptFailure" ?
    Effect.void :
    Effect.flatMap(Effect.option(Effect.currentSpan), (span) =>
      Effect.flatMap(
        Effect.clockWith((clock) => clock.currentTimeNanos),
        (now) =>
          Effect.sync(() => {
            if (span._tag === "None") return
            const error = event.cause.reasons.find((reason) => reason._tag === "Fail")
            span.value.event("gen_ai.fallback", now, {
              "agentloop.fallback.provider": models[event.stepIndex]?.provider,
              "agentloop.fallback.step": event.stepIndex,
              "agentloop.fallback.attempt": event.stepAttempt,
              "error.type": error?._tag === "Fail" ? error.error._tag : "defect"
            })
          })
      ))
