/**
 * The stop predicate a run uses when it is given none.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Until from "./Until.ts"

/**
 * The default `Until` of every run that does not pass its own. Without a layer it
 * is `Until.noToolCalls()`: a run ends when the model answers without calling a
 * tool (caps on turns and budget are the run's limits, not its stop policy).
 *
 * @since 0.1.0
 * @category services
 */
export const StopPolicy = Context.Reference<Until.Until<unknown>>("@agentloop/core/StopPolicy", {
  defaultValue: () => Until.noToolCalls()
})

/**
 * Sets the default predicate for every run under this layer. The services the
 * predicate needs are taken when the layer is built, so runs need not provide them.
 * A predicate that cannot work (see `Until.invalid`) stays one: runs refuse it.
 *
 * @example
 * ```ts
 * import { AgentLoop, StopPolicy, Until } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   // A run that names no `until` stops where the application's policy says.
 *   const result = yield* agent.run({ input: "Write the word DONE when finished" })
 *   if (result._tag === "Stopped") console.log(result.output) // Finished. DONE
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.textTurn("Finished. DONE")])
 * const policy = StopPolicy.layer(Until.any(Until.outputContains("DONE"), Until.maxSteps(5)))
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(Layer.merge(model, policy))))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E, R>(until: Until.Until<E, R>): Layer.Layer<never, never, R> =>
  Layer.effect(StopPolicy)(
    Effect.map(
      Effect.context<R>(),
      (context): Until.Until<unknown> => {
        const error = Until.invalid(until)
        if (error !== undefined) return Until.refused(error)
        return (snapshot) => Effect.provideContext(Until.toEffect(until, snapshot), context)
      }
    )
  )
