/**
 * A run store's retention part (see `RunStore`): when a run finished, which
 * runs finished before a time, and forgetting a run that did, every record of
 * it (see `RunRetention`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { SqlClient } from "effect/sql/SqlClient"
import type { Fail, Run } from "./runStoreRows.ts"
import type { Tables } from "./runTables.ts"

const Forgotten = Schema.Array(Schema.Struct({ run_id: Schema.String }))

/**
 * The retention part of the store on `tables`, failing with `fail`; a
 * finished run is read as `FinishedRun` reads it.
 */
export const make = <F, E>(
  sql: SqlClient,
  { approvals, calls, events, runs, steps }: Tables,
  fail: Fail<E>,
  FinishedRun: Schema.Decoder<F>
) => {
  const FinishedRuns = Schema.Array(FinishedRun)
  return {
    finished: (run: Run, executionId: string, at: number) =>
      sql`UPDATE ${runs} SET finished_at = ${at}, execution_id = ${executionId}
        WHERE agent = ${run.agent} AND run_id = ${run.runId}`.pipe(
        Effect.asVoid,
        Effect.mapError(fail("finished"))
      ),
    expired: (before: number, limit: number) =>
      sql`SELECT agent, run_id, execution_id FROM ${runs}
        WHERE finished_at < ${before} AND execution_id IS NOT NULL ORDER BY finished_at LIMIT ${limit}`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(FinishedRuns)),
        Effect.mapError(fail("expired"))
      ),
    forget: (run: Run, before: number) =>
      Effect.gen(function*() {
        const gone = yield* Effect.flatMap(
          sql`DELETE FROM ${runs} WHERE agent = ${run.agent} AND run_id = ${run.runId} AND finished_at < ${before}
            RETURNING run_id`,
          Schema.decodeUnknownEffect(Forgotten)
        )
        if (gone.length === 0) return false
        for (const table of [steps, events, calls, approvals]) {
          yield* sql`DELETE FROM ${table} WHERE agent = ${run.agent} AND run_id = ${run.runId}`
        }
        return true
      }).pipe(Effect.mapError(fail("forget")))
  }
}
