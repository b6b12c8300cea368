/**
 * A durable run's journal: the steps it recorded (its start, each model turn,
 * each tool call, each decision) and the events it logs, written together.
 *
 * An execution of the run reads what the run recorded once, when it starts; a
 * step that was recorded is not run again, its record is decoded instead. A
 * step that runs is recorded with the next `commit`, in the same write as the
 * events logged since the last one: one transaction (one statement on
 * PostgreSQL) for a model turn and its events, one for each tool call, one
 * for a decision and its events. The run commits before anything that must
 * not be repeated: a completed turn before its calls run or its decision is
 * made, a call as it ends.
 *
 * The run's course is deterministic once its steps are recorded, so an
 * execution that replays logs the same events at the same positions: those
 * the log holds already are not written again.
 *
 * Writes are made one at a time, each stamped with the next place in the
 * run's course (`seq`) and the time: a call's start (`claim`) as well as the
 * steps. So a reader sees the run as it was at some point of its course, and
 * the run's history (see `DurableHistory`) lists its steps in the order they
 * were written.
 *
 * @since 0.2.0
 */
import type * as Termination from "@agentloop/core/Termination"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Semaphore from "effect/Semaphore"
import type * as DurableEvent from "./DurableEvent.ts"
import * as RunLog from "./RunLog.ts"
import { RunStore } from "./RunStore.ts"
import type { Entry, RunKey, RunStoreError, StepRecord } from "./RunStore.ts"

/**
 * How the run retries a write of its records: one that keeps failing is a
 * defect of the run, not a silent gap.
 *
 * @since 0.2.0
 * @category constants
 */
export const retry = { times: 5, schedule: Schedule.exponential("50 millis") }

/**
 * Another executor of the run recorded a step first (a runner that lost its
 * shard and went on for a moment): the execution starts again from what is
 * recorded.
 *
 * @since 0.2.0
 * @category errors
 */
export class StepTaken extends Schema.TaggedError<StepTaken>()("StepTaken", {
  runId: Schema.String,
  steps: Schema.Array(Schema.String)
}) {
  override get message() {
    return `run ${JSON.stringify(this.runId)}: another executor recorded ${this.steps.join(", ")} first`
  }
}

/**
 * The journal of one execution of a run whose events `O` describes.
 *
 * @since 0.2.0
 * @category models
 */
