/**
 * A run store's history part (see `RunStore`): every step, started call and
 * approval of a run read in one statement (see `DurableHistory`), written
 * whole as the records of a new run (see `DurableFork`), and whether a run
 * has any record.
 *
 * @internal
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type { SqlClient } from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import { type Fail, type Run, type Stamp, type Step, stepRows } from "./runStoreRows.ts"
import type { Tables } from "./runTables.ts"

/** A call a run started: the name of its step, and its {@link Stamp} if it has one. */
export interface Claim {
  readonly call: string
  readonly stamp?: Stamp | undefined
}

/** A wait point a run issued: its name, its secret, and its decision (JSON) once recorded. */
export interface Approval {
  readonly wait: string
  readonly secret: string
  readonly decision: string | null
}

/** Everything a run recorded that its history and its forks read. */
export interface Records {
  readonly steps: ReadonlyArray<Step>
  readonly claims: ReadonlyArray<Claim>
  readonly approvals: ReadonlyArray<Approval>
}

/** A BIGINT column: a number (SQLite), or a `bigint` (PostgreSQL), read as a safe integer. */
const Integer = Schema.Union([Schema.Number, Schema.BigInt]).pipe(
  Schema.decodeTo(
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    SchemaTransformation.transform<number, number | bigint>({ decode: Number, encode: (value) => value })
  )
)
const RecordRows = Schema.Array(Schema.Struct({
  kind: Schema.Literals(["step", "claim", "approval"]),
  name: Schema.String,
  body: Schema.NullOr(Schema.String),
  seq: Schema.NullOr(Integer),
  recorded_at: Schema.NullOr(Integer),
  secret: Schema.NullOr(Schema.String)
}))
const Found = Schema.Array(Schema.Struct({ found: Schema.Unknown }))

/** Rows written in one statement: a statement of thousands of rows fails on SQLite, and plans slowly on PostgreSQL. */
const rowsPerStatement = 100

/** A new run's records were refused: the run has records already. */
const occupied = { _tag: "Occupied" } as const

/** The history part of the store on `tables`, failing with `fail`. */
export const make = <E>(sql: SqlClient, { approvals, calls, events, runs, steps }: Tables, fail: Fail<E>) => {
  /** Inserts `rows` into `table` unless present, 100 rows a statement; the number inserted. */
  const insertAll = (table: Statement.Identifier, rows: ReadonlyArray<Record<string, unknown>>) =>
    Effect.reduce(
      Arr.chunksOf(rows, rowsPerStatement),
      () => 0,
      (inserted, chunk) =>
        Arr.isReadonlyArrayNonEmpty(chunk)
          ? Effect.map(
            Effect.flatMap(
              sql`INSERT INTO ${table} ${sql.insert(chunk)} ON CONFLICT DO NOTHING RETURNING 1 AS found`,
              Schema.decodeUnknownEffect(Found)
            ),
            (found) => inserted + found.length
          )
          : Effect.succeed(inserted)
    )

  /** Whether `run` has any record: a step, a log entry, or an execution that began. */
  const exists = (run: Run) => {
    const where = sql`agent = ${run.agent} AND run_id = ${run.runId}`
    return Effect.map(
      Effect.flatMap(
        sql`SELECT 1 AS found FROM ${steps} WHERE ${where}
          UNION ALL SELECT 1 AS found FROM ${events} WHERE ${where}
          UNION ALL SELECT 1 AS found FROM ${runs} WHERE ${where}
          LIMIT 1`,
        Schema.decodeUnknownEffect(Found)
      ),
      (found) => found.length > 0
    )
  }

  /** Writes the records of a new run, failing with `occupied` (which rolls the transaction back) when it has any. */
  const create = (run: Run, records: Records) =>
    Effect.gen(function*() {
      if (yield* exists(run)) return yield* Effect.fail(occupied)
      const key = { agent: run.agent, run_id: run.runId }
      // Another fork onto the same id, at once: its rows win, and this one rolls back.
      const written = yield* insertAll(steps, stepRows(run, records.steps))
      if (written < records.steps.length) return yield* Effect.fail(occupied)
      yield* insertAll(
        calls,
        records.claims.map((claim) => ({
          ...key,
          call: claim.call,
          seq: claim.stamp?.seq ?? null,
          recorded_at: claim.stamp?.at ?? null
        }))
      )
      yield* insertAll(approvals, records.approvals.map((approval) => ({ ...key, ...approval })))
    })

  return {
    records: (run: Run) =>
      sql`SELECT 'step' AS kind, name, body, seq, recorded_at, CAST(NULL AS TEXT) AS secret FROM ${steps}
        WHERE agent = ${run.agent} AND run_id = ${run.runId}
        UNION ALL
        SELECT 'claim' AS kind, call AS name, CAST(NULL AS TEXT) AS body, seq, recorded_at,
          CAST(NULL AS TEXT) AS secret FROM ${calls}
        WHERE agent = ${run.agent} AND run_id = ${run.runId}
        UNION ALL
        SELECT 'approval' AS kind, wait AS name, decision AS body, CAST(NULL AS INTEGER) AS seq,
          CAST(NULL AS BIGINT) AS recorded_at, secret FROM ${approvals}
        WHERE agent = ${run.agent} AND run_id = ${run.runId}`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(RecordRows)),
        Effect.map((rows): Records => {
          const stepsRead: Array<Step> = []
          const claims: Array<Claim> = []
          const issued: Array<Approval> = []
          for (const row of rows) {
            const stamp = row.seq === null || row.recorded_at === null
              ? undefined
              : { seq: row.seq, at: row.recorded_at }
            if (row.kind === "step") stepsRead.push({ name: row.name, body: row.body ?? "", stamp })
            else if (row.kind === "claim") claims.push({ call: row.name, stamp })
            else issued.push({ wait: row.name, secret: row.secret ?? "", decision: row.body })
          }
          return { steps: stepsRead, claims, approvals: issued }
        }),
        Effect.mapError(fail("read records"))
      ),
    create: (run: Run, records: Records) =>
      sql.withTransaction(create(run, records)).pipe(
        Effect.as(true),
        Effect.catchTag("Occupied", () => Effect.succeed(false)),
        Effect.mapError(fail("create"))
      ),
    exists: (run: Run) => exists(run).pipe(Effect.mapError(fail("read")))
  }
}
