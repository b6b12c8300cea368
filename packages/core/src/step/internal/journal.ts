/**
 * What a recorded execution streamed since its ledger's last entry: the
 * marks the next entry is written with (see `marks.ts`), and where the events
 * its entries stand for were streamed.
 *
 * An entry's event (a step's `Completed`, an `llm` step's `TurnCompleted`, a
 * call's `ToolResult`) is streamed right after its entry is written, and
 * replays right after it; but when other events came between the two (paths
 * of a fork, calls of a turn, ending at once), a reference among the next
 * entry's marks says where it was streamed, so that it replays there, and
 * when it never reached the stream (its step was interrupted once the entry
 * was written: a fork path that lost), a reference says so, and it does not
 * replay.
 *
 * @internal
 */
import type * as StepEvent from "../StepEvent.ts"
import * as Marks from "./marks.ts"

/**
 * How many marks wait for an entry at most: once as many are noted, the
 * ledger writes them in an entry of their own (a step that keeps running
 * without completing, such as an `every` step whose step keeps failing,
 * would otherwise keep them in memory, and lose them all in a crash).
 */
export const pendingBound = 100

/** The events of an execution to write with its ledger's next entry. */
export interface Journal {
  /** Notes an event the execution streams. */
  readonly note: (noted: Marks.Noted) => void
  /** How many marks wait for the next entry. */
  readonly pending: number
  /**
   * Takes the marks of the entry written at `place`: the events noted since
   * the entry before. `stands` is the event the entry stands for, when it is
   * to be streamed: an object the event carries (see {@link carrier}), and its
   * reference.
   */
  readonly take: (
    place: Marks.Place,
    stands?: { readonly by: object; readonly reference: Marks.Reference } | undefined
  ) => ReadonlyArray<Marks.Mark>
  /**
   * Tells that the event an entry stands for is streamed now: a reference to
   * it is noted when events came between.
   */
  readonly placed: (event: StepEvent.StepEvent) => void
  /** Tells that an event {@link Journal.placed} reached the stream. */
  readonly delivered: (event: StepEvent.StepEvent) => void
  /**
   * Tells that the step `key` of `execution` ended: the events its entries
   * stand for that did not reach the stream (it was interrupted, or failed,
   * once they were written) are noted as not streamed, so that they do not
   * replay.
   */
  readonly ended: (execution: string, key: string) => void
}

/** An entry whose event is to be streamed: its reference, its step, and its place in the replay until it is placed. */
interface Standing {
  readonly reference: Marks.Reference
  readonly step: string
  at: number | undefined
}

const stepOf = (execution: string | undefined, key: string) => `${execution}\n${key}`

/** A journal with nothing noted. */
export const make = (): Journal => {
  const pending: Array<Marks.Noted | Marks.Reference> = []
  /** Counts what takes a place in the replay (each note, each entry): where an entry's event was streamed. */
  let sequence = 0
  /** The entries whose event has not reached the stream yet, by the object it carries. */
  const standing = new Map<object, Standing>()
  const noteReference = (reference: Marks.Reference) => {
    pending.push(reference)
    sequence++
  }
  return {
    get pending() {
      return pending.length
    },
    note: (noted) => {
      pending.push(noted)
      sequence++
    },
    take: (place, stands) => {
      const marks = pending.splice(0).map((noted) => Marks.write(noted, place))
      sequence++
      if (stands !== undefined) {
        const { reference } = stands
        standing.set(stands.by, { reference, step: stepOf(reference.execution, reference.key), at: sequence })
      }
      return marks
    },
    placed: (event) => {
      const by = carrier(event)
      const stood = by === undefined ? undefined : standing.get(by)
      if (stood === undefined || stood.at === undefined) return
      const at = stood.at
      stood.at = undefined
      if (at !== sequence) noteReference(stood.reference)
    },
    delivered: (event) => {
      const by = carrier(event)
      if (by !== undefined) standing.delete(by)
    },
    ended: (execution, key) => {
      if (standing.size === 0) return
      const step = stepOf(execution, key)
      for (const [by, stood] of standing) {
        if (stood.step !== step) continue
        standing.delete(by)
        noteReference({ ...stood.reference, unstreamed: true })
      }
    }
  }
}

/**
 * The object that identifies the event an entry stands for, the same one the
 * entry was written with: a step's `Completed` event itself, the turn a
 * `TurnCompleted` carries, the call a `ToolResult` carries; none for another
 * event.
 */
export const carrier = (event: StepEvent.StepEvent): object | undefined => {
  if (event._tag === "Completed") return event
  if (event._tag !== "Turn") return undefined
  const turnEvent = event.event
  return turnEvent._tag === "TurnCompleted"
    ? turnEvent.turn
    : turnEvent._tag === "ToolResult"
    ? turnEvent.call
    : undefined
}
