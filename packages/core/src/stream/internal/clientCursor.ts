/**
 * What one client of a resumable run has (its cursor), and what it lacks of
 * the events it is handed: a recorded event it has not is sent with its SSE
 * id (the cursor advanced past it), one it has is not sent again, and an
 * event the log does not record is sent without an id.
 *
 * @internal
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import type * as Pull from "effect/Pull"
import * as Stream from "effect/Stream"
import * as RunCursor from "../RunCursor.ts"

/** An event of a run, with its key when the run's log records it. */
export interface Keyed<A> {
  readonly key: RunCursor.Key | undefined
  readonly event: A
}

/** An event as a client is sent it, with its SSE id when the run's log records it. */
export interface Sent<A> {
  readonly id: string | undefined
  readonly event: A
}

/** A client's cursor, from `after` (what its `Last-Event-ID` names; nothing when undefined). */
export const make = <A>(after: RunCursor.Cursor | undefined) => {
  let cursor = after
  const send = ({ event, key }: Keyed<A>): ReadonlyArray<Sent<A>> => {
    if (key === undefined) return [{ id: undefined, event }]
    if (RunCursor.covers(cursor, key)) return []
    cursor = RunCursor.advance(cursor, key)
    return [{ id: RunCursor.eventId(cursor), event }]
  }
  /** What the client lacks of `events`, in order. */
  const lacks = (events: ReadonlyArray<Keyed<A>>): Array<Sent<A>> => events.flatMap(send)
  return {
    lacks,
    /** What the client lacks of a stream of events, a chunk (the model's deltas of a network read) at a time. */
    lacking: <E, R>(events: Stream.Stream<Keyed<A>, E, R>): Stream.Stream<Sent<A>, E, R> =>
      Stream.transformPull(events, (pull) =>
        Effect.sync(() => {
          const next: Pull.Pull<Arr.NonEmptyReadonlyArray<Sent<A>>, E, void> = Effect.flatMap(pull, (chunk) => {
            const sent = lacks(chunk)
            return Arr.isArrayNonEmpty(sent) ? Effect.succeed(sent) : next
          })
          return next
        }))
  }
}
