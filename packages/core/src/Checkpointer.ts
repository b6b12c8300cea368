/**
 * Where executions keep their progress: an append-only log of entries per
 * execution id, so an execution that crashed, was interrupted or died resumes
 * where it was when it is executed again with the same id.
 *
 * The service stores JSON text; what an entry means is its writer's business
 * (an `AgentLoop` run writes `AgentCheckpoint` entries). Appending writes only
 * the new entries, never the whole history again. Layers: over any
 * `KeyValueStore` ({@link layerKeyValueStore}: `KeyValueStore.layerMemory` in
 * tests, `layerFileSystem` as the embedded default on one machine), and over
 * any `SqlClient` ({@link layerSql}: PostgreSQL in production, SQLite or MySQL
 * too).
 *
 * One execution id has one writer at a time: each layer remembers the length
 * of the logs it wrote, so an append costs one write. Two processes executing
 * the same id at once is a mistake the SQL layer detects (a duplicate key)
 * and the key-value layer does not.
 *
 * @since 0.1.0
 */
import { Array as Arr, Context, Effect, Layer, Schema } from "effect"
import { KeyValueStore } from "effect/persistence"
import { SqlClient } from "effect/sql"

/** A checkpoint could not be read, written or cleared; `cause` says why. */
export class CheckpointError extends Schema.TaggedError<CheckpointError>()("CheckpointError", {
  operation: Schema.Literals(["read", "append", "clear"]),
  id: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/** The store of executions' logs. */
export class Checkpointer extends Context.Service<Checkpointer, {
  /** Every entry of execution `id`, oldest first; none for an execution that never ran (or was cleared). */
  readonly read: (id: string) => Effect.Effect<ReadonlyArray<string>, CheckpointError>
  /** Appends entries to execution `id`'s log, all or none. */
  readonly append: (id: string, entries: ReadonlyArray<string>) => Effect.Effect<void, CheckpointError>
  /** Forgets execution `id`: executing it again starts afresh. */
  readonly clear: (id: string) => Effect.Effect<void, CheckpointError>
}>()("@agentloop/core/Checkpointer") {}

const failed = (operation: CheckpointError["operation"], id: string) => (cause: unknown) =>
  new CheckpointError({
    operation,
    id,
    message: `could not ${operation} the checkpoint of "${id}": ${
      cause instanceof Error ? cause.message : String(cause)
    }`,
    cause
  })

const Length = Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))
const decodeLength = Schema.decodeUnknownEffect(Length)

/**
 * Keeps each execution's log in the `KeyValueStore` in context: entry `i` of
 * execution `id` under `<prefix><id>/<i>`, and the log's length under
 * `<prefix><id>/length` (written last, so a crash mid-append leaves the log as
 * it was). The default prefix is `@agentloop/checkpoints/`.
 */
export const layerKeyValueStore = (
  options: { readonly prefix?: string | undefined } = {}
): Layer.Layer<Checkpointer, never, KeyValueStore.KeyValueStore> =>
  Layer.effect(Checkpointer)(Effect.gen(function*() {
    const store = yield* KeyValueStore.KeyValueStore
    const prefix = options.prefix ?? "@agentloop/checkpoints/"
    const key = (id: string, suffix: string) => `${prefix}${encodeURIComponent(id)}/${suffix}`
    const lengths = new Map<string, number>()
    const length = (id: string) => {
      const known = lengths.get(id)
      if (known !== undefined) return Effect.succeed(known)
      return Effect.flatMap(store.get(key(id, "length")), (text) =>
        text === undefined ? Effect.succeed(0) : decodeLength(text))
    }

    return Checkpointer.of({
      read: (id) =>
        Effect.flatMap(length(id), (count) =>
          Effect.forEach(
            Array.from({ length: count }, (_, i) =>
              i),
            (i) =>
              Effect.flatMap(store.get(key(id, String(i))), (entry) =>
                entry === undefined
                  ? Effect.fail(new Error(`entry ${i} of ${count} is missing`))
                  : Effect.succeed(entry))
          )).pipe(
            Effect.mapError(failed("read", id))
          ),
      append: (id, entries) =>
        Effect.gen(function*() {
          if (entries.length === 0) {
            return
          }
          const start = yield* length(id)
          yield* Effect.forEach(entries, (entry, i) => store.set(key(id, String(start + i)), entry), { discard: true })
          yield* store.set(key(id, "length"), String(start + entries.length))
          lengths.set(id, start + entries.length)
        }).pipe(Effect.mapError(failed("append", id))),
      clear: (id) =>
        Effect.gen(function*() {
          const count = yield* length(id)
          lengths.delete(id)
          yield* store.remove(key(id, "length"))
          yield* Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => store.remove(key(id, String(i))), {
            discard: true
          })
        }).pipe(Effect.mapError(failed("clear", id)))
    })
  }))

