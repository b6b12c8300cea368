/**
 * What a recorded step program replays when it is streamed again: for each
 * entry of its ledger, in order, the events the program streamed before the
 * entry was written (its marks), then the event the entry itself stands for
 * (a step's `Completed`, an `llm` step's `TurnCompleted`, a call's
 * `ToolResult`), each as the program streamed it. Entries written before
 * 0.3.0 carry neither, and replay nothing.
 *
 * An execution that goes on after its replay streams the events it makes
 * again (a loop runs its recorded iterations again and asks its predicate, a
 * step cut off starts again): those the replay streamed already are the
 * {@link Replay.awaited} ones, and are not streamed or recorded twice.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import type { Accounting } from "../../Accounting.ts"
import * as AgentCheckpoint from "../../agent/AgentCheckpoint.ts"
import * as Cost from "../../Cost.ts"
import type * as Item from "../../Item.ts"
import * as TokenUsage from "../../TokenUsage.ts"
import type * as Turn from "../../Turn.ts"
import type * as StepEvent from "../StepEvent.ts"
import type * as Entries from "./entries.ts"
import * as Marks from "./marks.ts"

/** How many of the last items a `TurnCompleted` event's accounting carries. */
const lastItemsKept = 10

/** The last items of a history that the accounting of a `TurnCompleted` event carries. */
export const lastItems = (history: ReadonlyArray<Item.Item>): ReadonlyArray<Item.Item> => history.slice(-lastItemsKept)

/**
 * An execution's item log and books as the entries up to one of its turns
 * wrote them (its last context written, none before its first): what the
 * turn's record is told against.
 */
export interface Before {
  readonly items: ReadonlyArray<Item.Item>
  readonly tokens: TokenUsage.TokenUsage
  readonly cost: Cost.Cost
}

/** An execution's item log and books before any entry of it: what it starts with. */
export const nothingBefore: Before = { items: [], tokens: TokenUsage.empty, cost: Cost.zero }

/** An answered turn: the turn, its cost, and its number. */
export interface NumberedTurn {
  readonly turn: Turn.Turn
  readonly cost: Cost.Cost
  readonly step: number
}

const sameUsage = Schema.toEquivalence(TokenUsage.TokenUsage)

/**
 * What a streamed `TurnCompleted` of `answered` records of its `accounting`:
 * only what the execution's books and item log written before (`before`),
 * the turn and the item log it was asked with (`logged`) do not say.
 */
export const recordedAccounting = (
  before: Before,
  answered: NumberedTurn,
  accounting: Accounting,
  logged: ReadonlyArray<Item.Item>
): Entries.TurnCompleted => {
  const change = asked(before.items, logged, answered.turn)
  const unchanged = change.append.length === 0 && change.keep === before.items.length
  return {
    elapsedMs: accounting.elapsedMs,
    ...(sameUsage(TokenUsage.add(before.tokens, answered.turn.usage), accounting.usage)
      ? {}
      : { usage: accounting.usage }),
    ...(Cost.add(before.cost, answered.cost) === accounting.cost ? {} : { cost: accounting.cost }),
    ...(accounting.steps === answered.step ? {} : { steps: accounting.steps }),
    ...(!derivable(logged, answered.turn, accounting.lastItems)
      ? { lastItems: accounting.lastItems }
      : unchanged
      ? {}
      : { asked: change })
  }
}

/** The accounting a `TurnCompleted` of `answered` carried, as {@link recordedAccounting} recorded it against `before`. */
export const accountingOf = (
  before: Before,
  answered: NumberedTurn,
  recorded: Entries.TurnCompleted
): Accounting => {
  const asked = recorded.asked === undefined ? before.items : AgentCheckpoint.apply(before.items, recorded.asked)
  return {
    usage: recorded.usage ?? TokenUsage.add(before.tokens, answered.turn.usage),
    cost: recorded.cost === undefined ? Cost.add(before.cost, answered.cost) : recorded.cost,
    elapsedMs: recorded.elapsedMs,
    steps: recorded.steps ?? answered.step,
    lastItems: recorded.lastItems ?? lastItems([...asked, ...answered.turn.items])
  }
}

/** A ledger's replay, folded entry by entry. */
export interface Replay {
  /**
   * Adds the events of the next entry; `contexts` is each execution's item log
   * and books as the entries up to this one left them. Answers why a mark
   * cannot be read, if one cannot.
   */
  readonly add: (entry: Entries.Entry, contexts: ReadonlyMap<string, Before>) => string | undefined
  /** The events replayed, in order (none when the fold keeps only the awaited ones). */
  readonly events: () => ReadonlyArray<StepEvent.StepEvent>
  /**
   * The identities (see `Marks.identity`) of the replayed events the
   * execution may stream again as it goes on: those of the steps that did not
   * complete.
   */
  readonly awaited: () => Set<string>
}

/**
 * A fold of program `program`'s ledger into the events it replays; with
 * `streamed: false`, only into the identities it awaits (an execution that
 * streams nothing still records each event once).
 */
