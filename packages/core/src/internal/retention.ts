/**
 * What every store's `prune` shares: its options checked and made concrete
 * (the time before which a run must have finished, what is kept), and the
 * record of a finished run (when it finished, how many of its last entries are
 * its result).
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { PruneOptions } from "../CheckpointStore.ts"
import * as InvalidOptions from "../InvalidOptions.ts"

/** Prune options, checked: runs finished before `before` (epoch milliseconds), and what is kept of them. */
export interface Cutoff {
  readonly before: number
  readonly keep: "nothing" | "result"
}

const finishedBefore: InvalidOptions.Rule = {
  expected: `a Date, or ${InvalidOptions.duration.expected}`,
  test: (value) =>
    value instanceof Date ? !Number.isNaN(value.getTime()) : value !== undefined && InvalidOptions.duration.test(value)
}

const keep = InvalidOptions.oneOf(["nothing", "result"])

/** Checks `options` (failing with `InvalidOptions` on the first field that cannot work), by the clock in context. */
export const cutoff = (options: PruneOptions): Effect.Effect<Cutoff, InvalidOptions.InvalidOptions> =>
  Effect.gen(function*() {
    const given: unknown = options?.finishedBefore
    const refused = InvalidOptions.first(
      finishedBefore.test(given)
        ? undefined
        : InvalidOptions.make({ field: "finishedBefore", value: given, expected: finishedBefore.expected }),
      InvalidOptions.check("keep", options?.keep, keep)
    )
    if (refused !== undefined) return yield* Effect.fail(refused)
    const before = options.finishedBefore instanceof Date
      ? options.finishedBefore.getTime()
      : (yield* Clock.currentTimeMillis) - Duration.toMillis(Duration.fromInputUnsafe(options.finishedBefore))
    return { before, keep: options.keep ?? "nothing" }
  })

/**
 * A finished run's record: its id, when it finished (epoch milliseconds), and
 * how many of its last entries are its result (the entries of the append that
 * finished it).
 */
const Finished = Schema.Struct({
  id: Schema.String,
  finishedAt: Schema.Number,
  result: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
})

/** A finished run's record as JSON text. */
export const FinishedJson = Schema.fromJsonString(Finished)
