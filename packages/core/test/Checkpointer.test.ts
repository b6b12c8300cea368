import { Reachable } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { KeyValueStore } from "effect/persistence"
import { SqlClient } from "effect/sql"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Checkpointer from "../src/Checkpointer.ts"

/** The behaviour every checkpointer layer must have. */
const conformance = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  it.effect(`${name}: appends in order, reads back, keeps executions apart, clears`, () =>
    Effect.gen(function*() {
      const checkpoints = yield* Checkpointer.Checkpointer
      const id = `run/${Math.random().toString(36).slice(2)}`
      expect(yield* checkpoints.read(id)).toStrictEqual([])
      yield* checkpoints.append(id, ["{\"a\":1}"])
      yield* checkpoints.append(id, [])
      yield* checkpoints.append(id, ["{\"b\":2}", "{\"c\":\"three\\nlines\"}"])
      yield* checkpoints.append(`${id}-other`, ["{\"z\":0}"])
      expect(yield* checkpoints.read(id)).toStrictEqual(["{\"a\":1}", "{\"b\":2}", "{\"c\":\"three\\nlines\"}"])
      yield* checkpoints.clear(id)
      expect(yield* checkpoints.read(id)).toStrictEqual([])
      expect(yield* checkpoints.read(`${id}-other`)).toStrictEqual(["{\"z\":0}"])
      yield* checkpoints.clear(`${id}-other`)
    }).pipe(Effect.provide(layer())))

const postgresReachable = await Reachable.listening(5432)
if (!postgresReachable) console.warn("Checkpointer: SKIPPING the PostgreSQL tests: nothing listens on 127.0.0.1:5432")

describe("Checkpointer", () => {
  conformance("in memory", () => Checkpointer.layerMemory)

  const directory = mkdtempSync(join(tmpdir(), "agentloop-checkpoints-"))
  const files = () =>
    Checkpointer.layerKeyValueStore().pipe(
      Layer.provide(KeyValueStore.layerFileSystem(directory)),
      Layer.provide(NodeFileSystem.layer),
      Layer.provide(NodePath.layer)
    )
  conformance("on the file system", files)

  it.effect("on the file system, a log survives the layer that wrote it (a new process)", () =>
    Effect.gen(function*() {
      yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.append("survivor", ["1", "2"])).pipe(
        Effect.provide(files())
      )
      const read = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read("survivor")).pipe(
        Effect.provide(files())
      )
      expect(read).toStrictEqual(["1", "2"])
      rmSync(directory, { recursive: true, force: true })
    }))

  it.effect("a store that fails is a CheckpointError naming the operation and the execution", () =>
    Effect.gen(function*() {
      const broken = Layer.succeed(
        KeyValueStore.KeyValueStore,
        KeyValueStore.makeStringOnly({
          get: () => Effect.fail(new KeyValueStore.KeyValueStoreError({ method: "get", message: "disk gone" })),
          set: () => Effect.fail(new KeyValueStore.KeyValueStoreError({ method: "set", message: "disk gone" })),
          remove: () => Effect.void,
          clear: Effect.void,
          size: Effect.succeed(0),
          keys: Effect.succeed([])
        })
      )
      const error = yield* Effect.flip(
        Effect.flatMap(Checkpointer.Checkpointer, (c) => c.append("run-x", ["{}"])).pipe(
          Effect.provide(Checkpointer.layerKeyValueStore().pipe(Layer.provide(broken)))
        )
      )
      expect(error).toMatchObject({ _tag: "CheckpointError", operation: "append", id: "run-x" })
      expect(error.message).toContain("disk gone")
    }))

  describe.skipIf(!postgresReachable)("on PostgreSQL", () => {
    const table = `agentloop_checkpoints_test_${process.pid}`
    const client = PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" })
    const postgres = () => Checkpointer.layerSql({ table }).pipe(Layer.provide(client))
    afterAll(() =>
      Effect.runPromise(
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DROP TABLE IF EXISTS ${sql(table)}`).pipe(
          Effect.provide(client)
        )
      )
    )
    conformance("on PostgreSQL", postgres)

    it.effect("two writers appending the same position of one execution: the second fails, nothing is lost", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        yield* checkpoints.append("contended", ["first"])
        const both = yield* Effect.all(
          [checkpoints.append("contended", ["a"]), checkpoints.append("contended", ["b"])],
          {
            concurrency: 2,
            mode: "result"
          }
        )
        const read = yield* checkpoints.read("contended")
        expect(read[0]).toBe("first")
        // Each append is all-or-nothing: every entry read back was appended whole, none twice.
        const appended = both.filter((result) => result._tag === "Success").length
        expect(read).toHaveLength(1 + appended)
        yield* checkpoints.clear("contended")
      }).pipe(Effect.provide(postgres())))
  })
})
