/**
 * A durable run's event log, over the `RunStore`: the run writes its events
 * (and, when it fails, its termination) in the order of its course; a UI reads
 * them from any turn on, then follows the run as it goes.
 *
 * A run's course is deterministic once its steps are recorded, so a run that
 * replays writes the same entries at the same positions, which the store
 * keeps as they are: every event is logged once.
 *
 * @since 0.1.0
 */
import * as Termination from "@agentloop/core/Termination"
import { Duration, Effect, Option, Schedule, Schema, Stream } from "effect"
import type * as DurableEvent from "./DurableEvent.ts"
import { RunStore, RunStoreError } from "./RunStore.ts"
import type { Entry, RunKey } from "./RunStore.ts"

/** The writer of one run's log. Events are buffered by `add` and written by `flush`. */
export interface Writer<O> {
  readonly add: (step: number, events: ReadonlyArray<DurableEvent.DurableEvent<O>>) => void
  /** Writes the buffered events, if any: one write. */
  readonly flush: Effect.Effect<void>
  /** Writes the buffered events, then the termination the run failed with. */
  readonly fail: (step: number, termination: Termination.Error) => Effect.Effect<void>
}

const failureJson = Schema.fromJsonString(Schema.toCodecJson(Termination.Error))

/** How a run retries a write of its own records: one that keeps failing is a defect of the run, not a silent gap. */
export const retry = { times: 5, schedule: Schedule.exponential("50 millis") }

/** The writer of `run`'s log, whose events `events` describes. Starts at position 0 on every replay. */
export const writer = <O>(
  run: RunKey,
  events: Schema.Codec<DurableEvent.DurableEvent<O>, unknown>
): Effect.Effect<Writer<O>, never, RunStore> =>
  Effect.gen(function*() {
    const store = yield* RunStore
    const encode = Schema.encodeEffect(Schema.fromJsonString(Schema.toCodecJson(events)))
    let seq = 0
    let pending: Array<{ readonly step: number; readonly event: DurableEvent.DurableEvent<O> }> = []
    const write = (extra: ReadonlyArray<Omit<Entry, "seq">>) =>
      Effect.gen(function*() {
        const buffered = pending
        pending = []
        const entries: Array<Entry> = []
        for (const { event, step } of buffered) {
          entries.push({ seq: seq++, step, kind: "event", body: yield* encode(event) })
        }
        for (const entry of extra) {
          entries.push({ seq: seq++, ...entry })
        }
        yield* store.append(run, entries).pipe(Effect.retry(retry))
      }).pipe(Effect.orDie)
    return {
      add: (step, added) => {
        for (const event of added) pending.push({ step, event })
      },
      flush: Effect.suspend(() => pending.length === 0 ? Effect.void : write([])),
      fail: (step, termination) =>
        Effect.flatMap(
          Effect.orDie(Schema.encodeEffect(failureJson)(termination)),
          (body) => write([{ step, kind: "failure", body }])
        )
    } satisfies Writer<O>
  })

/** Where a reader starts, and how often it looks for more. */
export interface ReadOptions {
  /** The first turn whose events are read (default: the last turn the run logged, i.e. its last completed one). */
  readonly fromStep?: number | undefined
  /** How long to wait before looking again when the log has nothing new (default 100 ms). */
  readonly pollInterval?: Duration.Input | undefined
}

interface Cursor {
  readonly afterSeq: number
  readonly failed: Termination.Error | undefined
}

/**
 * The events of `run` from turn `fromStep` on: those logged so far, then the
 * rest as they are logged, up to `Finished`. Fails with the run's termination
 * when the run failed, and with `RunStoreError` when an entry does not decode.
 */
export const read = <O>(
  run: RunKey,
  events: Schema.Codec<DurableEvent.DurableEvent<O>, unknown>,
  options: ReadOptions = {}
): Stream.Stream<DurableEvent.DurableEvent<O>, Termination.Error | RunStoreError, RunStore> =>
  Stream.unwrap(Effect.gen(function*() {
    const store = yield* RunStore
    const decodeEvent = Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.toCodecJson(events)))
    const decodeFailure = Schema.decodeUnknownEffect(failureJson)
    const corrupt = (entry: Entry) => (error: Schema.SchemaError) =>
      new RunStoreError({ operation: "decode", message: `entry ${entry.seq}: ${error.message}` })
    const fromStep = options.fromStep ?? (yield* store.lastStep(run))
    const pause = Duration.fromInputUnsafe(options.pollInterval ?? Duration.millis(100))
    return Stream.paginate<Cursor, DurableEvent.DurableEvent<O>, Termination.Error | RunStoreError>(
      { afterSeq: -1, failed: undefined },
      (cursor) =>
        Effect.gen(function*() {
          if (cursor.failed !== undefined) return yield* Effect.fail(cursor.failed)
          const entries = yield* store.read(run, { afterSeq: cursor.afterSeq, fromStep, limit: 256 })
          const last = entries.at(-1)
          if (last === undefined) {
            yield* Effect.sleep(pause)
            return [[], Option.some(cursor)] as const
          }
          const out: Array<DurableEvent.DurableEvent<O>> = []
          for (const entry of entries) {
            if (entry.kind === "failure") {
              const failed = yield* decodeFailure(entry.body).pipe(Effect.mapError(corrupt(entry)))
              return [out, Option.some({ afterSeq: entry.seq, failed })] as const
            }
            const event = yield* decodeEvent(entry.body).pipe(Effect.mapError(corrupt(entry)))
            out.push(event)
            if (event._tag === "Finished") return [out, Option.none()] as const
          }
          return [out, Option.some({ afterSeq: last.seq, failed: undefined })] as const
        })
    )
  }))