/** An in-memory checkpointer, for tests: nothing survives the process. */
export const layerMemory: Layer.Layer<Checkpointer> = layerKeyValueStore().pipe(
  Layer.provide(KeyValueStore.layerMemory)
)

/**
 * Keeps each execution's log in a table of the database in context (created
 * when missing; `agentloop_checkpoints` by default): one row per entry, keyed
 * by execution id and position, an append's rows inserted by one statement.
 */
export const layerSql = (
  options: { readonly table?: string | undefined } = {}
): Layer.Layer<Checkpointer, CheckpointError, SqlClient.SqlClient> =>
  Layer.effect(Checkpointer)(Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const name = options.table ?? "agentloop_checkpoints"
    const table = sql(name)
    yield* sql.onDialectOrElse({
      mysql: () =>
        sql`CREATE TABLE IF NOT EXISTS ${table} (
          execution_id VARCHAR(191) NOT NULL, seq INTEGER NOT NULL, entry LONGTEXT NOT NULL,
          PRIMARY KEY (execution_id, seq))`,
      orElse: () =>
        sql`CREATE TABLE IF NOT EXISTS ${table} (
          execution_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL,
          PRIMARY KEY (execution_id, seq))`
    }).pipe(Effect.mapError(failed("append", name)))

    const Rows = Schema.Array(Schema.Struct({ entry: Schema.String }))
    const Next = Schema.Array(Schema.Struct({ next: Schema.Union([Schema.Number, Schema.NumberFromString]) }))
    const lengths = new Map<string, number>()
    const length = (id: string) => {
      const known = lengths.get(id)
      if (known !== undefined) return Effect.succeed(known)
      return Effect.map(
        Effect.flatMap(
          sql`SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM ${table} WHERE execution_id = ${id}`,
          Schema.decodeUnknownEffect(Next)
        ),
        ([row]) => row?.next ?? 0
      )
    }

    return Checkpointer.of({
      read: (id) =>
        sql`SELECT entry FROM ${table} WHERE execution_id = ${id} ORDER BY seq`.pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(Rows)),
          Effect.map((rows) => rows.map((row) => row.entry)),
          Effect.mapError(failed("read", id))
        ),
      append: (id, entries) =>
        Arr.isReadonlyArrayNonEmpty(entries)
          ? Effect.gen(function*() {
            const start = yield* length(id)
            const rows = Arr.map(entries, (entry, i) => ({ execution_id: id, seq: start + i, entry }))
            // One statement: every row or none.
            yield* sql`INSERT INTO ${table} ${sql.insert(rows)}`
            lengths.set(id, start + entries.length)
          }).pipe(
            Effect.tapError(() => Effect.sync(() => lengths.delete(id))),
            Effect.mapError(failed("append", id))
          )
          : Effect.void,
      clear: (id) =>
        sql`DELETE FROM ${table} WHERE execution_id = ${id}`.pipe(
          Effect.ensuring(Effect.sync(() => lengths.delete(id))),
          Effect.asVoid,
          Effect.mapError(failed("clear", id))
        )
    })
  }))
