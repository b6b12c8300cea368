// @module-tag slow
/**
 * Threads across real processes, on files and PostgreSQL: a child executing
 * a run on a thread (an `AgentLoop` run, or a step program on files) is
 * killed (`SIGKILL`) in the middle of the run's tool; a new process executes
 * the run again with the same `runId` (the program's `id`), waiting for the
 * dead one's leases (the run's and the thread's) to lapse. The thread then
 * holds the earlier run's items and the resumed run's, each once, and the
 * model was asked each turn once, from the whole conversation.
 */
import { LoopbackModel, MockLanguageModel, ProviderServer, Reachable, TestProcess } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Thread from "../src/agent/Thread.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Item from "../src/Item.ts"
import type { Config } from "./crash/threadChild.ts"
import { sources } from "./fixtures.ts"

const child = TestProcess.bundled(new URL("./crash/threadChild.ts", import.meta.url).pathname, sources)
const postgresReachable = await Reachable.listening(5432)
if (!postgresReachable) console.warn("ThreadCrash: SKIPPING the PostgreSQL case: nothing listens on 127.0.0.1:5432")

const pg = PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" })

/** Two Node processes load the sources: seconds on a busy machine. The limit only ends a case that hangs. */
const hangs = 600_000

const line = (item: Item.Item): string =>
  item.type === "message"
    ? `${item.role}: ${item.content.map((part) => "text" in part ? part.text : part.type).join("")}`
    : item.type

const Body = Schema.Struct({ history: Item.History })

const ended = (message: TestProcess.Message) => TestProcess.has("result")(message) || TestProcess.has("error")(message)

const crashAndResume = (
  store: Config["store"],
  layer: Layer.Layer<Checkpointer.Checkpointer, unknown>,
  run: Config["run"] = "agent"
) =>
  Effect.gen(function*() {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-thread-crash-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
    const thread = "user-42"
    // An earlier run on the thread, in this process.
    yield* Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run({ input: "Earlier", thread })).pipe(
      Effect.provide(
        AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Before")])))
      ),
      Effect.provide(layer)
    )
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(
      LoopbackModel.reply(MockLanguageModel.callsTurn([{ name: "slow", arguments: {}, callId: "call_slow" }])),
      LoopbackModel.reply(MockLanguageModel.textTurn("done"))
    )
    const config = (runner: string): Config => ({
      store,
      runner,
      provider: server.url,
      marker: Path.join(dir, "slow.log"),
      runId: "on-a-thread",
      thread,
      run,
      lease: 1500
    })
    const one = yield* child.spawn(config("one"))
    yield* one.waitFor((message) => message["toolStarted"] === "slow" || ended(message))
    expect(one.messages.some(ended), one.stderr()).toBe(false)
    yield* one.kill

    const two = yield* child.spawn(config("two"))
    const end = yield* two.waitFor(ended)
    expect(end, JSON.stringify({ one: one.messages, two: two.messages, stderr: two.stderr() })).toStrictEqual({
      result: "done"
    })
    yield* two.exit

    const earlier = ["user: Earlier", "assistant: Before"]
    const requests = yield* server.requests
    expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["one", "two"])
    const asked = (index: number) => Schema.decodeUnknownSync(Body)(requests[index]?.body).history.map(line)
    expect(asked(0)).toStrictEqual([...earlier, "user: Use the tool"])
    expect(asked(1)).toStrictEqual([...earlier, "user: Use the tool", "function_call", "function_call_output"])
    expect(yield* Effect.map(Thread.read(thread), (items) => items.map(line)).pipe(Effect.provide(layer)))
      .toStrictEqual([
        ...earlier,
        "user: Use the tool",
        "function_call",
        "function_call_output",
        "assistant: done"
      ])
  }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer))

describe.concurrent("Thread across processes", () => {
  it.live("a run on a thread killed mid-tool and resumed in another process adds its items once (files)", () => {
    const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-thread-store-"))
    return crashAndResume(
      { _tag: "files", directory },
      Checkpointer.layerFileSystem(directory).pipe(Layer.provide(NodeFileSystem.layer), Layer.provide(NodePath.layer))
    ).pipe(Effect.ensuring(Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))))
  }, hangs)

  it.live(
    "a step program on a thread killed mid-tool and resumed in another process adds its items once (files)",
    () => {
      const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-thread-store-"))
      return crashAndResume(
        { _tag: "files", directory },
        Checkpointer.layerFileSystem(directory).pipe(
          Layer.provide(NodeFileSystem.layer),
          Layer.provide(NodePath.layer)
        ),
        "steps"
      ).pipe(Effect.ensuring(Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))))
    },
    hangs
  )

  it.live.skipIf(!postgresReachable)(
    "a run on a thread killed mid-tool and resumed in another process adds its items once (PostgreSQL)",
    () => {
      const table = `agentloop_thread_crash_${process.pid}`
      return crashAndResume({ _tag: "pg", table }, Checkpointer.layerSql({ table }).pipe(Layer.provide(pg))).pipe(
        Effect.ensuring(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) =>
              Effect.all([sql`DROP TABLE IF EXISTS ${sql(table)}`, sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`])
          )
            .pipe(Effect.provide(pg), Effect.orDie)
        )
      )
    },
    hangs
  )
})
