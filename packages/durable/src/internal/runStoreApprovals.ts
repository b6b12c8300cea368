/**
 * A run store's approvals part (see `RunStore`): each wait point a run issued
 * with its secret, the first one stored kept, and the first decision recorded
 * for it (see `DurableApproval`).
 *
 * @internal
 */
import * as Arr from "effect/Array"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { SqlClient } from "effect/sql/SqlClient"
import type { Fail, Run } from "./runStoreRows.ts"
import type { Tables } from "./runTables.ts"

const Decided = Schema.Array(Schema.Struct({ wait: Schema.String }))

/**
 * The approvals part of the store on `tables`, failing with `fail`; a wait
 * point's row is read as `IssuedApproval` reads it.
 */
export const make = <A, E>(
  sql: SqlClient,
  { approvals }: Tables,
  fail: Fail<E>,
  IssuedApproval: Schema.Decoder<A>
) => {
  const Approvals = Schema.Array(IssuedApproval)
  return {
    issue: (run: Run, offered: ReadonlyArray<{ readonly wait: string; readonly secret: string }>) => {
      const rows = offered.map(({ secret, wait }): Record<string, unknown> => ({
        agent: run.agent,
        run_id: run.runId,
        wait,
        secret
      }))
      // The update keeps the stored secret: it only makes the conflicting row come back.
      return Arr.isReadonlyArrayNonEmpty(rows)
        ? sql`INSERT INTO ${approvals} ${sql.insert(rows)}
          ON CONFLICT (agent, run_id, wait) DO UPDATE SET secret = ${approvals}.secret
          RETURNING wait, secret, decision`.pipe(
          Effect.flatMap(Schema.decodeUnknownEffect(Approvals)),
          Effect.mapError(fail("issue"))
        )
        : Effect.succeed([])
    },
    readApproval: (run: Run, wait: string) =>
      sql`SELECT wait, secret, decision FROM ${approvals}
        WHERE agent = ${run.agent} AND run_id = ${run.runId} AND wait = ${wait}`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Approvals)),
        Effect.map((rows) => rows[0]),
        Effect.mapError(fail("read approval"))
      ),
    decide: (run: Run, wait: string, decision: string) =>
      sql`UPDATE ${approvals} SET decision = ${decision}
        WHERE agent = ${run.agent} AND run_id = ${run.runId} AND wait = ${wait} AND decision IS NULL
        RETURNING wait`.pipe(
        Effect.flatMap(Schema.decodeUnknownEffect(Decided)),
        Effect.map((rows) => rows.length > 0),
        Effect.mapError(fail("decide"))
      )
  }
}
