import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Path from "node:path"
import { NodeSqliteClient } from "../src/index.ts"
import { tempDir } from "./fixtures.ts"

const Row = Schema.Struct({
  id: Schema.Number,
  name: Schema.String,
  flag: Schema.Number,
  big: Schema.Number,
  blob: Schema.Uint8Array,
  at: Schema.String,
  absent: Schema.Null
})

const withClient = <A, E>(body: Effect.Effect<A, E, SqlClient>) => {
  const temp = tempDir()
  return body.pipe(
    Effect.provide(NodeSqliteClient.layer({ filename: Path.join(temp.dir, "client.db") })),
    Effect.ensuring(Effect.sync(temp.remove))
  )
}

describe("NodeSqliteClient", () => {
  it.live("stores and reads every kind of parameter, and returns rows of an INSERT … RETURNING", () =>
    withClient(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, flag INTEGER, big INTEGER, blob BLOB, at TEXT, absent TEXT)`
      const inserted = yield* sql`INSERT INTO t ${
        sql.insert({
          id: 1,
          name: "a",
          flag: true,
          big: 9007199254740991n,
          blob: new Uint8Array([1, 2]),
          at: new Date(0),
          absent: null
        })
      } RETURNING id`
      expect(inserted).toStrictEqual([{ id: 1 }])
      const rows = yield* Effect.flatMap(sql`SELECT * FROM t`, Schema.decodeUnknownEffect(Schema.Array(Row)))
      expect(rows).toStrictEqual([{
        id: 1,
        name: "a",
        flag: 1,
        big: 9007199254740991,
        blob: new Uint8Array([1, 2]),
        at: "1970-01-01T00:00:00.000Z",
        absent: null
      }])
      expect(yield* sql`SELECT id, name FROM t`.values).toStrictEqual([[1, "a"]])
    })))

  it.live("rolls a failed transaction back, and fails a statement with a typed SqlError", () =>
    withClient(Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE)`
      const failed = yield* Effect.flip(sql.withTransaction(
        Effect.andThen(sql`INSERT INTO t (name) VALUES ('a')`, sql`INSERT INTO t (name) VALUES ('a')`)
      ))
      expect(failed._tag).toBe("SqlError")
      expect(failed.reason._tag).toBe("UniqueViolation")
      expect(yield* sql`SELECT COUNT(*) AS n FROM t`).toStrictEqual([{ n: 0 }])
      const syntax = yield* Effect.flip(sql`SELEC absent`)
      expect(syntax.message).toMatch(/syntax error/)
      const unsupported = yield* Effect.flip(sql`INSERT INTO t (name) VALUES (${{ not: "a value" }})`)
      expect(unsupported.message).toMatch(/cannot be \[object Object\]/)
    })))

  it.live("keeps answering right when its statement cache overflows, and with statements of inline lists", () => {
    const temp = tempDir()
    return Effect.gen(function*() {
      const sql = yield* SqlClient
      yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)`
      for (let i = 1; i <= 5; i++) {
        yield* sql`INSERT INTO t (id, name) VALUES (${i}, ${`n${i}`})`
        // A statement whose text changes every time (an inline list), among ones that repeat theirs.
        const listed = yield* sql.unsafe(
          `SELECT COUNT(*) AS n FROM t WHERE id IN (${Array.from({ length: i }, (_, k) => k + 1).join(",")})`
        )
        expect(listed).toStrictEqual([{ n: i }])
        expect(yield* sql`SELECT name FROM t WHERE id = ${i}`).toStrictEqual([{ name: `n${i}` }])
        yield* sql.withTransaction(sql`UPDATE t SET name = ${`m${i}`} WHERE id = ${i}`)
      }
      expect(yield* sql`SELECT name FROM t ORDER BY id`.values).toStrictEqual([["m1"], ["m2"], ["m3"], ["m4"], ["m5"]])
    }).pipe(
      Effect.provide(NodeSqliteClient.layer({ filename: Path.join(temp.dir, "small.db"), statementCacheSize: 2 })),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })

  it.live("is refused to a second holder until the first lets go, and a path that cannot be opened fails with DatabaseUnavailable", () => {
    const temp = tempDir()
    const filename = Path.join(temp.dir, "held.db")
    return Effect.gen(function*() {
      yield* Effect.scoped(Effect.gen(function*() {
        yield* Layer.build(NodeSqliteClient.layer({ filename }))
        const second = yield* Effect.flip(Layer.build(NodeSqliteClient.layer({ filename })))
        expect(second).toStrictEqual(new NodeSqliteClient.DatabaseLocked({ filename }))
      }))
      yield* Layer.build(NodeSqliteClient.layer({ filename }))
      const missing = Path.join(temp.dir, "no", "such", "dir.db")
      const unavailable = yield* Effect.flip(Layer.build(NodeSqliteClient.layer({ filename: missing })))
      expect(unavailable._tag).toBe("DatabaseUnavailable")
    }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(temp.remove)))
  })
})
