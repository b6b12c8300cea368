/**
 * What a durable run records beside the engine's own storage, in the same SQL
 * database: its recorded steps (see `RunJournal`), its event log, which a UI
 * reads (again) from any turn on, and the tool calls it started, so a call of
 * a tool that is not idempotent runs at most once even when a crash cut it
 * short.
 *
 * It also holds the approvals a run issued: each wait point's secret, and
 * the decision once one is recorded (see `DurableApproval`); and how many of
 * a run's executions in a row died with their process, to park a run that
 * keeps crashing its runners (see `RunParking`); and when a run finished
 * (indexed), so that finished runs can be pruned (see `RunRetention`).
 *
 * Five tables, `<prefix>_agent_steps`, `<prefix>_agent_events`,
 * `<prefix>_agent_calls`, `<prefix>_agent_approvals` and `<prefix>_agent_runs`,
 * created when the layer starts. Steps are keyed by run and name, entries by run and position, and
 * both are written with "insert unless present": the first record of a step
 * holds, and a replaying run writes nothing twice. Steps and started calls
 * carry their place in the run's course and when they were written, which
 * make the run's history (see `DurableHistory`); a run's records are read
 * whole, and copied to a new run, for its forks (see `DurableFork`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { SqlClient } from "effect/sql/SqlClient"
import * as RunStoreApprovals from "./internal/runStoreApprovals.ts"
import * as RunStoreExecutions from "./internal/runStoreExecutions.ts"
import * as RunStoreHistory from "./internal/runStoreHistory.ts"
import * as RunStoreLog from "./internal/runStoreLog.ts"
import * as RunStoreRetention from "./internal/runStoreRetention.ts"
import * as RunTables from "./internal/runTables.ts"

/**
 * A run: the durable agent's name and the run's id.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunKey {
  readonly agent: string
  readonly runId: string
}

/**
 * What an entry of the log holds: an event, or the termination a run failed with.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Kind = Schema.Literals(["event", "failure"])
export type Kind = typeof Kind.Type

/**
 * An entry of a run's log: its position `seq`, the turn it belongs to, and its JSON `body`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Entry = Schema.Struct({
  seq: Schema.Int,
  step: Schema.Int,
  kind: Kind,
  body: Schema.String
})
export type Entry = typeof Entry.Type

/**
 * The store could not be read or written.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunStoreError extends Schema.TaggedError<RunStoreError>()("RunStoreError", {
  operation: Schema.String,
  message: Schema.String
}) {}

/**
 * Where a record stands in its run's course, and when it was written: `seq`
 * grows with each record the run writes (a fork's own records share the
 * place of its checkpoint), `at` is epoch milliseconds.
 *
 * @since 0.3.0
 * @category models
 */
export interface Stamp {
  readonly seq: number
  readonly at: number
}

/**
 * A recorded step of a run: its name and its JSON `body`, with its
 * {@link Stamp} (absent from steps written before 0.3.0).
 *
 * @since 0.2.0
 * @category models
 */
export interface StepRecord {
  readonly name: string
  readonly body: string
  /** @since 0.3.0 */
  readonly stamp?: Stamp | undefined
}

/**
 * What a run recorded so far: its steps by name, the length of its log, the
 * highest `seq` of its steps and started calls (0 when none has one), and the
 * body of the first failure its log holds, if any.
 *
 * @since 0.2.0
 * @category models
 */
export interface Recorded {
  readonly steps: ReadonlyMap<string, string>
  readonly logLength: number
  /** @since 0.3.0 */
  readonly lastSeq: number
  /**
   * The termination (JSON) the run's log ended with: written by the run, or
   * by a cancellation while the run was executed elsewhere.
   *
   * @since 0.3.0
   */
  readonly failure?: string | undefined
}

/**
 * A call of a tool that is not idempotent that a run started (`call`, the
 * name of its step), with its {@link Stamp} (absent when written before 0.3.0).
 *
 * @since 0.3.0
 * @category models
 */
export interface ClaimRecord {
  readonly call: string
  readonly stamp?: Stamp | undefined
}

/**
 * Everything a run recorded that its history and its forks read: its steps
 * and started calls, stamped, and its approvals (secrets and decisions).
 *
 * @since 0.3.0
 * @category models
 */
