/**
 * PostgreSQL for the tests: the server this project's machines and CI run
 * (127.0.0.1:5432, trust auth, database `test`), a table prefix of their own per
 * test file, and the cleanup of its tables.
 */
import * as Reachable from "@agentloop/testing/Reachable"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect } from "effect"

export const connection: PgClient.PgClientConfig = {
  host: "127.0.0.1",
  port: 5432,
  database: "test",
  username: "postgres"
}

/** Whether the server accepts connections; the PostgreSQL tests are skipped, loudly, when it does not. */
export const reachable = (): Promise<boolean> =>
  Reachable.listening(5432).then((ok) => {
    if (!ok) {
      console.warn(
        "\n⚠ PostgreSQL is unreachable at 127.0.0.1:5432: the PostgreSQL tests of @agentloop/durable are SKIPPED.\n"
      )
    }
    return ok
  })

/** A table prefix no other test run uses. */
export const uniquePrefix = (name: string): string => `agentloop_test_${name}_${process.pid}_${Date.now().toString(36)}`

/** Drops every table whose name starts with `prefix`. */
export const dropTables = (prefix: string): Effect.Effect<void> =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const tables = yield* sql<{ readonly tablename: string }>`
      SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND starts_with(tablename, ${`${prefix}_`})`
    for (const { tablename } of tables) yield* sql`DROP TABLE IF EXISTS ${sql(tablename)} CASCADE`
  }).pipe(Effect.scoped, Effect.provide(PgClient.layer(connection)), Effect.orDie)
