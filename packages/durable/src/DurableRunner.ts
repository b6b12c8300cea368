/**
 * Where durable runs execute: effect's `ClusterWorkflowEngine` on a runner
 * whose mailboxes, replies and shard locks live in SQL.
 *
 * - {@link layerSqlite}: the embedded runner, one process over a SQLite file
 *   (`node:sqlite`), held exclusively (see `NodeSqliteClient`).
 * - {@link layerPg}: a runner of a group sharing one PostgreSQL database.
 *   Runners need no network between them: a run started anywhere is stored,
 *   and the runner that owns its shard picks it up; when a runner dies (its
 *   heartbeat stops, its locks go with its connection), the others take its
 *   shards over and finish its runs. A process with `runner: "client"` runs
 *   nothing and only starts, polls, approves and reads runs.
 * - {@link layer}: the same over any `SqlClient` already in context.
 *
 * Each provides the engine and the runs' `RunStore` (their event logs). With
 * `retention`, a runner also prunes finished runs on a schedule (see
 * `RunRetention`).
 *
 * The cluster settings are this module's defaults, overridden by `sharding`;
 * nothing is read from environment variables (effect's `SingleRunner.layer`
 * reads CONSTANT_CASE ones, where an application's own `PORT` would become the
 * runner's).
 *
 * @since 0.1.0
 */
import type * as InvalidOptions from "@agentloop/core/InvalidOptions"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as ClusterWorkflowEngine from "effect/cluster/ClusterWorkflowEngine"
import type * as MessageStorage from "effect/cluster/MessageStorage"
import * as RunnerAddress from "effect/cluster/RunnerAddress"
import * as RunnerHealth from "effect/cluster/RunnerHealth"
import * as Runners from "effect/cluster/Runners"
import * as Sharding from "effect/cluster/Sharding"
import * as ShardingConfig from "effect/cluster/ShardingConfig"
import * as SqlMessageStorage from "effect/cluster/SqlMessageStorage"
import * as SqlRunnerStorage from "effect/cluster/SqlRunnerStorage"
import * as Digest from "effect/crypto/Digest"
import * as Duration from "effect/Duration"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as SqlClient from "effect/sql/SqlClient"
import type * as SqlError from "effect/sql/SqlError"
import type * as WorkflowEngine from "effect/workflow/WorkflowEngine"
import * as NodeSqliteClient from "./NodeSqliteClient.ts"
import * as RunRetention from "./RunRetention.ts"
import * as RunStore from "./RunStore.ts"

/**
 * Settings shared by every runner layer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * The prefix of the tables (default `"agentloop"`): the cluster's
   * (`<prefix>_messages`, `<prefix>_runners`…) and the runs' event log.
   * Runners share runs exactly when they share a database and a prefix.
   */
  readonly prefix?: string | undefined
  /** Cluster settings over this module's {@link defaults}; the runner's address is its role's. */
  readonly sharding?: Partial<Omit<ShardingConfig.ShardingConfig["Service"], "runnerAddress">> | undefined
  /**
   * Prunes the runs that finished more than `finishedBefore` ago, every
   * `every` (default an hour) while the runner runs (a client prunes
   * nothing). Without it, finished runs are kept.
   *
   * @since 0.2.0
   */
  readonly retention?: RunRetention.Options | undefined
}

/**
 * What a process of a PostgreSQL group is.
 *
 * @since 0.1.0
 * @category models
 */
export type Role =
  /** A runner: `name` must be unique in the group (a host name, a pod name); it is the runner's address. */
  | { readonly name: string }
  /** Not a runner: starts, polls, approves and reads runs that the runners execute. */
  | "client"

/**
 * The cluster settings of this module, over effect's own defaults. Messages
 * and replies are read from storage every 100 ms (nothing pushes them between
 * runners), an idle run leaves memory after 30 s, and a shutdown waits at
 * most 5 s for a run in flight (effect's default is 15 s) before leaving it to
 * be resumed.
 *
 * A runner that dies is taken over within about 4 s (effect's default: 36 s):
 * its heartbeat is 3 s old at most when the others stop counting it
 * (`shardLockExpiration`, refreshed every second), and they look again every
 * second (`refreshAssignmentsInterval`). The price is a runner whose process
 * stalls for longer than `shardLockExpiration` (a long synchronous block, a
 * machine swapping) loses its runs to the others, which go on from their last
 * recorded step; raise it where such stalls happen.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults: Partial<ShardingConfig.ShardingConfig["Service"]> = {
  entityMessagePollInterval: Duration.millis(100),
  entityReplyPollInterval: Duration.millis(100),
  refreshAssignmentsInterval: Duration.seconds(1),
  shardLockExpiration: Duration.seconds(3),
  entityMaxIdleTime: Duration.seconds(30),
  entityTerminationTimeout: Duration.seconds(5)
}

/**
 * The workflow engine and the runs' own records (see `RunStore`), both over the same `SqlClient`.
 *
 * @since 0.1.0
 * @category models
 */
