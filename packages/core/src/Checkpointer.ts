/**
 * Where runs keep their progress: an append-only log of entries per run id,
 * so a run that crashed, was interrupted or died resumes where it was when it
 * is executed again with the same id.
 *
 * The service stores JSON text; what an entry means is its writer's business
 * (an `AgentLoop` run writes `AgentCheckpoint` entries, a step program its
 * ledger). A writer opens a run's log (see `CheckpointStore`): it takes the
 * run's lease, so one executor at a time writes it and a second one gets
 * `RunInProgress`; it checks the run's fingerprint, so the same id executed
 * with another input fails with `CheckpointMismatch`; and its appends are
 * ordered even when they run at once, each durable once it succeeds.
 *
 * Retention: a writer marks the append that finishes a run (see
 * `AppendOptions.finished`; `AgentLoop` runs and step programs do), and
 * {@link prune} forgets the runs that finished before a time, or keeps only
 * their result, and forgets the runs that did not finish whose last execution
 * ended before another, leaving alone any run whose lease is held and the
 * threads' logs.
 *
 * Layers:
 * - {@link layerFileSystem}: the embedded default on one machine, a folder of
 *   append-only log files (one write and one sync per append, nothing
 *   rewritten in place; a torn last record is cut off, any other damage
 *   reported);
 * - {@link layerSql}: PostgreSQL when runs are shared between machines
 *   (SQLite works too), passing failures retried;
 * - {@link layerMemory} for tests, and {@link layerKeyValueStore} over any
 *   `KeyValueStore` a single process owns.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import type * as Path from "effect/Path"
import { KeyValueStore } from "effect/persistence"
import * as Schedule from "effect/Schedule"
import type { SqlClient } from "effect/sql"
import type { CheckpointError, Pruned, PruneOptions, Store } from "./CheckpointStore.ts"
import * as FileStore from "./internal/fileStore.ts"
import * as KeyValueStoreStore from "./internal/keyValueStore.ts"
import * as SqlStore from "./internal/sqlStore.ts"
import type { InvalidOptions } from "./InvalidOptions.ts"

export {
  /** A checkpoint could not be opened, read, written or cleared. */
  CheckpointError,
  /** A run was recorded with another fingerprint. */
  CheckpointMismatch,
  /** Another executor holds the run's lease. */
  RunInProgress
} from "./CheckpointStore.ts"

export {
  /** A record's version is one no migration brings to the version this app reads (see `CheckpointVersion`). */
  CheckpointVersionMismatch
} from "./CheckpointVersion.ts"

/**
 * The store of runs' logs.
 *
 * @since 0.1.0
 * @category services
 */
export class Checkpointer extends Context.Service<Checkpointer, Store>()("@agentloop/core/Checkpointer") {}

/**
 * How long a lease lasts when its owner stops renewing it (default: 10
 * seconds). Its owner renews it every third of that; a run whose executor died
 * can be taken over once it lapses.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultLease: Duration.Duration = Duration.seconds(10)

const defaultOwner = typeof globalThis.process?.pid === "number" ? `pid ${globalThis.process.pid}` : "an executor"

/**
 * The options every lease-taking layer has.
 *
 * @since 0.2.0
 * @category models
 */
export interface LeaseOptions {
  /** How long a lease outlives its owner's last renewal (default {@link defaultLease}). */
  readonly lease?: Duration.Input | undefined
  /** Who this process is, in a `RunInProgress` another executor gets (default: `pid <n>`). */
  readonly owner?: string | undefined
}

