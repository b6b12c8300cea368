/**
 * A run store's executions part (see `RunStore`): how many executions of a run
 * in a row died with their process, counted again from 1 once the run records
 * a step, and the reason a run is parked for, if it is (see `RunParking`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { SqlClient } from "effect/sql/SqlClient"
import type { Fail, Run } from "./runStoreRows.ts"
import type { Tables } from "./runTables.ts"

const Parked = Schema.Array(Schema.Struct({ parked: Schema.NullOr(Schema.String) }))

/**
 * The executions part of the store on `tables`, failing with `fail`; a run's
 * execution is read as `Execution` reads it, a parked run as `ParkedRow` does.
 */
export const make = <X, P, E>(
  sql: SqlClient,
  { runs, steps }: Tables,
  fail: Fail<E>,
  { Execution, ParkedRow }: { readonly Execution: Schema.Decoder<X>; readonly ParkedRow: Schema.Decoder<P> }
) => {
  const Executions = Schema.Array(Execution)
  const ParkedRows = Schema.Array(ParkedRow)

  const parkedReason = (run: Run) =>
    sql`SELECT parked FROM ${runs} WHERE agent = ${run.agent} AND run_id = ${run.runId}`.pipe(
      Effect.flatMap(Schema.decodeUnknownEffect(Parked)),
      Effect.map((rows) => rows[0]?.parked ?? undefined)
    )

  return {
    begin: (run: Run) =>
      sql`INSERT INTO ${runs} (agent, run_id, attempts, progress)
        VALUES (${run.agent}, ${run.runId}, 1,
          (SELECT COUNT(*) FROM ${steps} WHERE agent = ${run.agent} AND run_id = ${run.runId}))
        ON CONFLICT (agent, run_id) DO UPDATE SET
          attempts = CASE WHEN excluded.progress > ${runs}.progress THEN 1 ELSE ${runs}.attempts + 1 END,
          progress = excluded.progress,
          finished_at = NULL
        RETURNING attempts, parked`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Executions)),
        Effect.flatMap((rows) =>
          rows[0] === undefined
            ? Effect.fail({ message: "the run's row did not come back" })
            : Effect.succeed(rows[0])
        ),
        Effect.mapError(fail("begin"))
      ),
    interrupted: (run: Run) =>
      sql`UPDATE ${runs} SET attempts = 0 WHERE agent = ${run.agent} AND run_id = ${run.runId}`.pipe(
        Effect.asVoid,
        Effect.mapError(fail("interrupted"))
      ),
    park: (run: Run, reason: string) =>
      sql`UPDATE ${runs} SET parked = ${reason}
        WHERE agent = ${run.agent} AND run_id = ${run.runId} AND parked IS NULL RETURNING parked`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Parked)),
        Effect.map((rows) => rows.length > 0),
        Effect.mapError(fail("park"))
      ),
    unpark: (run: Run) =>
      parkedReason(run).pipe(
        Effect.flatMap((reason) =>
          reason === undefined
            ? Effect.succeed(undefined)
            // Released by this update only: another unpark (or a parking with a reason of its own) may come between.
            : sql`UPDATE ${runs} SET parked = NULL, attempts = 0
                WHERE agent = ${run.agent} AND run_id = ${run.runId} AND parked = ${reason} RETURNING 1 AS found`.pipe(
              Effect.map((rows) => rows.length > 0 ? reason : undefined)
            )
        ),
        Effect.mapError(fail("unpark"))
      ),
    parkedReason: (run: Run) => Effect.mapError(parkedReason(run), fail("read parked")),
    parked: (agent: string) =>
      sql`SELECT run_id, parked FROM ${runs} WHERE agent = ${agent} AND parked IS NOT NULL ORDER BY run_id`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(ParkedRows)),
        Effect.mapError(fail("list parked"))
      )
  }
}