export type Services = WorkflowEngine.WorkflowEngine | RunStore.RunStore

const cluster = (
  options: Options,
  runnerAddress: Option.Option<RunnerAddress.RunnerAddress>
): Layer.Layer<
  WorkflowEngine.WorkflowEngine,
  SqlError.SqlError | InvalidOptions.InvalidOptions,
  SqlClient.SqlClient | RunStore.RunStore
> => {
  const prefix = options.prefix ?? "agentloop"
  const storage: Layer.Layer<
    MessageStorage.MessageStorage,
    never,
    SqlClient.SqlClient | ShardingConfig.ShardingConfig
  > = SqlMessageStorage.layerWith({ prefix }).pipe(Layer.provide(Digest.layerWebCrypto))
  // The pruner shares the engine's sharding and storage.
  const pruner = options.retention === undefined || Option.isNone(runnerAddress)
    ? Layer.empty
    : RunRetention.layer(options.retention)
  return Layer.merge(ClusterWorkflowEngine.layer, pruner).pipe(
    Layer.provide(Sharding.layer),
    Layer.provide(Runners.layerNoop),
    Layer.provide(storage),
    Layer.provide([SqlRunnerStorage.layerWith({ prefix }), RunnerHealth.layerNoop]),
    Layer.provide(ShardingConfig.layer({ ...defaults, ...options.sharding, runnerAddress }))
  )
}

/**
 * A runner over the `SqlClient` in context, named `name` (unique among the
 * processes that share the database and prefix), or a client when `"client"`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  role: Role,
  options: Options = {}
): Layer.Layer<
  Services,
  SqlError.SqlError | RunStore.RunStoreError | InvalidOptions.InvalidOptions,
  SqlClient.SqlClient
> =>
  cluster(options, role === "client" ? Option.none() : Option.some(RunnerAddress.make(role.name, 0))).pipe(
    Layer.provideMerge(RunStore.layer(options.prefix))
  )

/**
 * The embedded runner: this process owns `filename` (created when missing)
 * and runs every durable run stored in it. Runs left unfinished by an earlier
 * process resume when the layer starts. Fails with `DatabaseLocked` while
 * another process holds the file.
 *
 * @example
 * ```ts
 * import { DurableAgent, DurableRunner } from "@agentloop/durable"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 * import { mkdtempSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * const greeter = DurableAgent.make("greeter", { instructions: "Greet." })
 *
 * // The embedded runner: this process owns a SQLite file and runs (and resumes) the runs recorded in it.
 * const runner = greeter.layer.pipe(
 *   Layer.provideMerge(DurableRunner.layerSqlite({ filename: join(mkdtempSync(join(tmpdir(), "runs-")), "runs.db") })),
 *   Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")]))
 * )
 *
 * const program = Effect.gen(function*() {
 *   yield* greeter.start({ runId: "hello-1", input: "Hi" }) // does not wait
 *   const result = yield* greeter.run({ runId: "hello-1", input: "Hi" }) // joins the run
 *   if (result._tag === "Stopped") console.log(result.output) // Hello!
 * })
 * Effect.runPromise(program.pipe(Effect.provide(runner)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerSqlite = (
  options: NodeSqliteClient.Options & Options
): Layer.Layer<
  Services | SqlClient.SqlClient,
  | NodeSqliteClient.DatabaseLocked
  | NodeSqliteClient.DatabaseUnavailable
  | SqlError.SqlError
  | RunStore.RunStoreError
  | InvalidOptions.InvalidOptions
> => layer({ name: "embedded" }, options).pipe(Layer.provideMerge(NodeSqliteClient.layer(options)))

/**
 * A process of a group sharing the PostgreSQL database that `connection`
 * reaches: a runner named `role.name`, or a client.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerPg = (
  role: Role,
  connection: PgClient.PgClientConfig,
  options: Options = {}
): Layer.Layer<
  Services | SqlClient.SqlClient,
  SqlError.SqlError | RunStore.RunStoreError | InvalidOptions.InvalidOptions
> => layer(role, options).pipe(Layer.provideMerge(PgClient.layer(connection)))
