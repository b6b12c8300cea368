/**
 * An `effect/sql` `SqlClient` over Node's built-in `node:sqlite` (Node ≥ 22,
 * no native build): the storage of the embedded durable runner.
 *
 * One connection serves every statement, one at a time; statements are
 * prepared once and kept (the most recently used, see `statementCacheSize`),
 * transaction controls included. The database is opened
 * in SQLite's exclusive locking mode and locked at once: a second process that
 * opens the same file fails with {@link DatabaseLocked} instead of acting as a
 * second owner of the same runs (two owners would run the same tool twice).
 * The operating system releases the lock when the process ends, however it
 * ends, so a process started after a crash takes the file over.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Reactivity } from "effect/reactivity"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import { SqlClient, SqlError, Statement } from "effect/sql"
import type { SqlConnection } from "effect/sql"
import * as Stream from "effect/Stream"
import { DatabaseSync } from "node:sqlite"
import type { SQLInputValue, StatementSync } from "node:sqlite"

/**
 * How to open the database.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The database file; created when missing. */
  readonly filename: string
  /**
   * `"FULL"` (the default) syncs every commit to disk, so a committed step
   * survives a power cut; `"NORMAL"` survives a crashed process only, and
   * writes faster.
   */
  readonly synchronous?: "FULL" | "NORMAL" | undefined
  /** How many prepared statements to keep (default 200). */
  readonly statementCacheSize?: number | undefined
}

/**
 * Another process holds the database: the embedded runner is single-process (share PostgreSQL to run several).
 *
 * @since 0.1.0
 * @category errors
 */
export class DatabaseLocked extends Schema.TaggedError<DatabaseLocked>()("DatabaseLocked", {
  filename: Schema.String
}) {
  override get message() {
    return `another process holds the SQLite database ${this.filename}: one process at a time may run durable work on it`
  }
}

/**
 * The database could not be opened or prepared (a bad path, a file that is not a database…).
 *
 * @since 0.1.0
 * @category errors
 */
