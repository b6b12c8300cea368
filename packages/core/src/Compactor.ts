/**
 * Reactive compaction: what an agent does when its history no longer fits the
 * model's context window.
 *
 * The agent loop asks the `Compactor` in context once, when a request fails with
 * `AiError.ContextLengthExceeded`, and retries the request with the shorter
 * history. The default drops the oldest half of the tool calls together with
 * their outputs; an application can provide a summarising compactor by `Layer`.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { ContextLengthExceeded } from "./AiError.ts"
import type * as Item from "./Item.ts"

/**
 * The compactor could not make the history shorter. A compactor fails with
 * its `message`; an agent turn that asked for the compaction fails with the
 * same error, `overflow` set to the provider's error that asked for it.
 *
 * @since 0.1.0
 * @category errors
 */
export class CompactionError extends Schema.TaggedError<CompactionError>()("CompactionError", {
  message: Schema.String,
  overflow: Schema.optionalKey(ContextLengthExceeded)
}) {}

/**
 * Shortens a history that does not fit the model's context window.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly compact: (history: ReadonlyArray<Item.Item>) => Effect.Effect<ReadonlyArray<Item.Item>, CompactionError>
}

/**
 * Drops the oldest half (rounded up) of the tool calls that have an output,
 * each together with its output, so the model never sees a call without its
 * result or a result without its call. Messages and reasoning stay. Fails when
 * there is no completed call left to drop.
 *
 * @example
 * ```ts
 * import { Compactor, Item } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * const call = (id: string): Item.FunctionCall => ({
 *   type: "function_call",
 *   id: `fc_${id}`,
 *   status: "completed",
 *   call_id: id,
 *   name: "search",
 *   arguments: "{}"
 * })
 * const output = (id: string): Item.FunctionCallOutput => ({
 *   type: "function_call_output",
 *   id: `out_${id}`,
 *   status: "completed",
 *   call_id: id,
 *   output: "a long page of results"
 * })
 *
 * const history = [Item.userMessage("Research this"), call("1"), output("1"), call("2"), output("2")]
 * // The oldest call goes with its output; the task stays.
 * Effect.runPromise(Compactor.dropOldestToolOutputs.compact(history)).then((kept) =>
 *   console.log(kept.map((item) => item.type)) // [ 'message', 'function_call', 'function_call_output' ]
 * )
 * ```
 *
 * @since 0.1.0
 * @category compactors
 */
export const dropOldestToolOutputs: Service = {
  compact: (history) =>
    Effect.suspend(() => {
      const answered = new Set<string>()
      for (const item of history) if (item.type === "function_call_output") answered.add(item.call_id)
      const pairs: Array<string> = []
      for (const item of history) {
        if (item.type === "function_call" && answered.has(item.call_id)) pairs.push(item.call_id)
      }
      if (pairs.length === 0) {
        return Effect.fail(new CompactionError({ message: "no tool call with an output is left to drop" }))
      }
      const dropped = new Set(pairs.slice(0, Math.ceil(pairs.length / 2)))
      return Effect.succeed(history.filter((item) =>
        !((item.type === "function_call" || item.type === "function_call_output") && dropped.has(item.call_id))
      ))
    })
}

/**
 * The compactor in context; {@link dropOldestToolOutputs} unless a layer says otherwise.
 *
 * @since 0.1.0
 * @category services
 */
export const Compactor: Context.Reference<Service> = Context.Reference<Service>("@agentloop/core/Compactor", {
  defaultValue: () => dropOldestToolOutputs
})

/**
 * Provides a compactor.
 *
 * @example
 * ```ts
 * import { Compactor, Item } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // Keep the first message (the task) and the last ten items when a history does not fit.
 * const keepRecent = Compactor.layer((history) =>
 *   Effect.succeed(history.length <= 11 ? history : [history[0]!, ...history.slice(-10)])
 * )
 *
 * const program = Effect.gen(function*() {
 *   const compactor = yield* Compactor.Compactor
 *   const history = Array.from({ length: 30 }, (_, i) => Item.userMessage(`message ${i}`))
 *   console.log((yield* compactor.compact(history)).length) // 11
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(keepRecent)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (compact: Service["compact"]): Layer.Layer<never> => Layer.succeed(Compactor, { compact })
