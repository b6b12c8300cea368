/**
 * What a checkpoint store does, whatever it keeps its logs in: it opens a
 * run's log for one writer at a time (a lease), checks that the run is the
 * one it recorded (its fingerprint), and appends entries in order, each
 * durable once its append succeeds. The `Checkpointer` service is a store;
 * its layers build one over files, SQL or memory.
 *
 * @since 0.2.0
 */
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as RunFingerprint from "./RunFingerprint.ts"
import type { InvalidRunId } from "./RunId.ts"

/**
 * A checkpoint could not be opened, read, written or cleared; `cause` says
 * why. An append that failed may or may not have reached the store: the run
 * stops, and executing it again reads what did.
 *
 * @since 0.1.0
 * @category errors
 */
export class CheckpointError extends Schema.TaggedError<CheckpointError>()("CheckpointError", {
  operation: Schema.Literals(["open", "read", "append", "clear"]),
  id: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/**
 * Another executor holds run `id`'s lease: it is running, or died less than a
 * lease's duration ago. `expiresAt` (epoch milliseconds, by the clock of the
 * process that read it) is when the lease lapses unless its owner renews it;
 * `null` for a lease held within this process, which lasts as long as its
 * holder.
 *
 * @since 0.2.0
 * @category errors
 */
export class RunInProgress extends Schema.TaggedError<RunInProgress>()("RunInProgress", {
  id: Schema.String,
  owner: Schema.String,
  expiresAt: Schema.NullOr(Schema.Number)
}) {
  override get message() {
    const lapses = this.expiresAt === null
      ? "until it ends"
      : `its lease lapses at ${new Date(this.expiresAt).toISOString()} unless renewed`
    return `run "${this.id}" is being executed by ${this.owner} (${lapses})`
  }
}

/**
 * Run `id` was recorded with another fingerprint: executing it again with a
 * different input, instructions, tools or output would mix two runs' histories.
 * `differences` names each field that differs.
 *
 * @since 0.2.0
 * @category errors
 */
export class CheckpointMismatch extends Schema.TaggedError<CheckpointMismatch>()("CheckpointMismatch", {
  id: Schema.String,
  differences: Schema.Array(RunFingerprint.Difference)
}) {
  override get message() {
    const fields = this.differences.map((d) =>
      `${d.field} (recorded ${d.recorded ?? "none"}, given ${d.given ?? "none"})`
    )
    return `run "${this.id}" was recorded with another ${fields.join(", ")}: use another id for another run`
  }
}

/**
 * Why a run's log could not be opened.
 *
 * @since 0.2.0
 * @category errors
 */
export type OpenError = CheckpointError | RunInProgress | CheckpointMismatch | InvalidRunId

/**
 * A run's log, open for writing: the entries recorded before, and appends.
 * The lease is held until the scope it was opened in closes.
 *
 * @since 0.2.0
 * @category models
 */
export interface Log {
  /** Every entry recorded before it was opened, oldest first. */
  readonly entries: ReadonlyArray<string>
  /**
   * Appends entries, all or none, after every entry appended before (appends
   * that run at once are written in the order they were made, together when
   * they wait for one another). Once it succeeds, the entries are in the store
   * and survive the process; unless `durable: false` says otherwise, they also
   * survive a power cut.
   */
  readonly append: (entries: ReadonlyArray<string>, options?: AppendOptions) => Effect.Effect<void, CheckpointError>
}

/**
 * How an append is written.
 *
 * @since 0.2.0
 * @category models
 */
export interface AppendOptions {
  /**
   * `false`: the entries need not reach the disk before the append succeeds;
   * the next durable append (or the log's close) takes them there. A power
   * cut before then loses them, and only them: for entries whose loss costs
   * work done again that has no effect outside the run (an `AgentLoop` run's
   * decision after a turn), never work whose effects would repeat. Stores
   * where it makes no difference ignore it (PostgreSQL commits such an append
   * without waiting for its WAL to reach the disk). Default `true`.
   */
  readonly durable?: boolean | undefined
}

/**
 * What every store does.
 *
 * @example
 * ```ts
 * import { Checkpointer } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // A run's log: opened by one owner at a time, appended to, read back on resume.
 * const program = Effect.gen(function*() {
 *   const store = yield* Checkpointer.Checkpointer
 *   yield* Effect.scoped(Effect.gen(function*() {
 *     const log = yield* store.open("run-1", { model: "gpt-5-mini" })
 *     yield* log.append(["{\"turn\":1}", "{\"turn\":2}"])
 *   }))
 *   console.log(yield* store.read("run-1")) // [ '{"turn":1}', '{"turn":2}' ]
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Checkpointer.layerMemory)))
 * ```
 *
 * @since 0.2.0
 * @category models
 */
export interface Store {
  /**
   * Opens run `id`'s log for writing: takes its lease (or fails with
   * `RunInProgress`), records `fingerprint` on the run's first execution and
   * compares it after (or fails with `CheckpointMismatch`), and reads what was
   * recorded. The lease is renewed while the scope is open, and released when
   * it closes.
   */
  readonly open: (
    id: string,
    fingerprint: RunFingerprint.Fingerprint
  ) => Effect.Effect<Log, OpenError, Scope.Scope>
  /** Every entry of run `id`, oldest first, without taking its lease; none for a run never recorded. */
  readonly read: (id: string) => Effect.Effect<ReadonlyArray<string>, CheckpointError | InvalidRunId>
  /** Forgets run `id`, so executing it again starts afresh; fails with `RunInProgress` while it runs. */
  readonly clear: (id: string) => Effect.Effect<void, CheckpointError | RunInProgress | InvalidRunId>
}
