/**
 * The SQL store (PostgreSQL, SQLite): a table of entries, one row per entry
 * keyed by run id and position, and a table of runs holding each run's
 * fingerprint and lease (its owner and expiry).
 *
 * - A lease is taken by one statement (an insert, or an update of a lapsed
 *   lease), so of two executors exactly one gets it.
 * - An append is one statement that inserts its rows only while the writer
 *   still holds the lease (and returns them), at the positions after the last:
 *   a writer that lost its lease, or another writer at the same positions,
 *   fails instead of mixing two runs' entries.
 * - A compacting append inserts its rows and deletes those before them in one
 *   transaction; positions keep counting up, so an append tried again after
 *   a dropped connection is still recognised.
 * - The append that finishes a run (see `AppendOptions.finished`) also sets,
 *   in the same transaction, when it finished (`finished_at`, indexed as
 *   `<table>_runs_finished`, so `prune` finds the runs to expire without
 *   reading the others) and the position of its first result entry
 *   (`result_from`); an append that goes on after it clears both. `prune` deletes a run's row and entries, or its
 *   entries before `result_from`, in one transaction, only while nobody holds
 *   its lease.
 * - A lease that is released records when (`expires_at` is set to minus that
 *   time: lapsed by every clock), and one whose holder died lapses at its
 *   last renewal plus the lease's duration, so `abs(expires_at)` of a run
 *   nobody holds is when its last execution ended. The runs that did not
 *   finish are indexed by it (`<table>_runs_unfinished`, a partial index
 *   without the threads' logs), so a prune of those reads only the runs it
 *   forgets. A lease released by an earlier version holds 0: the first prune
 *   that looks dates it now.
 * - A statement that fails for a passing reason (a dropped connection, a
 *   deadlock, a timeout) is tried again, a bounded number of times. An append
 *   whose rows did land before the failure is recognised when tried again
 *   (the same rows are there), so nothing is written or run twice.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { SqlClient, SqlError } from "effect/sql"
import type * as Statement from "effect/sql/Statement"
import { CheckpointMismatch, RunInProgress } from "../CheckpointStore.ts"
import type { CheckpointError, Log, OpenError, PruneOptions, Store } from "../CheckpointStore.ts"
import * as RunFingerprint from "../RunFingerprint.ts"
import * as RunId from "../RunId.ts"
import * as GroupCommit from "./groupCommit.ts"
import * as LeaseKeeper from "./leaseKeeper.ts"
import * as LogOffset from "./logOffset.ts"
import * as Retention from "./retention.ts"
import { failed } from "./storeFailure.ts"

/** How the SQL store is set up. */
export interface Options {
  /** The table of entries; the table of runs is named after it, with `_runs`. */
  readonly table: string
  readonly lease: Duration.Duration
  /** Who takes leases: a name for people (a host and process), made unique per open. */
  readonly owner: string
  /** How a statement that failed for a passing reason is tried again. */
  readonly retry: Schedule.Schedule<unknown, unknown>
}

// Drivers return a BIGINT as a number, a string or a bigint.
const Integer = Schema.Union([Schema.Number, Schema.NumberFromString, Schema.BigInt])
const Entries = Schema.Array(Schema.Struct({ seq: Integer, entry: Schema.String }))
const Holders = Schema.Array(Schema.Struct({
  owner: Schema.String,
  expires_at: Integer,
  fingerprint: Schema.String,
  finished_at: Schema.NullOr(Integer)
}))
const Positions = Schema.Array(Schema.Struct({ seq: Integer }))
const Ids = Schema.Array(Schema.Struct({ execution_id: Schema.String }))
const FingerprintJson = Schema.fromJsonString(RunFingerprint.Fingerprint)

/** The most entries one statement of an append inserts. */
const rowsPerStatement = 100

/** The most runs one transaction of a prune forgets. */
const runsPerBatch = 500

/** A failure that may pass: the same statement may succeed when tried again. */
const isTransient = (error: unknown): boolean => SqlError.isSqlError(error) && error.isRetryable