export interface RunRecords {
  readonly steps: ReadonlyArray<StepRecord>
  readonly claims: ReadonlyArray<ClaimRecord>
  readonly approvals: ReadonlyArray<IssuedApproval>
}

/**
 * The run store; {@link layer} builds it on the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category services
 */
export class RunStore extends Context.Service<RunStore, {
  /** What `run` recorded so far: one read. */
  readonly load: (run: RunKey) => Effect.Effect<Recorded, RunStoreError>
  /**
   * Writes `steps` and `entries` of `run` at once (one transaction, one
   * statement on PostgreSQL). A step recorded before is kept, and its name
   * returned: another executor of the run recorded it first. An entry whose
   * position is taken is left as it is.
   */
  readonly commit: (
    run: RunKey,
    records: { readonly steps: ReadonlyArray<StepRecord>; readonly entries: ReadonlyArray<Entry> }
  ) => Effect.Effect<ReadonlyArray<string>, RunStoreError>
  /** The entries of `run` after position `afterSeq` that belong to turn `fromStep` or later, in order, at most `limit`. */
  readonly read: (
    run: RunKey,
    options: { readonly afterSeq: number; readonly fromStep: number; readonly limit: number }
  ) => Effect.Effect<ReadonlyArray<Entry>, RunStoreError>
  /** The last turn `run` logged anything for (its last completed turn, as a turn is logged once completed); 0 when none. */
  readonly lastStep: (run: RunKey) => Effect.Effect<number, RunStoreError>
  /**
   * Records that `call` of `run` starts (at `stamp`, its place in the run's
   * course); `false` when it was recorded before (it started, and may not
   * have ended).
   */
  readonly claim: (run: RunKey, call: string, stamp?: Stamp) => Effect.Effect<boolean, RunStoreError>
  /**
   * Stores the wait points `offered` of `run` with their secrets, keeping the
   * secret of one stored before; returns each as stored, with its decision
   * (JSON) when one is recorded.
   */
  readonly issue: (
    run: RunKey,
    offered: ReadonlyArray<{ readonly wait: string; readonly secret: string }>
  ) => Effect.Effect<ReadonlyArray<IssuedApproval>, RunStoreError>
  /** The wait point `wait` of `run` as stored; `undefined` when the run never issued it. */
  readonly readApproval: (run: RunKey, wait: string) => Effect.Effect<IssuedApproval | undefined, RunStoreError>
  /** Records `decision` (JSON) for `wait` of `run`; `false` when one was recorded before, which is kept. */
  readonly decide: (run: RunKey, wait: string, decision: string) => Effect.Effect<boolean, RunStoreError>
  /**
   * Counts an execution of `run` that starts: its executions in a row that
   * did not end (their process died), 1 again when the run recorded a step
   * since the last one started; with the reason it was parked for, if it is.
   */
  readonly begin: (run: RunKey) => Effect.Effect<Execution, RunStoreError>
  /** An execution of `run` ended without a result (it waits, or its runner stops): it does not count. */
  readonly interrupted: (run: RunKey) => Effect.Effect<void, RunStoreError>
  /** Parks `run` for `reason` (JSON), unless it is parked already; `false` then. */
  readonly park: (run: RunKey, reason: string) => Effect.Effect<boolean, RunStoreError>
  /** Releases `run` from parking, counting no execution; returns the reason it was parked for when this call released it. */
  readonly unpark: (run: RunKey) => Effect.Effect<string | undefined, RunStoreError>
  /** The reason (JSON) `run` is parked for; `undefined` when it is not parked. */
  readonly parkedReason: (run: RunKey) => Effect.Effect<string | undefined, RunStoreError>
  /** The parked runs of `agent`, with the reasons (JSON). */
  readonly parked: (agent: string) => Effect.Effect<ReadonlyArray<ParkedRow>, RunStoreError>
  /**
   * Records that the execution `executionId` of `run` finished (with a
   * result, a termination or a defect) at `at` (epoch milliseconds). An
   * execution of the run that begins after it makes it unfinished again.
   */
  readonly finished: (run: RunKey, executionId: string, at: number) => Effect.Effect<void, RunStoreError>
  /** The runs that finished before `before` (epoch milliseconds), oldest first, at most `limit`. */
  readonly expired: (before: number, limit: number) => Effect.Effect<ReadonlyArray<FinishedRun>, RunStoreError>
  /**
   * Deletes every record of `run` if it finished before `before` (and did not
   * begin again since): whether it did. Run it in a transaction with what else
   * goes with the run.
   */
  readonly forget: (run: RunKey, before: number) => Effect.Effect<boolean, RunStoreError>
  /**
   * Every step, started call and approval of `run`, in one read: what its
   * history is folded from. A run that writes meanwhile is not disturbed.
   *
   * @since 0.3.0
   */
  readonly records: (run: RunKey) => Effect.Effect<RunRecords, RunStoreError>
  /**
   * Writes `records` as the records of the new run `run`, in one transaction:
   * `false`, with nothing written, when `run` has any record already (a step,
   * a log entry, or an execution that began).
   *
   * @since 0.3.0
   */
  readonly create: (run: RunKey, records: RunRecords) => Effect.Effect<boolean, RunStoreError>
  /**
   * Whether `run` has any record: a step, a log entry, or an execution that
   * began. A run started is not recorded until a runner begins it; a run
   * pruned has none.
   *
   * @since 0.3.0
   */
  readonly exists: (run: RunKey) => Effect.Effect<boolean, RunStoreError>
}>()("@agentloop/durable/RunStore") {}

