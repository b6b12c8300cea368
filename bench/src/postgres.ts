/**
 * The PostgreSQL the benchmarks use when it is there (127.0.0.1:5432, trust
 * auth, database `test`): its connection, whether it listens, and the
 * dropping of a benchmark's tables afterwards.
 */
import { Reachable } from "@agentloop/testing"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Effect } from "effect"

export const connection: PgClient.PgClientConfig = {
  host: "127.0.0.1",
  port: 5432,
  database: "test",
  username: "postgres"
}

/** The same server as a connection string, for the peers' clients. */
export const url = "postgresql://postgres@127.0.0.1:5432/test"

/** Whether the server listens; a suite skips its PostgreSQL cases, saying so, when it does not. */
export const reachable = (): Promise<boolean> => Reachable.listening(5432)

/** Drops every table whose name starts with `${prefix}_`. */
export const dropTables = (prefix: string): Promise<void> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      const tables = yield* sql<{ readonly tablename: string }>`
        SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND starts_with(tablename, ${`${prefix}_`})`
      for (const { tablename } of tables) yield* sql`DROP TABLE IF EXISTS ${sql(tablename)} CASCADE`
    }).pipe(Effect.scoped, Effect.provide(PgClient.layer(connection)))
  )

/** Drops schema `name` and everything in it. */
export const dropSchema = (name: string): Promise<void> =>
  Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* PgClient.PgClient
      yield* sql`DROP SCHEMA IF EXISTS ${sql(name)} CASCADE`
    }).pipe(Effect.scoped, Effect.provide(PgClient.layer(connection)))
  )
