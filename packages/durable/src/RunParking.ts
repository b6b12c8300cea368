/**
 * Parking a run that keeps crashing its runners: a run whose executions die
 * with their process (a tool that exits the process, runs it out of memory,
 * or crashes native code) would take down every runner that resumes it, one
 * after another. Each execution that starts is counted, and one that ends
 * without dying (it finishes, fails, waits for a decision, or its runner
 * stops) is not; a run that recorded a step since its last execution started
 * counts from 1 again. When `maxCrashes` executions in a row died, the next
 * one does not run the agent: the run is parked (a durable wait, so no runner
 * picks it up again), listed with a typed reason ({@link RunParked}), and
 * waits for `unpark`.
 *
 * Runs that were merely in flight beside the one that crashed the process die
 * with it too; they go on as soon as they record a step, which resets their
 * count. A run that records no step in `maxCrashes` executions in a row while
 * its runners keep dying is parked with the culprit: release it with
 * `unpark`.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import type * as Workflow from "effect/workflow/Workflow"
import type { WorkflowEngine, WorkflowInstance } from "effect/workflow/WorkflowEngine"
import * as RunJournal from "./RunJournal.ts"
import { RunStore } from "./RunStore.ts"
import type { RunKey, RunStoreError } from "./RunStore.ts"

/**
 * How many executions of a run in a row may die with their process before
 * the run is parked, unless the agent says otherwise (`maxCrashes`).
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultMaxCrashes = 3

/**
 * The run is parked: `crashes` executions in a row died with their process,
 * after it had recorded `recordedSteps` steps. Nothing runs it until `unpark`.
 *
 * @since 0.2.0
 * @category errors
 */
export class RunParked extends Schema.TaggedError<RunParked>()("RunParked", {
  runId: Schema.String,
  crashes: Schema.Int,
  recordedSteps: Schema.Int
}) {
  override get message() {
    const died = this.crashes === 1 ? "1 execution died" : `${this.crashes} executions in a row died`
    const run = JSON.stringify(this.runId)
    return `run ${run} is parked: ${died} with its runner (after ${this.recordedSteps} recorded steps); unpark it to run it again`
  }
}

/** What the store keeps of a parking: the error's fields, and the wait point of this parking (one per parking). */
const Reason = Schema.Struct({ crashes: Schema.Int, recordedSteps: Schema.Int, wait: Schema.String })
const ReasonJson = Schema.fromJsonString(Reason)

interface Parking {
  readonly error: RunParked
  readonly wait: DurableDeferred.DurableDeferred<typeof Schema.Void>
}

const decodeParking = (runId: string, json: string): Effect.Effect<Parking> =>
  Schema.decodeEffect(ReasonJson)(json).pipe(
    Effect.map(({ crashes, recordedSteps, wait }) => ({
      error: new RunParked({ runId, crashes, recordedSteps }),
      wait: DurableDeferred.make(wait)
    })),
    Effect.orDie
  )

const newWait = Effect.sync(() =>
  `parked/${
    Array.from(globalThis.crypto.getRandomValues(new Uint8Array(8)), (byte) => byte.toString(16).padStart(2, "0")).join(
      ""
    )
  }`
)

/**
 * Counts the execution of `run` that starts, and parks the run (a durable
 * wait: the execution suspends) when it is parked already, or when more than
 * `maxCrashes` executions in a row died. `recordedSteps` is what the run
 * recorded so far.
 *
 * @since 0.2.0
 * @category executing
 */
