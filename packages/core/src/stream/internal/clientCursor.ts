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
import type * as AgentEvent from "../../agent/AgentEvent.ts"
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

/**
 * A client's cursor, from `after` (what its `Last-Event-ID` names; nothing
 * when undefined), advanced over the recorded events it is handed: a
 * client's, or a run's frontier (what a client that has all of it has).
 */
export const make = <A>(after: RunCursor.Cursor | undefined) => {
  let cursor = after
  /** Takes the event of `key` in: whether the cursor lacked it (and is advanced past it). */
  const take = (key: RunCursor.Key): boolean => {
    if (RunCursor.covers(cursor, key)) return false
    cursor = RunCursor.advance(cursor, key)
    return true
  }
  const send = ({ event, key }: Keyed<A>): ReadonlyArray<Sent<A>> =>
    key === undefined ? [{ id: undefined, event }] : take(key) ? [{ id: RunCursor.eventId(cursor!), event }] : []
  /** What the client lacks of `events`, in order. */
  const lacks = (events: ReadonlyArray<Keyed<A>>): Array<Sent<A>> => events.flatMap(send)
  return {
    /** What the client has. */
    cursor: () => cursor,
    take,
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

/**
 * `events` of one run, in the order it streams (or replays) them, each with its key (see `RunCursor.keys`): by
 * `keyOf`, which keyed the events before them, when they go on from those.
 */
export const keyed = <A extends AgentEvent.AgentEvent<unknown>>(
  events: ReadonlyArray<A>,
  keyOf = RunCursor.keys()
): Array<Keyed<A>> => events.map((event) => ({ key: keyOf(event), event }))
