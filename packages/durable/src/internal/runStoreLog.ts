/**
 * A run store's log part (see `RunStore`): a run's recorded steps, its event
 * log and the calls it started, written with "insert unless present", and
 * what it recorded so far read in one statement.
 *
 * @internal
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { SqlClient } from "effect/sql/SqlClient"
import { type Fail, type Run, type Stamp, type Step, stepRows } from "./runStoreRows.ts"
import type { Tables } from "./runTables.ts"

const Loaded = Schema.Array(
  Schema.Struct({ kind: Schema.Literals(["step", "log", "seq", "failure"]), name: Schema.String, body: Schema.String })
)
const Named = Schema.Array(Schema.Struct({ name: Schema.String }))
const Claimed = Schema.Array(Schema.Struct({ call: Schema.String }))
const Steps = Schema.Array(Schema.Struct({ step: Schema.NullOr(Schema.Number) }))

/**
 * The log part of the store on `tables`, failing with `fail`; its entries are
 * read as `Entry` reads them.
 */
export const make = <A extends object, E>(
  sql: SqlClient,
  { calls, events, steps }: Tables,
  fail: Fail<E>,
  Entry: Schema.Decoder<A>
) => {
  const Entries = Schema.Array(Entry)
  const entryRows = (run: Run, entries: ReadonlyArray<A>) =>
    entries.map((entry): Record<string, unknown> => ({ agent: run.agent, run_id: run.runId, ...entry }))

  /** The names of the offered steps that this write did not record: another executor recorded them first. */
  const taken = (offered: ReadonlyArray<Step>) => (rows: unknown) =>
    Effect.map(Schema.decodeUnknownEffect(Named)(rows), (inserted) => {
      const mine = new Set(inserted.map((row) => row.name))
      return offered.filter((record) => !mine.has(record.name)).map((record) => record.name)
    })

  const insertSteps = (run: Run, records: ReadonlyArray<Step>) => {
    const rows = stepRows(run, records)
    return Arr.isReadonlyArrayNonEmpty(rows)
      ? Effect.flatMap(
        sql`INSERT INTO ${steps} ${sql.insert(rows)} ON CONFLICT DO NOTHING RETURNING name`,
        taken(records)
      )
      : Effect.succeed([])
  }
  const insertEntries = (run: Run, entries: ReadonlyArray<A>) => {
    const rows = entryRows(run, entries)
    return Arr.isReadonlyArrayNonEmpty(rows)
      ? Effect.asVoid(sql`INSERT INTO ${events} ${sql.insert(rows)} ON CONFLICT DO NOTHING`)
      : Effect.void
  }
  // PostgreSQL: both inserts in one statement, so one round trip and atomic without BEGIN and COMMIT.
  const commitBoth = (run: Run, records: ReadonlyArray<Step>, entries: ReadonlyArray<A>) => {
    const stepsRows = stepRows(run, records)
    const entriesRows = entryRows(run, entries)
    if (!Arr.isReadonlyArrayNonEmpty(stepsRows) || !Arr.isReadonlyArrayNonEmpty(entriesRows)) {
      return Effect.zipWith(insertSteps(run, records), insertEntries(run, entries), (names) => names)
    }
    return sql.onDialectOrElse({
      pg: () =>
        Effect.flatMap(
          sql`WITH logged AS (INSERT INTO ${events} ${sql.insert(entriesRows)} ON CONFLICT DO NOTHING)
            INSERT INTO ${steps} ${sql.insert(stepsRows)} ON CONFLICT DO NOTHING RETURNING name`,
          taken(records)
        ),
      orElse: () =>
        sql.withTransaction(Effect.zipWith(insertSteps(run, records), insertEntries(run, entries), (names) => names))
    })
  }

  return {
    load: (run: Run) =>
      sql`SELECT 'step' AS kind, name, body FROM ${steps} WHERE agent = ${run.agent} AND run_id = ${run.runId}
        UNION ALL
        SELECT 'log' AS kind, '' AS name, CAST(COALESCE(MAX(seq) + 1, 0) AS TEXT) AS body FROM ${events}
        WHERE agent = ${run.agent} AND run_id = ${run.runId}
        UNION ALL
        SELECT 'seq' AS kind, '' AS name, CAST(COALESCE(MAX(seq), 0) AS TEXT) AS body FROM (
          SELECT seq FROM ${steps} WHERE agent = ${run.agent} AND run_id = ${run.runId}
          UNION ALL
          SELECT seq FROM ${calls} WHERE agent = ${run.agent} AND run_id = ${run.runId}
        ) AS stamped
        UNION ALL
        SELECT kind, name, body FROM (
          SELECT 'failure' AS kind, '' AS name, body FROM ${events}
          WHERE agent = ${run.agent} AND run_id = ${run.runId} AND kind = 'failure' ORDER BY seq LIMIT 1
        ) AS failed`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Loaded)),
        Effect.map((rows) => {
          const recorded = new Map<string, string>()
          let logLength = 0
          let lastSeq = 0
          let failure: string | undefined
          for (const row of rows) {
            if (row.kind === "step") recorded.set(row.name, row.body)
            else if (row.kind === "log") logLength = Number(row.body)
            else if (row.kind === "seq") lastSeq = Number(row.body)
            else failure = row.body
          }
          return { steps: recorded, logLength, lastSeq, failure }
        }),
        Effect.mapError(fail("load"))
      ),
    commit: (
      run: Run,
      { entries, steps: records }: { readonly steps: ReadonlyArray<Step>; readonly entries: ReadonlyArray<A> }
    ) => commitBoth(run, records, entries).pipe(Effect.mapError(fail("commit"))),
    read: (
      run: Run,
      { afterSeq, fromStep, limit }: { readonly afterSeq: number; readonly fromStep: number; readonly limit: number }
    ) =>
      sql`SELECT seq, step, kind, body FROM ${events}
        WHERE agent = ${run.agent} AND run_id = ${run.runId} AND seq > ${afterSeq} AND step >= ${fromStep}
        ORDER BY seq LIMIT ${limit}`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Entries)),
        Effect.mapError(fail("read"))
      ),
    lastStep: (run: Run) =>
      sql`SELECT MAX(step) AS step FROM ${events}
        WHERE agent = ${run.agent} AND run_id = ${run.runId}`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Steps)),
        Effect.map((rows) => rows[0]?.step ?? 0),
        Effect.mapError(fail("read"))
      ),
    claim: (run: Run, call: string, stamp?: Stamp) =>
      sql`INSERT INTO ${calls} (agent, run_id, call, seq, recorded_at)
        VALUES (${run.agent}, ${run.runId}, ${call}, ${stamp?.seq ?? null}, ${stamp?.at ?? null})
        ON CONFLICT DO NOTHING RETURNING call`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Claimed)),
        Effect.map((rows) => rows.length > 0),
        Effect.mapError(fail("claim"))
      )
  }
}
