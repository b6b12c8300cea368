/**
 * What a checkpoint store does, whatever it keeps its logs in: it opens a
 * run's log for one writer at a time (a lease), checks that the run is the
 * one it recorded (its fingerprint), and appends entries in order, each
 * durable once its append succeeds. The `Checkpointer` service is a store;
 * its layers build one over files, SQL or memory.
 *
 * @since 0.2.0
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as LogOffset from "./internal/logOffset.ts"
import type { InvalidOptions } from "./InvalidOptions.ts"
import * as RunFingerprint from "./RunFingerprint.ts"
import type { InvalidRunId } from "./RunId.ts"

/**
 * A checkpoint could not be opened, read, written, cleared or pruned; `cause`
 * says why. An append that failed may or may not have reached the store: the run
 * stops, and executing it again reads what did.
 *
 * @since 0.1.0
 * @category errors
 */
export class CheckpointError extends Schema.TaggedError<CheckpointError>()("CheckpointError", {
  operation: Schema.Literals(["open", "read", "append", "clear", "prune"]),
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
  /**
   * `true`: these entries end the run and hold its result (an `AgentLoop`
   * run's `Finished` entry, a step program's output). The store records when
   * the run finished, so that {@link Store.prune} can expire it, and which
   * entries are its result, so that `prune` with `keep: "result"` can keep
   * only them. A later append without it makes the run unfinished again.
   * Default `false`.
   *
   * @since 0.2.0
   */
  readonly finished?: boolean | undefined
  /**
   * `true`: these entries sum up every entry before them (a snapshot of the
   * run's state), which they replace: the log becomes these entries alone,
   * at once. A crash leaves the log as it was before or as it is after,
   * never a mix of the two (files: a new log written, synced and renamed over
   * the old one; SQL: one transaction; a key-value store, which has no
   * transactions, only within a process that does not die). It costs a
   * rewrite of the log, so a writer compacts once its log is long, not at
   * every append. Always durable. Default `false`.
   *
   * @since 0.2.0
   */
  readonly compact?: boolean | undefined
}

/**
 * Which runs {@link Store.prune} removes, and what it keeps of them: finished
 * runs by when they finished, runs that did not finish by when their last
 * execution ended. At least one of `finishedBefore` and `unfinishedBefore` is
 * given. Neither kind takes a run whose lease is held, nor a log that is not
 * a run's (a thread's log, the index of threads: see `ThreadId.prefix`).
 *
 * @since 0.2.0
 * @category models
 */
export interface PruneOptions {
  /**
   * Runs that finished before this: a `Date`, or a duration before now (`"30
   * days"`, milliseconds, any `Duration` input; `0` is every finished run).
   * A run finished when the append that finished it was made (see
   * {@link AppendOptions.finished}); one appended to after that has not.
   */
  readonly finishedBefore?: Date | Duration.Input | undefined
  /**
   * Runs that did not finish whose last execution ended before this (a
   * `Date`, or a duration before now): runs that ended with an error
   * termination, were interrupted, or failed (a step program), and runs whose
   * process died and that were never executed again. An execution ends when
   * its lease is released, or, for an executor that died, when its lease
   * lapsed (its last renewal plus the lease's duration). They are forgotten,
   * as `clear` forgets a run: executing one again starts afresh, and runs
   * again what it had run (its tools included), so give a time after which
   * nobody will execute them again. The default: none.
   *
   * @since 0.3.0
   */
  readonly unfinishedBefore?: Date | Duration.Input | undefined
  /**
   * What is kept of each finished run (given with `finishedBefore` only; a
   * run that did not finish has no result, and is forgotten):
   * - `"nothing"` (the default): the run is forgotten, as `clear` forgets it;
   *   executing it again starts afresh.
   * - `"result"`: only the entries of the append that finished it (see
   *   {@link AppendOptions.finished}), and its fingerprint; executing it again
   *   returns its result without running anything.
   */
  readonly keep?: "nothing" | "result" | undefined
}

/**
 * What {@link Store.prune} did: the ids of the runs it forgot (`keep:
 * "nothing"`, and every run taken by `unfinishedBefore`) or cut down to their
 * result (`keep: "result"`; a run already cut down is not counted again).
 *
 * @since 0.2.0
 * @category models
 */
export interface Pruned {
  readonly runs: ReadonlyArray<string>
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
  /**
   * The entries of run `id` from entry `from` on (what {@link Store.read}
   * returns without its first `from` entries), oldest first, without taking
   * its lease and without reading those before it where the store can skip
   * them: none when the log holds no more than `from` entries. `from` is an
   * integer of at least 0 (`InvalidOptions` otherwise). A compacting append
   * or a `prune` renumbers a log's entries from 0 again (see
   * {@link readFrom}). A store without it is read whole by {@link readFrom}.
   *
   * @since 0.3.0
   */
  readonly readFrom?: (
    id: string,
    from: number
  ) => Effect.Effect<ReadonlyArray<string>, CheckpointError | InvalidRunId | InvalidOptions>
  /** Forgets run `id`, so executing it again starts afresh; fails with `RunInProgress` while it runs. */
  readonly clear: (id: string) => Effect.Effect<void, CheckpointError | RunInProgress | InvalidRunId>
  /**
   * Forgets the runs that finished before `finishedBefore`, or keeps only
   * their result, and forgets the runs that did not finish whose last
   * execution ended before `unfinishedBefore` (see {@link PruneOptions}). A
   * run in progress (its lease held) is left alone, finished or not, and so
   * is a log that is not a run's (a thread's). Options that cannot work fail
   * with `InvalidOptions` before anything is removed.
   *
   * @since 0.2.0
   */
  readonly prune: (options: PruneOptions) => Effect.Effect<Pruned, CheckpointError | InvalidOptions>
}

/**
 * The entries of run `id` in `store` from entry `from` on (see
 * {@link Store.readFrom}): through the store's `readFrom`, or, for a store
 * without one, its whole log read and cut. A reader that goes on from the
 * entries it read before reads again the last of them too, and compares it:
 * a log that was compacted or pruned since holds other entries at those
 * positions (or fewer), and is to be read from its start again.
 *
 * @example
 * ```ts
 * import { Checkpointer, CheckpointStore } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const store = yield* Checkpointer.Checkpointer
 *   yield* Effect.scoped(Effect.gen(function*() {
 *     const log = yield* store.open("run-1", { model: "gpt-5-mini" })
 *     yield* log.append(["{\"turn\":1}", "{\"turn\":2}", "{\"turn\":3}"])
 *   }))
 *   // A reader that has the first two entries: the second again (to compare), and what follows it.
 *   console.log(yield* CheckpointStore.readFrom(store, "run-1", 1)) // [ '{"turn":2}', '{"turn":3}' ]
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Checkpointer.layerMemory)))
 * ```
 *
 * @since 0.3.0
 * @category reading
 */
export const readFrom = (
  store: Store,
  id: string,
  from: number
): Effect.Effect<ReadonlyArray<string>, CheckpointError | InvalidRunId | InvalidOptions> =>
  store.readFrom !== undefined
    ? store.readFrom(id, from)
    : Effect.andThen(LogOffset.check(from), Effect.map(store.read(id), (entries) => entries.slice(from)))
