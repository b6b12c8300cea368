/**
 * A durable run's event log, over the `RunStore`: the run writes its events
 * (and, when it fails, its termination) in the order of its course, with its
 * steps (see `RunJournal`); a UI reads them from any turn on, then follows the
 * run as it goes.
 *
 * @since 0.1.0
 */
import * as Termination from "@agentloop/core/Termination"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as DurableEvent from "./DurableEvent.ts"
import { RunStore, RunStoreError } from "./RunStore.ts"
import type { Entry, RunKey } from "./RunStore.ts"

/**
 * The body of a failure entry: the termination the run failed with, as JSON.
 *
 * @since 0.2.0
 * @category schemas
 */
export const failureJson = Schema.fromJsonString(Schema.toCodecJson(Termination.Error))

/**
 * Where a reader starts, and how often it looks for more.
 *
 * @since 0.1.0
 * @category models
 */
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
 *
 * @example
 * ```ts
 * import { DurableAgent, DurableEvent, DurableRunner, RunLog } from "@agentloop/durable"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Stream } from "effect"
 * import { mkdtempSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * const greeter = DurableAgent.make("greeter", { instructions: "Greet." })
 *
 * const program = Effect.gen(function*() {
 *   yield* greeter.run({ runId: "hello-1", input: "Hi" })
 *   // The run's events as it logged them, from its first turn to how it ended.
 *   const events = yield* Stream.runCollect(RunLog.read({ agent: "greeter", runId: "hello-1" }, DurableEvent.DurableEvent))
 *   console.log(events.map((event) => event._tag).join(" ")) // TurnStarted TurnCompleted Verdict Finished
 * })
 *
 * const runner = greeter.layer.pipe(
 *   Layer.provideMerge(DurableRunner.layerSqlite({ filename: join(mkdtempSync(join(tmpdir(), "runs-")), "runs.db") })),
 *   Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")]))
 * )
 * Effect.runPromise(program.pipe(Effect.provide(runner)))
 * ```
 *
 * @since 0.1.0
 * @category reading
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