export class DatabaseUnavailable extends Schema.TaggedError<DatabaseUnavailable>()("DatabaseUnavailable", {
  filename: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot open the SQLite database ${this.filename}: ${this.reason}`
  }
}

const sqliteCode = (cause: unknown): number | undefined =>
  typeof cause === "object" && cause !== null && "errcode" in cause && typeof cause.errcode === "number"
    ? cause.errcode
    : undefined

const describe = (cause: unknown): string => cause instanceof Error ? cause.message : String(cause)

/** SQLite reports the numeric result code as `errcode`; effect's classifier reads `errno`. */
const sqlError = (cause: unknown, operation: string) => {
  const errno = sqliteCode(cause)
  return new SqlError.SqlError({
    reason: SqlError.classifySqliteError(errno === undefined ? cause : { cause, errno, message: describe(cause) }, {
      message: `SQLite ${operation} failed: ${describe(cause)}`,
      operation
    })
  })
}

const SQLITE_BUSY = 5

/** A statement parameter as SQLite stores it. */
const toSqlite = (value: unknown): SQLInputValue => {
  if (value === null || value === undefined) return null
  switch (typeof value) {
    case "string":
    case "number":
    case "bigint":
      return value
    case "boolean":
      return value ? 1 : 0
    default:
      if (value instanceof Uint8Array) return value
      if (value instanceof Date) return value.toISOString()
      throw new TypeError(`a SQLite parameter cannot be ${Object.prototype.toString.call(value)}`)
  }
}

/**
 * Opens `options.filename`, takes its lock, and builds the client; the database closes with the scope.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options
): Effect.Effect<SqlClient.SqlClient, DatabaseLocked | DatabaseUnavailable, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const { filename } = options
    const db = yield* Effect.acquireRelease(
      Effect.try({
        try: () => new DatabaseSync(filename),
        catch: (cause) => new DatabaseUnavailable({ filename, reason: describe(cause) })
      }),
      (db) => Effect.sync(() => db.isOpen && db.close())
    )
    yield* Effect.try({
      try: () => {
        // Exclusive locking mode before WAL: no shared-memory index, and the lock is held until close.
        db.exec("PRAGMA busy_timeout = 0")
        db.exec("PRAGMA locking_mode = EXCLUSIVE")
        db.exec("PRAGMA journal_mode = WAL")
        db.exec("BEGIN EXCLUSIVE; COMMIT")
        db.exec(`PRAGMA synchronous = ${options.synchronous ?? "FULL"}`)
      },
      catch: (cause) =>
        sqliteCode(cause) === SQLITE_BUSY
          ? new DatabaseLocked({ filename })
          : new DatabaseUnavailable({ filename, reason: describe(cause) })
    })

    // The most recently used statements, by their text. A hit only stamps its entry; the least recently used one
    // is looked for when the cache overflows, which statements that repeat their text never make it do.
    const capacity = Math.max(1, options.statementCacheSize ?? 200)
    const statements = new Map<string, { readonly prepared: StatementSync; used: number }>()
    let clock = 0
    const statement = (sql: string): StatementSync => {
      const cached = statements.get(sql)
      if (cached !== undefined) {
        cached.used = ++clock
        return cached.prepared
      }
      const prepared = db.prepare(sql)
      if (statements.size >= capacity) {
        let oldest: string | undefined
        let oldestUse = Infinity
        for (const [text, entry] of statements) {
          if (entry.used < oldestUse) {
            oldest = text
            oldestUse = entry.used
          }
        }
        if (oldest !== undefined) statements.delete(oldest)
      }
      statements.set(sql, { prepared, used: ++clock })
      return prepared
    }

    // Whether a statement returns rows, by statement: `columns()` allocates a description of each column.
    const returnsRows = new WeakMap<StatementSync, boolean>()

    const runWith = (
      sql: string,
      params: ReadonlyArray<unknown>,
      arrays: boolean
    ): Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError> =>
      Effect.withFiber((fiber) => {
        let prepared: StatementSync
        try {
          prepared = statement(sql)
        } catch (cause) {
          return Effect.fail(sqlError(cause, "prepare"))
        }
        try {
          const values = params.map(toSqlite)
          prepared.setReadBigInts(Context.get(fiber.context, SqlClient.SafeIntegers))
          prepared.setReturnArrays(arrays)
          let rows = returnsRows.get(prepared)
          if (rows === undefined) {
            rows = prepared.columns().length > 0
            returnsRows.set(prepared, rows)
          }
          if (!rows) {
            prepared.run(...values)
            return Effect.succeed([])
          }
          const all = prepared.all(...values)
          // node:sqlite returns null-prototype objects; callers expect plain ones.
          return Effect.succeed(arrays ? all : all.map((row) => ({ ...row })))
        } catch (cause) {
          return Effect.fail(sqlError(cause, "execute"))
        }
      })

    // The statements that effect's SQL client asks for unprepared (transaction controls, statements with
    // inline lists) repeat their text too: every statement goes through the cache.
    const prepared = (sql: string, params: ReadonlyArray<unknown>, arrays: boolean) => runWith(sql, params, arrays)
    const unprepared = prepared

    const rows = (effect: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>) =>
      Effect.map(effect, (rows) => rows.filter((row): row is object => typeof row === "object" && row !== null))

    const arrays = (effect: Effect.Effect<ReadonlyArray<unknown>, SqlError.SqlError>) =>
      Effect.map(effect, (rows) => rows.filter((row): row is ReadonlyArray<unknown> => Array.isArray(row)))

    const connection: SqlConnection.Connection = {
      execute: (sql, params, transformRows) => {
        const result = rows(prepared(sql, params, false))
        return transformRows === undefined ? result : Effect.map(result, transformRows)
      },
      executeRaw: (sql, params) => prepared(sql, params, false),
      executeStream: (sql, params, transformRows) =>
        Stream.fromIterableEffect(
          transformRows === undefined
            ? rows(prepared(sql, params, false))
            : Effect.map(rows(prepared(sql, params, false)), transformRows)
        ),
      executeValues: (sql, params) => arrays(prepared(sql, params, true)),
      executeValuesUnprepared: (sql, params) => arrays(unprepared(sql, params, true)),
      executeUnprepared: (sql, params, transformRows) => {
        const result = rows(unprepared(sql, params, false))
        return transformRows === undefined ? result : Effect.map(result, transformRows)
      }
    }

    const acquirers = SqlClient.makeSqliteAcquirers({
      connection: Effect.succeed(connection),
      semaphore: yield* Semaphore.make(1),
      isTransaction: () => db.isTransaction
    })
    return yield* SqlClient.make({
      acquirer: acquirers.acquirer,
      borrower: acquirers.borrower,
      transactionAcquirer: acquirers.transactionAcquirer,
      onCommitFailure: acquirers.onCommitFailure,
      isTransaction: acquirers.isTransaction,
      compiler: Statement.makeCompilerSqlite(),
      driver: "sqlite",
      beginTransaction: "BEGIN IMMEDIATE",
      prepareTransactionControls: true,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
      spanAttributes: [["db.system.name", "sqlite"]]
    })
  })

/**
 * The `SqlClient` of the database at `options.filename`, held by this process while the layer lives.
 *
 * @example
 * ```ts
 * import { NodeSqliteClient } from "@agentloop/durable"
 * import { Effect } from "effect"
 * import { SqlClient } from "effect/sql"
 * import { mkdtempSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * const filename = join(mkdtempSync(join(tmpdir(), "sqlite-")), "runs.db")
 *
 * const program = Effect.gen(function*() {
 *   const sql = yield* SqlClient.SqlClient
 *   yield* sql`CREATE TABLE notes (text TEXT)`
 *   yield* sql`INSERT INTO notes ${sql.insert({ text: "hello" })}`
 *   console.log(yield* sql`SELECT text FROM notes`) // [ { text: 'hello' } ]
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(NodeSqliteClient.layer({ filename }))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<SqlClient.SqlClient, DatabaseLocked | DatabaseUnavailable> =>
  Layer.effect(SqlClient.SqlClient)(make(options)).pipe(Layer.provide(Reactivity.layer))
