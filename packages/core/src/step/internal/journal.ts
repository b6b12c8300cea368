/**
 * What a recorded execution streamed since its ledger's last entry: the
 * marks the next entry is written with (see `marks.ts`), and where the events
 * its entries stand for were streamed.
 *
 * An entry's event (a step's `Completed`, an `llm` step's `TurnCompleted`, a
 * call's `ToolResult`) is streamed right after its entry is written, and
 * replays right after it; but when other events came between the two (paths
 * of a fork, calls of a turn, ending at once), a reference among the next
 * entry's marks says where it was streamed, so that it replays there.
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
  /** Tells that the event an entry stands for was streamed: a reference to it is noted when events came between. */
  readonly placed: (event: StepEvent.StepEvent) => void
}

/** A journal with nothing noted. */
export const make = (): Journal => {
  const pending: Array<Marks.Noted | Marks.Reference> = []
  /** Counts what takes a place in the replay (each note, each entry): where an entry's event was streamed. */
  let sequence = 0
  /** The entries whose event is to be streamed, by the object it carries: its reference, and the entry's place. */
  const standing = new WeakMap<object, { readonly reference: Marks.Reference; readonly at: number }>()
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
      if (stands !== undefined) standing.set(stands.by, { reference: stands.reference, at: sequence })
      return marks
    },
    placed: (event) => {
      const by = carrier(event)
      const stood = by === undefined ? undefined : standing.get(by)
      if (by === undefined || stood === undefined) return
      standing.delete(by)
      if (stood.at === sequence) return
      pending.push(stood.reference)
      sequence++
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
  const told = event.event
  return told._tag === "TurnCompleted" ? told.turn : told._tag === "ToolResult" ? told.call : undefined
}