/**
 * How many executions of a run in a row died with their process, and why it is parked, if it is (JSON).
 *
 * @since 0.2.0
 * @category models
 */
export const Execution = Schema.Struct({ attempts: Schema.Number, parked: Schema.NullOr(Schema.String) })
export type Execution = typeof Execution.Type

/**
 * A finished run: its agent, its id, and the id of its workflow execution.
 *
 * @since 0.2.0
 * @category models
 */
export const FinishedRun = Schema.Struct({ agent: Schema.String, run_id: Schema.String, execution_id: Schema.String })
export type FinishedRun = typeof FinishedRun.Type

/**
 * A parked run: its id and the reason it was parked for (JSON).
 *
 * @since 0.2.0
 * @category models
 */
export const ParkedRow = Schema.Struct({ run_id: Schema.String, parked: Schema.String })
export type ParkedRow = typeof ParkedRow.Type

/**
 * A wait point as stored: its name, its secret, and its decision (JSON) once recorded.
 *
 * @since 0.2.0
 * @category models
 */
export const IssuedApproval = Schema.Struct({
  wait: Schema.String,
  secret: Schema.String,
  decision: Schema.NullOr(Schema.String)
})
export type IssuedApproval = typeof IssuedApproval.Type

/**
 * Builds the store on the `SqlClient` in context, creating its tables (named after `prefix`) when missing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (prefix: string): Effect.Effect<RunStore["Service"], RunStoreError, SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const fail = (operation: string) => (error: { readonly message: string }) =>
      new RunStoreError({ operation, message: error.message })
    const tables = yield* RunTables.make(sql, prefix).pipe(Effect.mapError(fail("migrate")))
    return RunStore.of({
      ...RunStoreLog.make(sql, tables, fail, Entry),
      ...RunStoreApprovals.make(sql, tables, fail, IssuedApproval),
      ...RunStoreExecutions.make(sql, tables, fail, { Execution, ParkedRow }),
      ...RunStoreRetention.make(sql, tables, fail, FinishedRun),
      ...RunStoreHistory.make(sql, tables, fail)
    })
  })

/**
 * The store of the runs in the `SqlClient`'s database, under the tables' `prefix` (default `"agentloop"`).
 *
 * @example
 * ```ts
 * import { NodeSqliteClient, RunStore } from "@agentloop/durable"
 * import { Effect, Layer } from "effect"
 * import { mkdtempSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * const filename = join(mkdtempSync(join(tmpdir(), "runs-")), "runs.db")
 *
 * const program = Effect.gen(function*() {
 *   const store = yield* RunStore.RunStore
 *   const run = { agent: "cleaner", runId: "cleanup-42" }
 *   // A tool call that is not idempotent is claimed once: a second claim (after a crash) is refused.
 *   console.log(yield* store.claim(run, "call_1")) // true
 *   console.log(yield* store.claim(run, "call_1")) // false
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(RunStore.layer().pipe(Layer.provide(NodeSqliteClient.layer({ filename }))))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (prefix = "agentloop"): Layer.Layer<RunStore, RunStoreError, SqlClient> =>
  Layer.effect(RunStore)(make(prefix))