export interface Journal<O> {
  /** How many steps the run had recorded when this execution started. */
  readonly recordedSteps: number
  /**
   * The termination the run's log had ended with when this execution started
   * (a person's cancellation while it was executed, say): an execution that
   * finds one does nothing more.
   *
   * @since 0.3.0
   */
  readonly ended: Termination.Error | undefined
  /**
   * The step `name`: its recorded value, or the value of `effect`, recorded
   * with the next `commit`.
   */
  readonly step: <A, E, R>(name: string, codec: Codec<A>, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /**
   * The recorded value of step `name`, `undefined` when it has none; nothing
   * is run or recorded.
   *
   * @since 0.3.0
   */
  readonly recorded: <A>(name: string, codec: Codec<A>) => Effect.Effect<A | undefined>
  /**
   * Records that the call of step `name` starts, at once (a write that fails
   * is tried again, as a commit is): `false` when it was recorded before (the
   * call started, and may not have ended).
   *
   * @since 0.3.0
   */
  readonly claim: (name: string) => Effect.Effect<boolean, RunStoreError>
  /** Logs `events` of turn `step`, with the next `commit`. */
  readonly log: (step: number, events: ReadonlyArray<DurableEvent.DurableEvent<O>>) => void
  /** Writes the steps run and the events logged since the last commit, if any: one write. */
  readonly commit: Effect.Effect<void, StepTaken>
  /** Commits, with the termination the run failed with as the log's last entry. */
  readonly fail: (step: number, termination: Termination.Error) => Effect.Effect<void, StepTaken>
}

/**
 * How a step's value is recorded: JSON through a Schema. Build it once (it
 * walks the schema), not once per step.
 *
 * @since 0.2.0
 * @category models
 */
export interface Codec<A> {
  readonly encode: (value: A) => Effect.Effect<string, Schema.SchemaError>
  readonly decode: (json: string) => Effect.Effect<A, Schema.SchemaError>
}

/**
 * The record codec of the values `schema` describes.
 *
 * @example
 * ```ts
 * import { RunJournal } from "@agentloop/durable"
 * import { Effect, Schema } from "effect"
 *
 * // How a recorded step is stored: JSON by its schema, and checked when read back.
 * const codec = RunJournal.codec(Schema.Struct({ turn: Schema.Int, text: Schema.String }))
 * const program = Effect.gen(function*() {
 *   const json = yield* codec.encode({ turn: 1, text: "Hello" })
 *   console.log(json) // {"turn":1,"text":"Hello"}
 *   console.log((yield* codec.decode(json)).text) // Hello
 * })
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const codec = <A>(schema: Schema.Codec<A, unknown>): Codec<A> => {
  const json = Schema.fromJsonString(Schema.toCodecJson(schema))
  return { encode: Schema.encodeEffect(json), decode: Schema.decodeUnknownEffect(json) }
}

const encodeFailure = Schema.encodeEffect(RunLog.failureJson)
const decodeFailure = Schema.decodeUnknownEffect(RunLog.failureJson)

/**
 * Opens the journal of `run` for an execution: one read of what it recorded.
 * `events` describes its log's events.
 *
 * @since 0.2.0
 * @category constructors
 */
export const open = <O>(
  run: RunKey,
  events: Schema.Codec<DurableEvent.DurableEvent<O>, unknown>
): Effect.Effect<Journal<O>, never, RunStore> =>
  Effect.gen(function*() {
    const store = yield* RunStore
    const recorded = yield* store.load(run).pipe(Effect.retry(retry), Effect.orDie)
    const ended = recorded.failure === undefined ? undefined : yield* Effect.orDie(decodeFailure(recorded.failure))
    const eventCodec = codec(events)
    let seq = 0
    let steps: Array<Omit<StepRecord, "stamp">> = []
    let logged: Array<{ readonly seq: number; readonly step: number; readonly event: DurableEvent.DurableEvent<O> }> =
      []
    // One write at a time, each at the next place of the run's course: what is stored is always a prefix of it.
    const writer = Semaphore.makeUnsafe(1)
    let place = recorded.lastSeq

    const write = (extra: ReadonlyArray<Entry>) =>
      writer.withPermits(1)(Effect.gen(function*() {
        const records = steps
        const pending = logged
        steps = []
        logged = []
        const entries: Array<Entry> = []
        for (const { event, seq, step } of pending) {
          entries.push({ seq, step, kind: "event", body: yield* Effect.orDie(eventCodec.encode(event)) })
        }
        entries.push(...extra)
        if (records.length === 0 && entries.length === 0) return
        const at = yield* Clock.currentTimeMillis
        const taken = yield* store.commit(run, {
          steps: records.map((record) => ({ ...record, stamp: { seq: ++place, at } })),
          entries
        }).pipe(Effect.retry(retry), Effect.orDie)
        if (taken.length > 0) return yield* new StepTaken({ runId: run.runId, steps: taken })
      }))

    return {
      recordedSteps: recorded.steps.size,
      ended,
      step: (name, stepCodec, effect) => {
        const body = recorded.steps.get(name)
        if (body !== undefined) return Effect.orDie(stepCodec.decode(body))
        return Effect.tap(effect, (value) =>
          Effect.map(Effect.orDie(stepCodec.encode(value)), (json) => {
            steps.push({ name, body: json })
          }))
      },
      recorded: (name, stepCodec) => {
        const body = recorded.steps.get(name)
        return body === undefined ? Effect.undefined : Effect.orDie(stepCodec.decode(body))
      },
      claim: (name) =>
        writer.withPermits(1)(
          // A claim that landed before its connection dropped reads as made before: the call's outcome is unknown.
          Effect.flatMap(
            Clock.currentTimeMillis,
            (at) => store.claim(run, name, { seq: ++place, at }).pipe(Effect.retry(retry))
          )
        ),
      log: (step, added) => {
        for (const event of added) {
          const position = seq++
          // The log holds the entries of the steps recorded before: a replay does not write them again.
          if (position >= recorded.logLength) logged.push({ seq: position, step, event })
        }
      },
      commit: Effect.suspend(() => write([])),
      fail: (step, termination) =>
        Effect.flatMap(Effect.orDie(encodeFailure(termination)), (body) => {
          const position = seq++
          return write(position >= recorded.logLength ? [{ seq: position, step, kind: "failure", body }] : [])
        })
    } satisfies Journal<O>
  })
