/**
 * The entries of a step program's ledger, as `Schema`s: a step that completed
 * (its output and its execution's context then), a context a step's
 * `checkpoint()` saved, an `llm` step's answered turn, a call's start and its
 * end, the program's output, and what the program streamed when many events
 * came with no other entry to carry them.
 *
 * Since 0.3.0 an entry also carries what the program streamed since the entry
 * before (its marks, see `marks.ts`), and what the events its own entry
 * replays need: a completed step's kind (and its `meta` when its context does
 * not hold it), an answered turn's number and, when its `TurnCompleted` was
 * streamed, what its accounting was, and whether a call's `ToolResult` was
 * left out of the stream. Entries written before have none of it, and decode as they are.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as AgentCheckpoint from "../../agent/AgentCheckpoint.ts"
import * as CheckpointVersion from "../../CheckpointVersion.ts"
import { Cost } from "../../Cost.ts"
import * as Item from "../../Item.ts"
import { StepMeta } from "../../StepMeta.ts"
import { TokenUsage } from "../../TokenUsage.ts"
import * as ToolRecord from "../../ToolRecord.ts"
import * as Turn from "../../Turn.ts"
import { RecordedError } from "../ExecutionContext.ts"
import { Kind } from "../StepEvent.ts"
import { Mark } from "./marks.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** An execution's context, as the ledger writes it. */
export const Context = Schema.Struct({
  log: AgentCheckpoint.HistoryChange,
  state: Schema.optionalKey(Schema.Json),
  tokens: TokenUsage,
  cost: Cost,
  stepCount: Count,
  turns: Count,
  spawns: Schema.Record(Schema.String, Count),
  lastStepMeta: Schema.NullOr(StepMeta),
  errors: Schema.Array(RecordedError)
})
export type Context = typeof Context.Type

/** When an entry was written, in epoch milliseconds (absent from entries written before 0.2.0). */
const Time = Schema.optionalKey(Schema.Finite)

/** What the program streamed since the entry before, as marks (absent from entries written before 0.3.0). */
const Events = Schema.optionalKey(Schema.Array(Mark))

/** A step's output as the ledger writes it: its JSON, and the output version of its tool (a `tool` step's) when it declares one. */
const Output = { output: Schema.Json, outputVersion: Schema.optionalKey(CheckpointVersion.Version) }

/** A step's output, recorded. */
export interface Output {
  readonly output: Schema.Json
  readonly outputVersion?: number
}

/** A step's output to record: it is checked to be JSON when it is written. */
export interface Unwritten {
  readonly output: unknown
  readonly outputVersion?: number
}

/** The output an entry recorded. */
export const outputOf = (entry: Output): Output =>
  entry.outputVersion === undefined
    ? { output: entry.output }
    : { output: entry.output, outputVersion: entry.outputVersion }

/**
 * What an `llm` step's `TurnCompleted` said besides the turn, its cost and its
 * number: its accounting, told against what its execution's entry before
 * wrote (see `replay.ts`). The time, always; the usage and cost when they are
 * not those books plus the turn's, the turns when not the turn's number; the
 * last items when they are not those of the item log written before (changed
 * as `asked` says, when it changed) followed by the turn's: when the model
 * was asked with other items (recalled from memory, compacted).
 */
export const TurnCompleted = Schema.Struct({
  elapsedMs: Schema.Finite,
  usage: Schema.optionalKey(TokenUsage),
  cost: Schema.optionalKey(Cost),
  steps: Schema.optionalKey(Count),
  asked: Schema.optionalKey(AgentCheckpoint.HistoryChange),
  lastItems: Schema.optionalKey(Item.History)
})
export type TurnCompleted = typeof TurnCompleted.Type

const Entry = Schema.Union([
  Schema.TaggedStruct("Completed", {
    execution: Schema.String,
    key: Schema.String,
    ...Output,
    context: Context,
    // The step's kind when its `Completed` was streamed, and its `meta` when its context does not hold it.
    kind: Schema.optionalKey(Kind),
    meta: Schema.optionalKey(StepMeta),
    events: Events,
    time: Time
  }),
  Schema.TaggedStruct("Saved", {
    execution: Schema.String,
    key: Schema.String,
    context: Context,
    events: Events,
    time: Time
  }),
  // An `llm` step's turn, once the model answered it, each call of a tool that is not idempotent as it
  // started, and each of its calls as it ended.
  Schema.TaggedStruct("Answered", {
    execution: Schema.String,
    key: Schema.String,
    turn: Turn.Turn,
    cost: Cost,
    step: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
    turnCompleted: Schema.optionalKey(TurnCompleted),
    events: Events,
    time: Time
  }),
  Schema.TaggedStruct("ToolStarted", {
    execution: Schema.String,
    key: Schema.String,
    index: Count,
    events: Events,
    time: Time
  }),
  Schema.TaggedStruct("ToolDone", {
    execution: Schema.String,
    key: Schema.String,
    index: Count,
    record: ToolRecord.ToolRecord,
    // The call's `ToolResult` was not streamed (the step's `emit` left it out).
    hidden: Schema.optionalKey(Schema.Literal(true)),
    events: Events,
    time: Time
  }),
  Schema.TaggedStruct("Finished", { ...Output, events: Events, time: Time }),
  // What the program streamed, on its own: written once many events came with no other entry to carry them.
  Schema.TaggedStruct("Streamed", { events: Schema.Array(Mark), time: Time })
])

/** An entry of the ledger. */
export type Entry = typeof Entry.Type

/** Decodes the JSON of an entry (its version is read apart). */
export const decodeEntry = Schema.decodeUnknownEffect(Entry)

/** Encodes an entry to its JSON (its version is written apart), at once: fails when an output or a state is not JSON. */
export const encodeEntry = Schema.encodeUnknownResult(Entry)

/** Decodes a state a migration answered: it must be JSON. */
export const decodeState = Schema.decodeUnknownEffect(Schema.Json)

/** An entry of the ledger as it was written: the entry, and the version of the program's state it was written at. */
export interface Versioned {
  readonly entry: Entry
  readonly version: number
}

/** Reads an entry of the ledger as it was written (its state not migrated). */
export const decode = (text: string): Effect.Effect<Versioned, Schema.SchemaError> =>
  Effect.flatMap(
    CheckpointVersion.parse(text),
    (recorded) => Effect.map(decodeEntry(recorded.json), (entry) => ({ entry, version: recorded.version }))
  )

/** Writes an entry of the ledger at `version`. */
export const encode = ({ entry, version }: Versioned): Effect.Effect<string, Schema.SchemaError> =>
  Effect.map(Effect.fromResult(encodeEntry(entry)), (json) => CheckpointVersion.format(version, json))

/** A context as it was, item log whole, ready to be put back. */
export interface Restorable extends Omit<Context, "log"> {
  readonly items: ReadonlyArray<Item.Item>
}

/**
 * Reads the contexts of a ledger's entries in order: each one whole, its item
 * log rebuilt from the one its execution wrote before. `logs` is each
 * execution's item log as last read.
 */
export const reader =
  (logs: Map<string, ReadonlyArray<Item.Item>> = new Map()) => (execution: string, context: Context): Restorable => {
    const items = AgentCheckpoint.apply(logs.get(execution) ?? [], context.log)
    logs.set(execution, items)
    const { log: _, ...rest } = context
    return { ...rest, items }
  }