const isUniqueViolation = (error: unknown): boolean =>
  SqlError.isSqlError(error) && error.reason._tag === "UniqueViolation"

let opened = 0

/** Builds the SQL store over the `SqlClient` in context, creating its tables when missing. */
export const make = (options: Options): Effect.Effect<Store, CheckpointError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()
    const entries = sql(options.table)
    const runs = sql(`${options.table}_runs`)
    const ttl = Duration.toMillis(options.lease)
    const retrying = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.retry(effect, { schedule: options.retry, while: isTransient })

    /**
     * A statement that makes something when it is missing, run again once when it fails: two processes making
     * the same table or index at once, PostgreSQL refuses the second (a unique catalog, a type that exists) only
     * once the first has made it, so the second try finds it made. A failure of any other kind fails twice.
     */
    const settled = <A, E, R>(statement: Effect.Effect<A, E, R>) => retrying(Effect.catch(statement, () => statement))
    yield* Effect.all([
      settled(sql`CREATE TABLE IF NOT EXISTS ${entries} (
        execution_id TEXT NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL,
        PRIMARY KEY (execution_id, seq))`),
      settled(sql`CREATE TABLE IF NOT EXISTS ${runs} (
        execution_id TEXT NOT NULL PRIMARY KEY, fingerprint TEXT NOT NULL, owner TEXT NOT NULL,
        expires_at BIGINT NOT NULL, finished_at BIGINT, result_from BIGINT)`)
    ], { discard: true }).pipe(Effect.mapError(failed("open", options.table)))
    // A table of runs made before runs were marked finished gains the columns (another process may add them first).
    const marks = sql`SELECT finished_at, result_from FROM ${runs} WHERE 1 = 0`
    yield* Effect.catch(marks, () =>
      Effect.all([
        Effect.ignore(sql`ALTER TABLE ${runs} ADD COLUMN finished_at BIGINT`),
        Effect.ignore(sql`ALTER TABLE ${runs} ADD COLUMN result_from BIGINT`),
        marks
      ])).pipe(Effect.mapError(failed("open", options.table)))
    // Indexes are made in their table's schema: named bare, dropped by their schema's name.
    const [indexName, inSchema] = ((parts) =>
      [
        (suffix: string) => sql(`${parts.at(-1)}_runs_${suffix}`),
        (suffix: string) => sql([...parts.slice(0, -1), `${parts.at(-1)}_runs_${suffix}`].join("."))
      ] as const)(options.table.split("."))
    // A literal, not a parameter: a partial index serves a query whose condition is the index's own, word for word.
    const isRun = sql.literal(
      `substr(execution_id, 1, ${Retention.threadPrefix.length}) <> '${Retention.threadPrefix}'`
    )
    const unfinished = sql`finished_at IS NULL AND ${isRun}`
    // Each kind of prune reads only the runs it takes: the finished by when they finished, the others by when
    // their last execution ended. Neither index holds the other's runs (SQLite would otherwise look for the
    // unfinished in the index of `finished_at`, null for them all); the index of every run's `finished_at`, which
    // tables made by the version before this one have, goes.
    yield* Effect.all([
      settled(
        sql`CREATE INDEX IF NOT EXISTS ${indexName("finished")} ON ${runs} (finished_at) WHERE finished_at IS NOT NULL`
      ),
      settled(
        sql`CREATE INDEX IF NOT EXISTS ${indexName("unfinished")} ON ${runs} (abs(expires_at)) WHERE ${unfinished}`
      ),
      settled(sql`DROP INDEX IF EXISTS ${inSchema("finished_at")}`)
    ], { discard: true }).pipe(Effect.mapError(failed("open", options.table)))

    const holder = (id: string) =>
      Effect.map(
        Effect.flatMap(
          sql`SELECT owner, expires_at, fingerprint, finished_at FROM ${runs} WHERE execution_id = ${id}`,
          Schema.decodeUnknownEffect(Holders)
        ),
        (rows) => rows[0]
      )

    /**
     * Takes run `id`'s lease as `owner`, recording `fingerprint` for a new run: the fingerprint recorded, and
     * whether the run is marked finished.
     */
    const acquire = (id: string, owner: string, fingerprint: RunFingerprint.Fingerprint) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const recorded = yield* Schema.encodeEffect(FingerprintJson)(fingerprint)
        yield* retrying(sql`INSERT INTO ${runs} (execution_id, fingerprint, owner, expires_at)
          VALUES (${id}, ${recorded}, ${owner}, ${now + ttl})
          ON CONFLICT (execution_id) DO UPDATE SET owner = ${owner}, expires_at = ${now + ttl}
          WHERE ${runs}.expires_at <= ${now}`)
        const held = yield* retrying(holder(id))
        if (held === undefined) return yield* Effect.fail(new Error("the run's lease vanished as it was taken"))
        if (held.owner !== owner) {
          return yield* new RunInProgress({ id, owner: held.owner, expiresAt: Number(held.expires_at) })
        }
        const decoded = yield* Schema.decodeUnknownEffect(FingerprintJson)(held.fingerprint)
        return { fingerprint: decoded, finished: held.finished_at !== null }
      }).pipe(Effect.mapError((error) => error instanceof RunInProgress ? error : failed("open", id)(error)))

    const extend = (id: string, owner: string, expiresAt: Effect.Effect<number>) =>
      Effect.flatMap(expiresAt, (at) =>
        Effect.map(
          retrying(sql`UPDATE ${runs} SET expires_at = ${at} WHERE execution_id = ${id} AND owner = ${owner}
            RETURNING owner`),
          (rows) => rows.length > 0
        ))

    /** Holds run `id`'s lease until the scope closes; the fingerprint the run was recorded with. */
    const hold = (id: string, fingerprint: RunFingerprint.Fingerprint) =>
      Effect.gen(function*() {
        const owner = `${options.owner}#${++opened}.${Math.random().toString(36).slice(2, 8)}`
        const { fingerprint: recorded, finished } = yield* Effect.uninterruptible(acquire(id, owner, fingerprint))
        const kept = yield* LeaseKeeper.keep({
          ttl: options.lease,
          renew: extend(id, owner, Effect.map(Clock.currentTimeMillis, (now) => now + ttl)),
          // Released, the lease says when the execution ended (see `prune`).
          release: extend(id, owner, Retention.releasedExpiry)
        })
        return { owner, recorded, finished, kept }
      })

    const rows = (id: string) =>
      Effect.flatMap(
        sql`SELECT seq, entry FROM ${entries} WHERE execution_id = ${id} ORDER BY seq`,
        Schema.decodeUnknownEffect(Entries)
      )

    /** Run `id`'s rows after its first `from` (positions count on past a compaction: the log's `from`th is not at `from`). */
    const rowsFrom = (id: string, from: number) =>
      Effect.flatMap(
        sql`SELECT seq, entry FROM ${entries} WHERE execution_id = ${id} ORDER BY seq ${
          sql.onDialectOrElse({ sqlite: () => sql`LIMIT -1 OFFSET ${from}`, orElse: () => sql`OFFSET ${from}` })
        }`,
        Schema.decodeUnknownEffect(Entries)
      )

    const open = (
      id: string,
      fingerprint: RunFingerprint.Fingerprint
    ): Effect.Effect<Log, OpenError, Scope.Scope> =>
      Effect.gen(function*() {
        yield* RunId.validate(id)
        const { finished, kept, owner, recorded } = yield* hold(id, fingerprint)
        let marked = finished
        const differences = RunFingerprint.differences(recorded, fingerprint)
        if (differences.length > 0) return yield* new CheckpointMismatch({ id, differences })
        const before = yield* retrying(rows(id)).pipe(Effect.mapError(failed("open", id)))
        let next = Number(before.at(-1)?.seq ?? -1) + 1

        /** The rows already at positions `from`…: what an earlier try of this append may have written. */
        const landed = (from: number, count: number) =>
          Effect.flatMap(
            sql`SELECT seq, entry FROM ${entries} WHERE execution_id = ${id} AND seq >= ${from}
              ORDER BY seq LIMIT ${count}`,
            Schema.decodeUnknownEffect(Entries)
          )

        /**
         * That this execution still holds the run's lease, as a statement's condition. On PostgreSQL it locks the
         * run's row until the statement's transaction ends: a prune or a clear that is deleting the run (its row,
         * then its entries, in one transaction) is waited for, and the condition is then read again, so a writer
         * that stalled past its lease cannot add entries behind a deletion of its run that it did not see.
         * SQLite runs one writing transaction at a time, which needs no lock.
         */
        const held = sql.onDialectOrElse({
          pg: () => sql`EXISTS (SELECT 1 FROM ${runs} WHERE execution_id = ${id} AND owner = ${owner} FOR SHARE)`,
          orElse: () => sql`EXISTS (SELECT 1 FROM ${runs} WHERE execution_id = ${id} AND owner = ${owner})`
        })

        /** Inserts `rows` at positions `from`… in one statement. */
        const insertRows = (rows: ReadonlyArray<string>, from: number) => {
          const selects = rows.map((entry, i) =>
            i === 0
              ? sql`SELECT CAST(${id} AS TEXT) AS execution_id, CAST(${
                from + i
              } AS INTEGER) AS seq, CAST(${entry} AS TEXT) AS entry`
              : sql`SELECT CAST(${id} AS TEXT), CAST(${from + i} AS INTEGER), CAST(${entry} AS TEXT)`
          )
          return Effect.flatMap(
            sql`INSERT INTO ${entries} (execution_id, seq, entry)
              SELECT r.execution_id, r.seq, r.entry FROM (${sql.join(" UNION ALL ", false)(selects)}) AS r
              WHERE ${held}
              RETURNING seq`,
            Schema.decodeUnknownEffect(Positions)
          )
        }

        /**
         * Inserts `batch` after the log's last entry: in one statement, or, for a batch of more than
         * {@link rowsPerStatement} (a fork's), in statements of that many in one transaction (a statement of
         * thousands of rows takes PostgreSQL seconds to plan, and passes SQLite's limit of compound selects).
         */
        const insert = (batch: ReadonlyArray<string>) =>
          batch.length <= rowsPerStatement ? insertRows(batch, next) : sql.withTransaction(Effect.map(
            Effect.forEach(
              Array.from({ length: Math.ceil(batch.length / rowsPerStatement) }, (_, i) => i * rowsPerStatement),
              (start) => insertRows(batch.slice(start, start + rowsPerStatement), next + start)
            ),
            (inserted) => inserted.flat()
          ))

        /**
         * The insert, with the run's finished mark set (or cleared, for a run that goes on after it) and, for a
         * compacting append, the entries before it deleted, in the same transaction (both only while the lease is
         * held, as the insert).
         */
        const insertMarked = (batch: ReadonlyArray<string>, group: GroupCommit.Group) =>
          Effect.gen(function*() {
            if (group.finished === undefined && !marked && !group.compact) return yield* insert(batch)
            const finishedAt = group.finished === undefined ? null : yield* Clock.currentTimeMillis
            const resultFrom = group.finished === undefined ? null : next + batch.length - group.finished
            return yield* sql.withTransaction(Effect.gen(function*() {
              const inserted = yield* insert(batch)
              if (group.finished !== undefined || marked) {
                yield* sql`UPDATE ${runs} SET finished_at = ${finishedAt}, result_from = ${resultFrom}
                  WHERE execution_id = ${id} AND owner = ${owner}`
              }
              if (group.compact) {
                yield* sql`DELETE FROM ${entries} WHERE execution_id = ${id} AND seq < ${next} AND ${held}`
              }
              return inserted
            }))
          })

        /**
         * The insert; on PostgreSQL, one that need not be durable commits without waiting for its WAL to be
         * flushed (a later durable commit flushes it; a crash of the server loses it, and only what came after).
         */
        const write = (batch: ReadonlyArray<string>, group: GroupCommit.Group) =>
          group.durable ? insertMarked(batch, group) : sql.onDialectOrElse({
            pg: () =>
              sql.withTransaction(
                Effect.andThen(sql`SET LOCAL synchronous_commit TO OFF`, insertMarked(batch, group))
              ),
            orElse: () => insertMarked(batch, group)
          })

        /** One try: the rows inserted, or found already there from an earlier try. */
        const attempt = (batch: ReadonlyArray<string>, group: GroupCommit.Group) =>
          write(batch, group).pipe(
            Effect.flatMap((inserted) =>
              inserted.length === batch.length
                ? Effect.void
                : Effect.fail(new Error("its lease was taken over by another executor"))
            ),
            Effect.catchIf(isUniqueViolation, () =>
              Effect.flatMap(landed(next, batch.length), (found) =>
                found.length === batch.length && found.every((row, i) => row.entry === batch[i])
                  ? Effect.void
                  : Effect.fail(new Error("another executor appended to it at the same position"))))
          )

        const append = GroupCommit.make((batch: ReadonlyArray<string>, group) =>
          Effect.suspend(() =>
            kept.lost()
              ? Effect.fail(new Error("its lease was taken over by another executor"))
              : retrying(attempt(batch, group))
          ).pipe(
            Effect.tap(() =>
              Effect.sync(() => {
                next += batch.length
                marked = group.finished !== undefined
              })
            ),
            Effect.mapError(failed("append", id))
          )
        )
        return {
          entries: before.map((row) =>
            row.entry
          ),
          append
        }
      })

    /** Run `id`'s entries from entry `from` on: the rows before it are skipped by the database. */
    const readEntries = (id: string, from: number) =>
      Effect.gen(function*() {
        yield* RunId.validate(id)
        const found = yield* retrying(from === 0 ? rows(id) : rowsFrom(id, from)).pipe(
          Effect.mapError(failed("read", id))
        )
        return found.map((row) => row.entry)
      })

    const read = (id: string) => readEntries(id, 0)

    const readFrom = (id: string, from: number) => Effect.andThen(LogOffset.check(from), readEntries(id, from))

    const clear = (id: string) =>
      Effect.scoped(Effect.gen(function*() {
        yield* RunId.validate(id)
        const { owner } = yield* hold(id, {})
        yield* retrying(
          sql.withTransaction(Effect.all([
            sql`DELETE FROM ${entries} WHERE execution_id = ${id}`,
            sql`DELETE FROM ${runs} WHERE execution_id = ${id} AND owner = ${owner}`
          ], { discard: true }))
        ).pipe(Effect.mapError(failed("clear", id)))
      })).pipe(
        Effect.catchTag("CheckpointError", (error) => Effect.fail(failed("clear", id)(error.cause ?? error)))
      )

    /**
     * Forgets the runs that `expired` selects (a condition on the table of runs, ordered by `by`), that nobody
     * holds: their ids. A batch of runs at a time, each batch one transaction, so a long backlog never makes one
     * huge transaction.
     */
    const forget = (expired: Statement.Fragment, by: Statement.Fragment, now: number) =>
      Effect.gen(function*() {
        const ids: Array<string> = []
        while (true) {
          const condition = sql`${expired} AND expires_at <= ${now}`
          const gone = yield* retrying(sql.withTransaction(Effect.gen(function*() {
            const rows = yield* Effect.flatMap(
              sql`DELETE FROM ${runs} WHERE ${condition} AND execution_id IN (
                SELECT execution_id FROM ${runs} WHERE ${condition} ORDER BY ${by} LIMIT ${runsPerBatch})
                RETURNING execution_id`,
              Schema.decodeUnknownEffect(Ids)
            )
            const gone = rows.map((row) => row.execution_id)
            if (gone.length > 0) yield* sql`DELETE FROM ${entries} WHERE ${sql.in("execution_id", gone)}`
            return gone
          })))
          ids.push(...gone)
          if (gone.length < runsPerBatch) return ids
        }
      })

    /**
     * Keeps only the result of the runs that finished before `before`, that nobody holds, and that still have entries
     * before their result: the ids of those cut. A batch of runs at a time, each batch one transaction: an update
     * that checks, itself, that their leases are free takes their rows (on PostgreSQL it locks them, so a run's
     * execution that starts meanwhile waits for the transaction), the runs that still have entries to cut are read
     * again (another prune may have cut some since the update chose them), and one statement deletes their entries
     * before their results.
     */
    const cut = (before: number, now: number) =>
      Effect.gen(function*() {
        const ids: Array<string> = []
        const free = sql`finished_at < ${before} AND expires_at <= ${now}`
        // The run in row `run` of the table of runs has entries before its result.
        const uncut = (run: Statement.Identifier) =>
          sql`EXISTS (SELECT 1 FROM ${entries} WHERE ${entries}.execution_id = ${run}.execution_id
            AND ${entries}.seq < ${run}.result_from)`
        while (true) {
          const [chosen, cut] = yield* retrying(sql.withTransaction(Effect.gen(function*() {
            const taken = yield* Effect.flatMap(
              sql`UPDATE ${runs} SET result_from = result_from WHERE ${free} AND execution_id IN (
                SELECT execution_id FROM ${runs} AS candidate WHERE ${free} AND ${uncut(sql("candidate"))}
                ORDER BY finished_at LIMIT ${runsPerBatch})
                RETURNING execution_id`,
              Schema.decodeUnknownEffect(Ids)
            )
            if (taken.length === 0) return [0, []] as const
            const toCut = yield* Effect.flatMap(
              sql`SELECT execution_id FROM ${runs} WHERE ${
                sql.in("execution_id", taken.map((row) => row.execution_id))
              } AND ${uncut(runs)}`,
              Schema.decodeUnknownEffect(Ids)
            )
            const cut = toCut.map((row) => row.execution_id)
            if (cut.length > 0) {
              yield* sql`DELETE FROM ${entries} WHERE ${sql.in("execution_id", cut)} AND seq < (
                SELECT result_from FROM ${runs} WHERE ${runs}.execution_id = ${entries}.execution_id)`
            }
            return [taken.length, cut] as const
          })))
          ids.push(...cut)
          if (chosen < runsPerBatch) return ids
        }
      })

    /**
     * Forgets the runs that did not finish whose last execution ended before `before` (`abs(expires_at)`: see
     * `Retention.endedAt`), and nobody holds.
     */
    const forgetUnfinished = (before: number, now: number) =>
      Effect.andThen(
        // Leases released by an earlier version hold 0, not when: released no later than now.
        retrying(sql`UPDATE ${runs} SET expires_at = ${-now} WHERE ${unfinished} AND abs(expires_at) = 0`),
        forget(sql`${unfinished} AND abs(expires_at) < ${before}`, sql`abs(expires_at)`, now)
      )

    const prune = (given: PruneOptions) =>
      Effect.flatMap(Retention.cutoff(given), (cutoff) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const finishedRuns = cutoff.finished === undefined
            ? []
            : cutoff.keep === "nothing"
            ? yield* forget(sql`finished_at < ${cutoff.finished}`, sql`finished_at`, now)
            : yield* cut(cutoff.finished, now)
          const otherRuns = cutoff.unfinished === undefined ? [] : yield* forgetUnfinished(cutoff.unfinished, now)
          return { runs: [...finishedRuns, ...otherRuns] }
        }).pipe(Effect.mapError(failed("prune", options.table))))

    const store: Store = { open, read, readFrom, clear, prune }
    return store
  })
