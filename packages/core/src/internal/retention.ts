/**
 * What every store's `prune` shares: its options checked and made concrete
 * (the time before which a finished run must have finished, and one that did
 * not finish must have last ended; what is kept of the finished), the record
 * of a finished run (when it finished, how many of its last entries are its
 * result), and which logs are not runs.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { PruneOptions } from "../CheckpointStore.ts"
import * as InvalidOptions from "../InvalidOptions.ts"

/**
 * Prune options, checked: the finished runs to take (finished before
 * `finished`, epoch milliseconds) and what is kept of them, and the runs that
 * did not finish to forget (whose last execution ended before `unfinished`).
 * An absent time takes none of its kind.
 */
export interface Cutoff {
  readonly finished: number | undefined
  readonly unfinished: number | undefined
  readonly keep: "nothing" | "result"
}

/**
 * The prefix of the ids of the logs that are not runs: a thread's log and the
 * index of threads (`ThreadId.prefix` is this one). They never finish, and no
 * `prune` takes them.
 */
export const threadPrefix = "@agentloop/thread/"

/** Whether the log of `id` is a run's (not a thread's log, nor the index of threads). */
export const isRun = (id: string): boolean => !id.startsWith(threadPrefix)

/**
 * The expiry a lease is given when its holder releases it: minus the time it
 * was released. It has lapsed by every clock (a released lease is free at
 * once, whatever the time of the process that looks, as the 0 written before
 * made it), and it says when the execution ended.
 */
export const releasedExpiry: Effect.Effect<number> = Effect.map(Clock.currentTimeMillis, (now) => -now)

/**
 * When the last execution of a run ended, from the expiry of its newest lease
 * (nobody holds it): when it was released (see {@link releasedExpiry}), or,
 * for a holder that died, when its lease lapsed (its last renewal plus the
 * lease's duration). `undefined` for 0, which a lease released by an earlier
 * version holds: when is not known.
 */
export const endedAt = (expiresAt: number): number | undefined => expiresAt === 0 ? undefined : Math.abs(expiresAt)

const time: InvalidOptions.Rule = {
  expected: `a Date, or ${InvalidOptions.duration.expected}`,
  test: (value) =>
    value instanceof Date ? !Number.isNaN(value.getTime()) : value !== undefined && InvalidOptions.duration.test(value)
}

const keep = InvalidOptions.oneOf(["nothing", "result"])

/** The field `field`, when given and not a time (see {@link time}). */
const checkTime = (field: string, value: unknown): InvalidOptions.InvalidOptions | undefined =>
  value === undefined || time.test(value) ? undefined : InvalidOptions.make({ field, value, expected: time.expected })

/** The time (epoch milliseconds) a `Date` or a duration before `now` is; nothing is before the earliest integer. */
const instant = (value: Date | Duration.Input, now: number): number =>
  Math.max(
    Number.MIN_SAFE_INTEGER,
    value instanceof Date ? value.getTime() : now - Duration.toMillis(Duration.fromInputUnsafe(value))
  )

/** Checks `options` (failing with `InvalidOptions` on the first field that cannot work), by the clock in context. */
export const cutoff = (options: PruneOptions): Effect.Effect<Cutoff, InvalidOptions.InvalidOptions> =>
  Effect.gen(function*() {
    const finished: unknown = options?.finishedBefore
    const unfinished: unknown = options?.unfinishedBefore
    const refused = InvalidOptions.first(
      finished === undefined && unfinished === undefined
        ? InvalidOptions.make({
          field: "finishedBefore",
          value: finished,
          expected: `${time.expected}, when unfinishedBefore is not given`
        })
        : checkTime("finishedBefore", finished),
      checkTime("unfinishedBefore", unfinished),
      InvalidOptions.check("keep", options?.keep, keep),
      finished === undefined && options?.keep !== undefined
        ? InvalidOptions.make({
          field: "keep",
          value: options.keep,
          expected: "given with finishedBefore only (it is what is kept of the finished runs)"
        })
        : undefined
    )
    if (refused !== undefined) return yield* Effect.fail(refused)
    const now = yield* Clock.currentTimeMillis
    return {
      finished: options.finishedBefore === undefined ? undefined : instant(options.finishedBefore, now),
      unfinished: options.unfinishedBefore === undefined ? undefined : instant(options.unfinishedBefore, now),
      keep: options.keep ?? "nothing"
    }
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