export const make = (program: string, streamed: boolean): Replay => {
  /** The events so far; an entry's event that a reference moved later leaves a hole. */
  const events: Array<StepEvent.StepEvent | undefined> = []
  /** Where the event each entry stands for is in `events`, by its slot (see `Marks.slotOf`). */
  const slots = new Map<string, number>()
  /** Each mark's identity, and the step it tells about (its execution and key). */
  const noted = new Map<string, string>()
  const completed = new Set<string>()
  /** The number of each `llm` step's answered turn, by execution and key. */
  const turns = new Map<string, number>()
  const step = (execution: string, key: string) => `${execution}\n${key}`
  const header = (execution: string, key: string, kind: StepEvent.Kind) => ({
    stepId: Marks.stepIdOf(key),
    kind,
    contextId: execution
  })
  /** The event an entry stands for, in its place: right after the entry, unless a reference moves it. */
  const stands = (reference: Marks.Reference, at: Marks.Place, event: StepEvent.StepEvent) => {
    slots.set(Marks.slotOf(reference, at), events.length)
    events.push(event)
  }
  /** The event of `reference`'s entry, where the reference says it was streamed: later, or nowhere. */
  const moved = (reference: Marks.Reference, at: Marks.Place) => {
    const slot = Marks.slotOf(reference, at)
    const index = slots.get(slot)
    if (index === undefined) return
    if (reference.unstreamed === true) {
      slots.delete(slot)
    } else {
      slots.set(slot, events.length)
      events.push(events[index])
    }
    events[index] = undefined
  }

  const add: Replay["add"] = (entry, contexts) => {
    const at = entry._tag === "Finished" || entry._tag === "Streamed"
      ? { execution: program }
      : { execution: entry.execution, key: entry.key }
    for (const mark of entry.events ?? []) {
      const read = Marks.read(mark, at)
      if (read === undefined) {
        return `an entry of no step holds a mark of the entry's own step (${JSON.stringify(mark)})`
      }
      if ("ref" in read) {
        if (streamed) moved(read, at)
        continue
      }
      noted.set(Marks.identity(read.event, read.key), step(read.event.contextId, read.key))
      if (streamed) events.push(read.event)
    }
    if (!streamed) {
      if (entry._tag === "Completed") completed.add(step(entry.execution, entry.key))
      return undefined
    }
    switch (entry._tag) {
      case "Completed": {
        completed.add(step(entry.execution, entry.key))
        if (entry.kind === undefined) return undefined
        const withMeta = entry.kind === "llm" || entry.kind === "tool"
        const meta = entry.meta ?? (withMeta ? entry.context.lastStepMeta ?? undefined : undefined)
        stands({ ref: "Completed", key: entry.key }, at, {
          _tag: "Completed",
          ...header(entry.execution, entry.key, entry.kind),
          output: entry.output,
          ...(meta === undefined ? {} : { meta })
        })
        return undefined
      }
      case "Answered": {
        if (entry.step !== undefined) turns.set(step(entry.execution, entry.key), entry.step)
        const recorded = entry.turnCompleted
        if (entry.step === undefined || recorded === undefined) return undefined
        const answered = { turn: entry.turn, cost: entry.cost, step: entry.step }
        stands({ ref: "TurnCompleted", key: entry.key }, at, {
          _tag: "Turn",
          ...header(entry.execution, entry.key, "llm"),
          event: {
            _tag: "TurnCompleted",
            ...answered,
            accounting: accountingOf(contexts.get(entry.execution) ?? nothingBefore, answered, recorded)
          }
        })
        return undefined
      }
      case "ToolDone": {
        const turn = turns.get(step(entry.execution, entry.key))
        if (turn === undefined || entry.hidden === true) return undefined
        const { version: _, ...record } = entry.record
        stands({ ref: "ToolResult", key: entry.key, index: entry.index }, at, {
          _tag: "Turn",
          ...header(entry.execution, entry.key, "llm"),
          event: { _tag: "ToolResult", step: turn, ...record }
        })
        return undefined
      }
      case "Saved":
      case "ToolStarted":
      case "Finished":
      case "Streamed":
        return undefined
    }
  }

  return {
    add,
    events: () => events.filter((event) => event !== undefined),
    awaited: () => {
      const awaited = new Set<string>()
      for (const [identity, of] of noted) if (!completed.has(of)) awaited.add(identity)
      return awaited
    }
  }
}

/**
 * The item log `logged` a turn was asked with, as its entry records it: the
 * change from `base` (the log its execution's entry before wrote), or, when
 * that appends more items than the turn's last items show (the first turn
 * after a long input, say), only those: no entry holds the log twice.
 */
const asked = (
  base: ReadonlyArray<Item.Item>,
  logged: ReadonlyArray<Item.Item>,
  turn: Turn.Turn
): AgentCheckpoint.HistoryChange => {
  const shown = Math.max(0, lastItemsKept - turn.items.length)
  const change = AgentCheckpoint.change(base, logged)
  return change.append.length <= shown ? change : { keep: 0, append: logged.slice(logged.length - shown) }
}

/** Whether a turn's last items are those of `logged` followed by its own: what a `TurnCompleted` replays without them. */
const derivable = (
  logged: ReadonlyArray<Item.Item>,
  turn: Turn.Turn,
  items: ReadonlyArray<Item.Item>
): boolean => {
  const derived = lastItems([...logged, ...turn.items])
  return derived.length === items.length && derived.every((item, i) => item === items[i])
}