/**
 * Keeps each run's log in a folder of `directory` (created when missing) with
 * the `FileSystem` and `Path` in context (`NodeFileSystem.layer` and
 * `NodePath.layer` on Node): the embedded default on one machine, for any
 * number of processes sharing the folder.
 *
 * Each append is one write and one sync of the log: once it succeeds, the
 * entry survives the process and a power cut (`sync: false` keeps it through a
 * crashed process only, and writes faster). Files are named after a digest of
 * the run id, so any valid id works.
 *
 * @example
 * ```ts
 * import { Checkpointer } from "@agentloop/core"
 * import { NodeFileSystem, NodePath } from "@effect/platform-node"
 * import { Layer } from "effect"
 *
 * const Checkpoints = Checkpointer.layerFileSystem("./checkpoints").pipe(
 *   Layer.provide(NodeFileSystem.layer),
 *   Layer.provide(NodePath.layer)
 * )
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layerFileSystem = (
  directory: string,
  options: LeaseOptions & { readonly sync?: boolean | undefined } = {}
): Layer.Layer<Checkpointer, never, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(Checkpointer)(FileStore.make({
    directory,
    lease: Duration.fromInputUnsafe(options.lease ?? defaultLease),
    owner: options.owner ?? defaultOwner,
    sync: options.sync ?? true
  }))

/**
 * Keeps each run's log in the `KeyValueStore` in context: entry `i` of run
 * `id` under `<prefix><id>/<i>`, the log's length under `<prefix><id>/length`,
 * its fingerprint under `<prefix><id>/fingerprint`. The default prefix is
 * `@agentloop/checkpoints/`.
 *
 * A key-value store has neither locks nor atomic appends: runs are kept apart
 * within this process only, and a store that rewrites a key in place may lose
 * a log's length in a crash. Use it in memory or over a store one process
 * owns; {@link layerFileSystem} for files.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerKeyValueStore = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<Checkpointer, never, KeyValueStore.KeyValueStore> =>
  Layer.effect(Checkpointer)(KeyValueStoreStore.make(options.prefix ?? "@agentloop/checkpoints/"))

/**
 * An in-memory checkpointer, for tests: nothing survives the process.
 *
 * @example
 * ```ts
 * import { AgentLoop, Checkpointer } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 *
 * // A run with an id records its progress; run again, a finished run answers from its log.
 * const run = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
 *   Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run({ input: "Hi", runId: "greeting-1" })).pipe(
 *     Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(script))))
 *   )
 *
 * const program = Effect.gen(function*() {
 *   const first = yield* run([MockLanguageModel.textTurn("Hello!")])
 *   const again = yield* run([]) // the model is not asked again
 *   if (first._tag === "Stopped" && again._tag === "Stopped") console.log(first.output, again.output) // Hello! Hello!
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Checkpointer.layerMemory)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<Checkpointer> = layerKeyValueStore().pipe(
  Layer.provide(KeyValueStore.layerMemory)
)

/**
 * How a SQL statement that failed for a passing reason (a dropped connection,
 * a deadlock, a timeout) is tried again by default: six more times, waiting
 * 100 ms and doubling (about 6 s in all).
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultRetry: Schedule.Schedule<unknown, unknown> = Schedule.max([
  Schedule.exponential(Duration.millis(100), 2),
  Schedule.recurs(6)
])

/**
 * Keeps each run's log in the database in context (PostgreSQL, or SQLite):
 * a table of entries (`agentloop_checkpoints` by default) and a table of runs
 * with their fingerprints and leases (the same name with `_runs`), created
 * when missing.
 *
 * Each append is one statement that writes only while this executor holds
 * the run's lease. A statement that fails for a passing reason is tried again
 * (`retry`, default {@link defaultRetry}); an append that landed before its
 * connection dropped is recognised, not written twice.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSql = (
  options: LeaseOptions & {
    readonly table?: string | undefined
    readonly retry?: Schedule.Schedule<unknown, unknown> | undefined
  } = {}
): Layer.Layer<Checkpointer, CheckpointError, SqlClient.SqlClient> =>
  Layer.effect(Checkpointer)(SqlStore.make({
    table: options.table ?? "agentloop_checkpoints",
    lease: Duration.fromInputUnsafe(options.lease ?? defaultLease),
    owner: options.owner ?? defaultOwner,
    retry: options.retry ?? defaultRetry
  }))

/**
 * Prunes the runs of the `Checkpointer` in context (give `finishedBefore`,
 * `unfinishedBefore`, or both; each a `Date`, or a duration before now):
 *
 * - the runs that finished before `finishedBefore` are forgotten, or, with
 *   `keep: "result"`, keep only the entries that finished each of them:
 *   executing such a run again returns its result without running anything,
 *   where a forgotten one starts afresh;
 * - the runs that did not finish (an error termination, an interruption, a
 *   failed step program, a process that died) whose last execution ended
 *   before `unfinishedBefore` are forgotten: executing one again starts
 *   afresh, and runs again what it had run. An execution ends when it
 *   releases the run's lease, or when the lease of an executor that died
 *   lapses.
 *
 * A run whose lease is held (in progress) is never touched, whatever the
 * time given, and neither is a thread's log. Options that cannot work fail
 * with `InvalidOptions`, before anything is removed. Returns the ids pruned.
 *
 * @example
 * ```ts
 * import { Checkpointer } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // Finished runs go after 30 days, those that did not finish after 90 days without running;
 * // finished runs over a week old keep only their result.
 * const retention = Effect.gen(function*() {
 *   const { runs } = yield* Checkpointer.prune({ finishedBefore: "30 days", unfinishedBefore: "90 days" })
 *   yield* Checkpointer.prune({ finishedBefore: "7 days", keep: "result" })
 *   yield* Effect.log(`${runs.length} runs forgotten`)
 * }).pipe(Effect.provide(Checkpointer.layerMemory))
 * ```
 *
 * @since 0.2.0
 * @category retention
 */
export const prune = (options: PruneOptions): Effect.Effect<Pruned, CheckpointError | InvalidOptions, Checkpointer> =>
  Effect.flatMap(Checkpointer, (store) => store.prune(options))