export const enter = (
  run: RunKey,
  options: { readonly maxCrashes: number; readonly recordedSteps: number }
): Effect.Effect<void, never, RunStore | WorkflowEngine | WorkflowInstance> =>
  Effect.gen(function*() {
    const store = yield* RunStore
    const execution = yield* store.begin(run).pipe(Effect.retry(RunJournal.retry), Effect.orDie)
    let parking: Parking
    if (execution.parked !== null) {
      parking = yield* decodeParking(run.runId, execution.parked)
    } else {
      // This execution comes after `attempts - 1` that died.
      const crashes = execution.attempts - 1
      if (crashes < options.maxCrashes) return
      const reason = { crashes, recordedSteps: options.recordedSteps, wait: yield* newWait }
      const json = yield* Effect.orDie(Schema.encodeEffect(ReasonJson)(reason))
      const parked = yield* store.park(run, json).pipe(Effect.retry(RunJournal.retry), Effect.orDie)
      // Another execution parked it first: wait where it waits.
      const stored = parked ? json : yield* store.parkedReason(run).pipe(Effect.retry(RunJournal.retry), Effect.orDie)
      parking = yield* decodeParking(run.runId, stored ?? json)
      yield* Effect.logWarning(parking.error.message)
    }
    yield* DurableDeferred.await(parking.wait)
  })

/**
 * An execution of `run` that ends without a result does not count as a
 * crash: it is waiting for a decision, or its runner is stopping.
 *
 * @since 0.2.0
 * @category executing
 */
export const interrupted = (run: RunKey): Effect.Effect<void, never, RunStore> =>
  Effect.flatMap(RunStore, (store) => Effect.ignore(store.interrupted(run)))

/**
 * The parked runs of `agent`, each with the reason it was parked for.
 *
 * @since 0.2.0
 * @category reading
 */
export const parked = (agent: string): Effect.Effect<ReadonlyArray<RunParked>, RunStoreError, RunStore> =>
  Effect.flatMap(RunStore, (store) =>
    Effect.flatMap(
      store.parked(agent),
      (rows) => Effect.forEach(rows, (row) => Effect.map(decodeParking(row.run_id, row.parked), (p) => p.error))
    ))

/**
 * Fails with {@link RunParked} when `run` is parked.
 *
 * @example
 * ```ts
 * import { NodeSqliteClient, RunParking, RunStore } from "@agentloop/durable"
 * import { Effect, Layer } from "effect"
 * import { mkdtempSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * const filename = join(mkdtempSync(join(tmpdir(), "runs-")), "runs.db")
 * const store = RunStore.layer().pipe(Layer.provide(NodeSqliteClient.layer({ filename })))
 *
 * const program = Effect.gen(function*() {
 *   // A run that has not crashed its runners is not parked: it may go on.
 *   yield* RunParking.check({ agent: "calculator", runId: "sum-1" })
 *   console.log(yield* RunParking.parked("calculator")) // []
 *   console.log(RunParking.defaultMaxCrashes) // 3
 * })
 * Effect.runPromise(program.pipe(Effect.provide(store)))
 * ```
 *
 * @since 0.2.0
 * @category reading
 */
export const check = (run: RunKey): Effect.Effect<void, RunParked | RunStoreError, RunStore> =>
  Effect.flatMap(RunStore, (store) =>
    Effect.flatMap(store.parkedReason(run), (json) =>
      json === undefined
        ? Effect.void
        : Effect.flatMap(decodeParking(run.runId, json), (parking) => Effect.fail(parking.error))))

/**
 * Releases `run` of `workflow` from parking: its count starts again and the
 * run goes on, on whichever runner picks it up. `false` when it was not
 * parked.
 *
 * @since 0.2.0
 * @category releasing
 */
export const unpark = (
  workflow: Workflow.Any,
  run: RunKey
): Effect.Effect<boolean, RunStoreError, RunStore | WorkflowEngine> =>
  Effect.gen(function*() {
    const store = yield* RunStore
    const json = yield* store.unpark(run)
    if (json === undefined) return false
    const { wait } = yield* decodeParking(run.runId, json)
    const executionId = yield* workflow.executionId({ runId: run.runId, input: "" })
    yield* DurableDeferred.done(wait, {
      token: DurableDeferred.tokenFromExecutionId(wait, { workflow, executionId }),
      exit: Exit.void
    })
    return true
  })
