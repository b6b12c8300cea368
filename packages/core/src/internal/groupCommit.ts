/**
 * Appends to one log, in order, grouped: an append that comes while another
 * is being written waits for it, then is written together with every other
 * append that waited (one write, one sync). Parallel tool calls that end in
 * the same tick cost one write between them, and never interleave.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import type { AppendOptions } from "../CheckpointStore.ts"

interface Pending<E> {
  readonly entries: ReadonlyArray<string>
  readonly durable: boolean
  readonly finished: boolean
  readonly compact: boolean
  readonly done: Deferred.Deferred<void, E>
}

/**
 * What a group's write is told besides its entries: whether it must be
 * durable (any of its appends asked to be, or one compacts), whether its
 * entries replace the log (an append of it compacts: the entries given are
 * then those of the last such append and of the appends after it, as what
 * came before is superseded), and, when its last append finished the run, how
 * many of the last entries that append wrote (the run's result).
 */
export interface Group {
  readonly durable: boolean
  readonly compact: boolean
  readonly finished: number | undefined
}

/**
 * Appends to one log, in the order they are queued.
 */
export interface Queue<E> {
  /**
   * Queues `entries` at once, after every append queued before it (nothing
   * queued later is written before them), and answers the effect that writes
   * them, with whatever else is queued by then, and waits for them. Queued
   * entries are written by the next group even when that effect is not run.
   * A caller whose entries depend on the ones queued before them (a change
   * against them) builds them and queues them in one synchronous step: nothing
   * else can queue in between.
   */
  readonly push: (entries: ReadonlyArray<string>, options?: AppendOptions) => Effect.Effect<void, E>
}

/**
 * The queue of a log whose one write of a group is `write`. After a write
 * fails, every later append fails with the same error: what reached the store
 * is unknown, and the log is read again by the next execution.
 */
export const queue = <E>(
  write: (entries: ReadonlyArray<string>, group: Group) => Effect.Effect<void, E>
): Queue<E> => {
  const lock = Semaphore.makeUnsafe(1)
  let pending: Array<Pending<E>> = []
  let broken: E | undefined
  const flush = Effect.suspend(() => {
    const group = pending
    pending = []
    if (group.length === 0) return Effect.void
    if (broken !== undefined) {
      return Effect.forEach(group, (item) => Deferred.fail(item.done, broken!), { discard: true })
    }
    const last = group[group.length - 1]!
    const compacting = group.findLastIndex((item) => item.compact)
    const written = compacting === -1 ? group : group.slice(compacting)
    return write(written.flatMap((item) => item.entries), {
      durable: compacting !== -1 || group.some((item) => item.durable),
      compact: compacting !== -1,
      finished: last.finished ? last.entries.length : undefined
    }).pipe(
      Effect.exit,
      Effect.flatMap((exit) => {
        if (exit._tag === "Failure") {
          const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
          if (failure !== undefined) broken = failure.error
        }
        return Effect.forEach(group, (item) => Deferred.done(item.done, exit), { discard: true })
      })
    )
  })
  return {
    push: (entries, options) => {
      if (entries.length === 0) return Effect.void
      const done = Deferred.makeUnsafe<void, E>()
      pending.push({
        entries,
        durable: options?.durable ?? true,
        finished: options?.finished ?? false,
        compact: options?.compact ?? false,
        done
      })
      return Effect.uninterruptible(Effect.andThen(lock.withPermits(1)(flush), Deferred.await(done)))
    }
  }
}

/**
 * The append of a log whose one write of a group is `write` (see
 * {@link queue}): its entries are queued when the append runs.
 */
export const make = <E>(
  write: (entries: ReadonlyArray<string>, group: Group) => Effect.Effect<void, E>
): (entries: ReadonlyArray<string>, options?: AppendOptions) => Effect.Effect<void, E> => {
  const appends = queue(write)
  return (entries, options) => Effect.uninterruptible(Effect.suspend(() => appends.push(entries, options)))
}
