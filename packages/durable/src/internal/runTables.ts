/**
 * The tables of a run store (see `RunStore`), named after a prefix, created
 * when missing, and brought to the columns and indexes this version reads
 * when they were made by an earlier one (their rows kept as they are).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"

/** The identifiers of the five tables. */
export interface Tables {
  readonly steps: Statement.Identifier
  readonly events: Statement.Identifier
  readonly calls: Statement.Identifier
  readonly approvals: Statement.Identifier
  readonly runs: Statement.Identifier
}

/** The tables under `prefix`, created or brought up to date. */
export const make = (sql: SqlClient, prefix: string): Effect.Effect<Tables, SqlError> =>
  Effect.gen(function*() {
    const steps = sql(`${prefix}_agent_steps`)
    const events = sql(`${prefix}_agent_events`)
    const calls = sql(`${prefix}_agent_calls`)
    const approvals = sql(`${prefix}_agent_approvals`)
    const runs = sql(`${prefix}_agent_runs`)
    // Runners starting together may race to create the tables: the loser tries again and finds them.
    yield* Effect.all([
      sql`CREATE TABLE IF NOT EXISTS ${steps} (
        agent TEXT NOT NULL,
        run_id TEXT NOT NULL,
        name TEXT NOT NULL,
        body TEXT NOT NULL,
        seq INTEGER,
        recorded_at BIGINT,
        PRIMARY KEY (agent, run_id, name)
      )`,
      sql`CREATE TABLE IF NOT EXISTS ${events} (
        agent TEXT NOT NULL,
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        step INTEGER NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (agent, run_id, seq)
      )`,
      sql`CREATE TABLE IF NOT EXISTS ${calls} (
        agent TEXT NOT NULL,
        run_id TEXT NOT NULL,
        call TEXT NOT NULL,
        seq INTEGER,
        recorded_at BIGINT,
        PRIMARY KEY (agent, run_id, call)
      )`,
      sql`CREATE TABLE IF NOT EXISTS ${approvals} (
        agent TEXT NOT NULL,
        run_id TEXT NOT NULL,
        wait TEXT NOT NULL,
        secret TEXT NOT NULL,
        decision TEXT,
        PRIMARY KEY (agent, run_id, wait)
      )`,
      sql`CREATE TABLE IF NOT EXISTS ${runs} (
        agent TEXT NOT NULL,
        run_id TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        progress INTEGER NOT NULL,
        parked TEXT,
        finished_at BIGINT,
        execution_id TEXT,
        PRIMARY KEY (agent, run_id)
      )`
    ], { discard: true }).pipe(
      Effect.retry({ times: 3, schedule: Schedule.spaced("50 millis") })
    )
    // A table of runs made before runs were marked finished gains the columns (another runner may add them first).
    const marks = sql`SELECT finished_at, execution_id FROM ${runs} WHERE 1 = 0`
    yield* Effect.catch(marks, () =>
      Effect.all([
        Effect.ignore(sql`ALTER TABLE ${runs} ADD COLUMN finished_at BIGINT`),
        Effect.ignore(sql`ALTER TABLE ${runs} ADD COLUMN execution_id TEXT`),
        marks
      ]))
    yield* sql`CREATE INDEX IF NOT EXISTS ${sql(`${prefix}_agent_runs_finished_at`)} ON ${runs} (finished_at)`.pipe(
      Effect.retry({ times: 3, schedule: Schedule.spaced("50 millis") })
    )
    // Steps and started calls stored before they were stamped gain the columns; their rows stay unstamped.
    for (const table of [steps, calls]) {
      const stamped = sql`SELECT seq, recorded_at FROM ${table} WHERE 1 = 0`
      yield* Effect.catch(stamped, () =>
        Effect.all([
          Effect.ignore(sql`ALTER TABLE ${table} ADD COLUMN seq INTEGER`),
          Effect.ignore(sql`ALTER TABLE ${table} ADD COLUMN recorded_at BIGINT`),
          stamped
        ]))
    }

    return { steps, events, calls, approvals, runs }
  })
