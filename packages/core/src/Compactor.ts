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

/** Shortens a history that does not fit the model's context window. */
export interface Service {
  readonly compact: (history: ReadonlyArray<Item.Item>) => Effect.Effect<ReadonlyArray<Item.Item>, CompactionError>
}

/**
 * Drops the oldest half (rounded up) of the tool calls that have an output,
 * each together with its output, so the model never sees a call without its
 * result or a result without its call. Messages and reasoning stay. Fails when
 * there is no completed call left to drop.
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

/** The compactor in context; {@link dropOldestToolOutputs} unless a layer says otherwise. */
export const Compactor: Context.Reference<Service> = Context.Reference<Service>("@agentloop/core/Compactor", {
  defaultValue: () => dropOldestToolOutputs
})

/** Provides a compactor. */
export const layer = (compact: Service["compact"]): Layer.Layer<never> => Layer.succeed(Compactor, { compact })
