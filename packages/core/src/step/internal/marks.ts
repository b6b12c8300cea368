/**
 * The events of a step program's stream that its ledger records as marks, so
 * that streaming the program again replays them: a step's `Started` and
 * `Failed`, a loop's `Verdict`s and `LoopEnded`, an `every`'s `Recorded`
 * errors, an `llm` step's `AttemptDiscarded` and `Compacted`. The other events
 * are not marks: a step's `Completed`, a turn's `TurnCompleted` and each
 * `ToolResult` are replayed from the entries that record the step, the turn
 * and the call; the model's deltas and the tools' progress are not recorded.
 *
 * An event is noted with its key (the key of the step it tells about, or of a
 * loop's iteration or an `every`'s run) and written with the next entry the
 * ledger writes, as a mark relative to that entry: the `Started` of the
 * entry's own step is its kind alone (`"run"`), another step's `Started` its
 * kind and key (and its execution when it is not the entry's), any other
 * event its key and the event without the step id (its key's) and the
 * context (the entry's execution, unless it says).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import * as StepEvent from "../StepEvent.ts"

/** An event's fields less its step id and context, which a mark's key and place give. */
const headless = <F extends { readonly stepId: unknown; readonly contextId: unknown }>(
  { contextId: _, stepId: __, ...fields }: F
) => fields

/** An event's fields less its step id, context and kind, which its tag gives. */
const kindless = <F extends { readonly stepId: unknown; readonly contextId: unknown; readonly kind: unknown }>(
  { contextId: _, kind: __, stepId: ___, ...fields }: F
) => fields

/** The kind of step each event a mark keeps tells of, when its tag says. */
const kinds = { Turn: "llm", Verdict: "loop", LoopEnded: "loop", Recorded: "every" } as const

/** An event a mark keeps whole, less what its key, its place and its tag give. */
const KeptEvent = Schema.toCodecJson(Schema.Union([
  StepEvent.Failed.mapFields(headless),
  StepEvent.Turn.mapFields(kindless),
  StepEvent.Verdict.mapFields(kindless),
  StepEvent.LoopEnded.mapFields(kindless),
  StepEvent.Recorded.mapFields(kindless)
]))
type KeptEvent = typeof KeptEvent.Type

/**
 * Where the event an entry stands for was streamed, when other events came
 * between the entry and it (paths of a fork, calls of a turn, ending at
 * once): a step's `Completed`, an `llm` step's `TurnCompleted`, or the
 * `ToolResult` of its call `index`; with `unstreamed`, that it never was
 * (its step was interrupted once the entry was written). Without one, it
 * replays right after its entry.
 */
export const Reference = Schema.Struct({
  ref: Schema.Literals(["Completed", "TurnCompleted", "ToolResult"]),
  execution: Schema.optionalKey(Schema.String),
  key: Schema.String,
  index: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  unstreamed: Schema.optionalKey(Schema.Literal(true))
})
export type Reference = typeof Reference.Type

/**
 * A mark as an entry of the ledger writes it.
 */
export const Mark = Schema.Union([
  StepEvent.Kind,
  Schema.Tuple([StepEvent.Kind, Schema.String]),
  Schema.Tuple([StepEvent.Kind, Schema.String, Schema.String]),
  Schema.Struct({ key: Schema.String, execution: Schema.optionalKey(Schema.String), event: KeptEvent }),
  Reference
])
export type Mark = typeof Mark.Type

/** An event a mark may note: any but a step's `Completed`, which the step's own entry replays. */
export type Marked = Exclude<StepEvent.StepEvent, StepEvent.Completed>

/** An event of a program's stream, with the key of the place it tells about. */
export interface Noted {
  readonly event: Marked
  readonly key: string
}

/** Where an entry of the ledger stands: its execution, and its step's key (none for the program's output). */
export interface Place {
  readonly execution: string
  readonly key?: string | undefined
}

/** The step id in a key (`<path>/<id>#<n>`, then `[<part>]` for a loop's iteration or an `every`'s run). */
export const stepIdOf = (key: string): string => key.slice(key.lastIndexOf("/") + 1, key.lastIndexOf("#"))

/**
 * Whether the ledger records `event` as a mark: any but a step's `Completed`,
 * a turn's `TurnCompleted` and `ToolResult` (their entries replay them), and
 * the model's deltas and the tools' progress (not recorded).
 */
export const isMarked = (event: StepEvent.StepEvent): event is Marked =>
  event._tag !== "Completed" &&
  (event._tag !== "Turn" || event.event._tag === "AttemptDiscarded" || event.event._tag === "Compacted")

/**
 * The identity of an event the ledger records as a mark, the same in every
 * execution of the program: its kind, its context, its key, and a loop's
 * iteration.
 */
export const identity = (event: Marked, key: string): string =>
  event._tag === "Verdict"
    ? `Verdict\n${event.contextId}\n${key}\n${event.iteration}`
    : event._tag === "Turn"
    ? `${event.event._tag}\n${event.contextId}\n${key}`
    : `${event._tag}\n${event.contextId}\n${key}`

/** The place of the event an entry stands for, whichever entry it is written with. */
export const slotOf = (reference: Reference, at: Place): string =>
  `${reference.ref}\n${reference.execution ?? at.execution}\n${reference.key}\n${reference.index ?? ""}`

/** A noted event, or the reference to an entry's event, as a mark of the entry written at `at`. */
export const write = (noted: Noted | Reference, at: Place): Mark => {
  if ("ref" in noted) {
    const { execution, ...reference } = noted
    return execution === at.execution ? reference : noted
  }
  const { event, key } = noted
  if (event._tag === "Started") {
    if (event.contextId !== at.execution) return [event.kind, key, event.contextId]
    return key === at.key ? event.kind : [event.kind, key]
  }
  const kept = keptEvent(event)
  return event.contextId === at.execution ? { key, event: kept } : { key, execution: event.contextId, event: kept }
}

/** An event as a mark keeps it. */
const keptEvent = (event: Exclude<Marked, StepEvent.Started>): KeptEvent => {
  switch (event._tag) {
    case "Failed":
      return headless(event)
    case "Turn":
      return kindless(event)
    case "Verdict":
      return kindless(event)
    case "LoopEnded":
      return kindless(event)
    case "Recorded":
      return kindless(event)
  }
}

/**
 * A mark of the entry written at `at`, as the event it noted (or the
 * reference it is); `undefined` for a mark no writer makes.
 */
export const read = (mark: Mark, at: Place): Noted | Reference | undefined => {
  if (typeof mark === "string") {
    return at.key === undefined ? undefined : started(mark, at.key, at.execution)
  }
  if (!("key" in mark)) return started(mark[0], mark[1], mark[2] ?? at.execution)
  if ("ref" in mark) return mark
  const { event, execution, key } = mark
  const header = { stepId: stepIdOf(key), contextId: execution ?? at.execution }
  return {
    key,
    event: event._tag === "Failed" ? { ...event, ...header } : { ...event, ...header, kind: kinds[event._tag] }
  }
}

const started = (kind: StepEvent.Kind, key: string, contextId: string): Noted => ({
  key,
  event: { _tag: "Started", stepId: stepIdOf(key), kind, contextId }
})

/** A mark whose executions are renamed by `rename` (a fork's). */
export const renamed = (mark: Mark, rename: (execution: string) => string): Mark => {
  if (typeof mark === "string") return mark
  if (!("key" in mark)) return mark.length === 3 ? [mark[0], mark[1], rename(mark[2])] : mark
  return mark.execution === undefined ? mark : { ...mark, execution: rename(mark.execution) }
}
