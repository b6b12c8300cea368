/**
 * Retention for durable runs: a run that finished (with a result, a
 * termination, or a defect, which the engine keeps as the run's result)
 * records when, and {@link layer} (what `DurableRunner`'s `retention` option
 * starts) forgets the runs that finished long enough ago, on a schedule, as a
 * fiber of the runner's scope.
 *
 * Forgetting a run removes, in one transaction, everything stored for it: the
 * engine's messages and replies for its workflow and its durable clocks, and
 * the run's own records (steps, event log, started calls, approvals, its
 * row). Executing it again with its id starts afresh. A run that has not
 * ended is never finished, so never pruned, however old: one that waits for
 * a decision (that may never come), a parked one (until it is unparked and
 * ends), one in flight; nor is a run whose execution began again after it
 * finished.
 *
 * @since 0.2.0
 */
import * as InvalidOptions from "@agentloop/core/InvalidOptions"
import * as Clock from "effect/Clock"
import * as ClusterSchema from "effect/cluster/ClusterSchema"
import * as EntityAddress from "effect/cluster/EntityAddress"
import * as EntityId from "effect/cluster/EntityId"
import * as EntityType from "effect/cluster/EntityType"
import { MessageStorage } from "effect/cluster/MessageStorage"
import { Sharding } from "effect/cluster/Sharding"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import { SqlClient } from "effect/sql/SqlClient"
import * as RunJournal from "./RunJournal.ts"
import { RunStore, RunStoreError } from "./RunStore.ts"
import type { RunKey } from "./RunStore.ts"

/**
 * How finished durable runs are pruned: those that finished more than
 * `finishedBefore` ago (a duration: `"30 days"`, milliseconds, any `Duration`
 * input), looked for every `every` (default {@link defaultEvery}), first when
 * the runner starts.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  readonly finishedBefore: Duration.Input
  readonly every?: Duration.Input | undefined
}

/**
 * How often the scheduled pruner looks for finished runs by default: every hour.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultEvery: Duration.Duration = Duration.hours(1)

/** Runs forgotten per batch: each is its own transaction. */
const batch = 100

/** The duration of `options`, checked: `InvalidOptions` names the first field that cannot work. */
const check = (options: Options) =>
  Effect.gen(function*() {
    const refused = InvalidOptions.first(
      options?.finishedBefore === undefined
        ? InvalidOptions.make({
          field: "retention.finishedBefore",
          value: undefined,
          expected: InvalidOptions.duration.expected
        })
        : InvalidOptions.check("retention.finishedBefore", options.finishedBefore, InvalidOptions.duration),
      InvalidOptions.check("retention.every", options?.every, InvalidOptions.positiveDuration)
    )
    if (refused !== undefined) return yield* Effect.fail(refused)
    return {
      age: Duration.fromInputUnsafe(options.finishedBefore),
      every: options.every === undefined ? defaultEvery : Duration.fromInputUnsafe(options.every)
    }
  })

/**
 * Records that the execution `executionId` of `run` finished now. A failure
 * to record it is logged, not raised: the run's result stands, and the run is
 * only kept longer.
 *
 * @since 0.2.0
 * @category executing
 */
export const finished = (run: RunKey, executionId: string): Effect.Effect<void, never, RunStore> =>
  Effect.gen(function*() {
    const store = yield* RunStore
    const now = yield* Clock.currentTimeMillis
    yield* store.finished(run, executionId, now).pipe(
      Effect.retry(RunJournal.retry),
      Effect.catch((error) =>
        Effect.logWarning(`run ${JSON.stringify(run.runId)} finished, but could not be marked so: ${error.message}`)
      )
    )
  })

/**
 * Forgets the durable runs that finished before `before` (epoch
 * milliseconds): their records and the engine's, one transaction per run.
 * Returns the runs forgotten.
 */
const prune = (
  before: number
): Effect.Effect<ReadonlyArray<RunKey>, RunStoreError, RunStore | MessageStorage | Sharding | SqlClient> =>
  Effect.gen(function*() {
    const store = yield* RunStore
    const storage = yield* MessageStorage
    const sharding = yield* Sharding
    const sql = yield* SqlClient
    // Durable agents' workflows have no shard group of their own: the default one.
    const group = Context.get(Context.empty(), ClusterSchema.ShardGroup)
    const address = (entityType: string, executionId: string) => {
      const entityId = EntityId.make(executionId)
      return EntityAddress.make({
        entityType: EntityType.make(entityType),
        entityId,
        shardId: sharding.getShardId(entityId, group(entityId))
      })
    }
    const forgotten: Array<RunKey> = []
    while (true) {
      const expired = yield* store.expired(before, batch)
      for (const row of expired) {
        const run = { agent: row.agent, runId: row.run_id }
        const gone = yield* sql.withTransaction(Effect.gen(function*() {
          const gone = yield* store.forget(run, before)
          if (!gone) return false
          yield* storage.clearAddress(address(`Workflow/${row.agent}`, row.execution_id))
          yield* storage.clearAddress(address("Workflow/-/DurableClock", row.execution_id))
          return true
        })).pipe(
          Effect.mapError((error) =>
            error instanceof RunStoreError ? error : new RunStoreError({ operation: "prune", message: error.message })
          )
        )
        if (gone) forgotten.push(run)
      }
      if (expired.length < batch) return forgotten
    }
  })

/**
 * Prunes finished durable runs on a schedule while the layer's scope is open
 * (see {@link Options}); a prune that fails is logged and tried again at the
 * next beat. Options that cannot work fail the layer with `InvalidOptions`.
 *
 * @example
 * ```ts
 * import { DurableRunner } from "@agentloop/durable"
 * import { Effect, Layer } from "effect"
 * import { mkdtempSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * // A runner that forgets the runs that finished more than 30 days ago, looking every hour.
 * const runner = DurableRunner.layerSqlite({
 *   filename: join(mkdtempSync(join(tmpdir(), "runs-")), "runs.db"),
 *   retention: { finishedBefore: "30 days", every: "1 hour" }
 * })
 * Effect.runPromise(Effect.scoped(Layer.build(runner))).then(() => console.log("pruned on a schedule"))
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (
  options: Options
): Layer.Layer<never, InvalidOptions.InvalidOptions, RunStore | MessageStorage | Sharding | SqlClient> =>
  Layer.effectDiscard(Effect.gen(function*() {
    const { age, every } = yield* check(options)
    const once = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const forgotten = yield* prune(now - Duration.toMillis(age))
      if (forgotten.length > 0) yield* Effect.logDebug(`pruned ${forgotten.length} finished durable runs`)
    }).pipe(Effect.catch((error) => Effect.logWarning(`pruning finished durable runs failed: ${error.message}`)))
    yield* Effect.forkScoped(Effect.repeat(once, Schedule.spaced(every)))
  }))
