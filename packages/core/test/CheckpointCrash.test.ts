// @module-tag slow
/**
 * Checkpoints across real processes, on files, SQLite and PostgreSQL.
 *
 * A child executing a run is killed (`SIGKILL`) in the middle of a turn whose
 * calls (or a fork whose paths) ended in the same tick while one more never
 * ends; a new process executes the run again from the same store, waiting for
 * the dead one's lease to lapse. The call cut off is not run again when its
 * tool is not idempotent (the model reads that its outcome is unknown), and
 * runs again with the same idempotency key when it is. The loopback server records every model
 * request of every process, so the test sees that no turn was asked twice and
 * that the history sent to the model pairs every call with its output; the
 * marker files show which call ran, and in which process; the store is read
 * back to see every record once. Then two processes execute one run at once:
 * one runs, the other is refused.
 */
import { NodeSqliteClient } from "@agentloop/durable"
import { LoopbackModel, MockLanguageModel, ProviderServer, Reachable, TestProcess } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Item from "../src/Item.ts"
import type { Config } from "./crash/child.ts"
import { sources } from "./fixtures.ts"

const child = TestProcess.bundled(new URL("./crash/child.ts", import.meta.url).pathname, sources)
const postgresReachable = await Reachable.listening(5432)
if (!postgresReachable) {
  console.warn("CheckpointCrash: SKIPPING the PostgreSQL cases: nothing listens on 127.0.0.1:5432")
}

/** The quick tools (and fork paths), which end at once; `slow` is the one cut off. */
const quick = ["alpha", "beta", "gamma"]

const pg = PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" })

/**
 * Each case starts two Node processes that load the sources: seconds on a busy machine, not a fixed time.
 * The limit only ends a case that hangs; a child that dies ends its case at once (see `TestProcess.waitFor`).
 */
const hangs = 600_000

const lines = (file: string): ReadonlyArray<string> =>
  Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : []

type Store = Config["store"]

/** A checkpointer over `store`, in the test's process (once the children are gone). */
const checkpointer = (store: Store): Layer.Layer<Checkpointer.Checkpointer, unknown> =>
  store._tag === "files"
    ? Checkpointer.layerFileSystem(store.directory).pipe(
      Layer.provide(NodeFileSystem.layer),
      Layer.provide(NodePath.layer)
    )
    : store._tag === "sqlite"
    ? Checkpointer.layerSql().pipe(Layer.provide(NodeSqliteClient.layer({ filename: store.filename })))
    : Checkpointer.layerSql({ table: store.table }).pipe(Layer.provide(pg))

/** The stores a case runs on: each in `dir` (files, SQLite) or a table of its own (PostgreSQL). */
const stores: ReadonlyArray<{ readonly name: string; readonly store: (dir: string) => Store; readonly skip: boolean }> =
  [
    { name: "files", store: (dir) => ({ _tag: "files", directory: Path.join(dir, "store") }), skip: false },
    { name: "SQLite", store: (dir) => ({ _tag: "sqlite", filename: Path.join(dir, "runs.db") }), skip: false },
    {
      name: "PostgreSQL",
      store: () => ({ _tag: "pg", table: `agentloop_crash_${process.pid}_${Math.random().toString(36).slice(2, 8)}` }),
      skip: !postgresReachable
    }
  ]

/** A folder for the case's markers and store, and a store; both gone after the case. */
const workspace = (store: (dir: string) => Store) =>
  Effect.gen(function*() {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-crash-"))
    const chosen = store(dir)
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        Fs.rmSync(dir, { recursive: true, force: true })
        if (chosen._tag !== "pg") return
        const table = chosen.table
        yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            Effect.all([sql`DROP TABLE IF EXISTS ${sql(table)}`, sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`])
        )
          .pipe(Effect.provide(pg), Effect.orDie)
      })
    )
    return { dir, store: chosen }
  })

/** How many entries of `tag` the process's reported appends held. */
const appended = (messages: ReadonlyArray<TestProcess.Message>, tag: string): number =>
  messages.flatMap((message) => Array.isArray(message["appended"]) ? message["appended"] : []).filter((t) => t === tag)
    .length

const started = (messages: ReadonlyArray<TestProcess.Message>, name: string): boolean =>
  messages.some((message) => message["toolStarted"] === name)

const ended = (message: TestProcess.Message) => TestProcess.has("result")(message) || TestProcess.has("error")(message)

const Body = Schema.Struct({ history: Item.History })

/**
 * Kills a process mid-turn once the quick calls (or paths) are recorded, and resumes the run in another;
 * `slowIdempotent` declares the tool cut off idempotent (in the agent run).
 */
const crashAndResume = (store: (dir: string) => Store, program: Config["program"], slowIdempotent = false) =>
  Effect.gen(function*() {
    const { dir, store: chosen } = yield* workspace(store)
    const server = yield* ProviderServer.ProviderServer
    const calls = [...quick, "slow"].map((name) => ({ name, arguments: {}, callId: `call_${name}` }))
    yield* server.reply(
      LoopbackModel.reply(MockLanguageModel.callsTurn(calls)),
      LoopbackModel.reply(MockLanguageModel.textTurn("done"))
    )
    const config = (runner: string): Config => ({
      store: chosen,
      program,
      runner,
      provider: server.url,
      markers: dir,
      runId: `crash/${program}`,
      lease: 1500,
      waitForLease: true,
      quick,
      slowIdempotent
    })
    // What the first process must have recorded before it is killed: the quick calls' results (or paths' outputs).
    const recordedTag = program === "agent" ? "ToolDone" : "Completed"

    const one = yield* child.spawn(config("one"))
    yield* one.waitFor(() =>
      (appended(one.messages, recordedTag) >= quick.length && started(one.messages, "slow")) ||
      one.messages.some(ended)
    )
    expect(one.messages.some(ended), one.stderr()).toBe(false)
    yield* one.kill

    const two = yield* child.spawn(config("two"))
    const end = yield* two.waitFor(ended)
    const diagnostics = JSON.stringify({ one: one.messages, two: two.messages, stderr: two.stderr() })
    expect(end, diagnostics).toStrictEqual({
      result: program === "agent" ? "done" : "alpha done, beta done, gamma done, slow done"
    })

    // No finished call (or path) ran again. The one cut off ran again in the second process when it may
    // (a fork path; an idempotent tool, with the same idempotency key), and not when its tool is not idempotent.
    // (The embedded SQLite file is the process's until it exits.)
    yield* two.exit
    for (const name of quick) expect(lines(Path.join(dir, `${name}.log`)), name).toStrictEqual(["one"])
    const runAgain = program === "fork" || slowIdempotent
    expect(lines(Path.join(dir, "slow.log"))).toStrictEqual(runAgain ? ["one", "two"] : ["one"])
    if (program === "agent") {
      const keys = lines(Path.join(dir, "slow.keys"))
      expect(keys).toHaveLength(runAgain ? 2 : 1)
      expect(keys[0]).toMatch(/^[0-9a-f]{32}$/)
      expect(new Set(keys).size).toBe(1)
    }

    const entries = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read(`crash/${program}`)).pipe(
      Effect.provide(checkpointer(chosen)),
      Effect.map((texts) => texts.map((text) => JSON.parse(text) as Record<string, unknown>))
    )
    if (program === "fork") {
      const keys = entries.filter((entry) => entry["_tag"] === "Completed").map((entry) => String(entry["key"]))
      expect(new Set(keys).size, JSON.stringify(keys)).toBe(keys.length)
      for (const name of [...quick, "slow"]) expect(keys.filter((key) => key.includes(name))).toHaveLength(1)
      return
    }
    // Every call's result recorded once (but slow's when it was not run again); the start of every call of a
    // tool that is not idempotent recorded once; the turn asked once, by the first process; the history pairs
    // every call.
    const indices = (tag: string) =>
      entries.filter((entry) => entry["_tag"] === tag).map((entry) => entry["index"]).sort()
    expect(indices("ToolDone")).toStrictEqual(slowIdempotent ? [0, 1, 2, 3] : [0, 1, 2])
    expect(indices("ToolStarted")).toStrictEqual(slowIdempotent ? [0, 1, 2] : [0, 1, 2, 3])
    const requests = yield* server.requests
    expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["one", "two"])
    const history = Schema.decodeUnknownSync(Body)(requests[1]?.body).history
    const callIds = history.flatMap((item) => item.type === "function_call" ? [item.call_id] : [])
    const outputs = history.flatMap((item) => item.type === "function_call_output" ? [item] : [])
    expect(callIds).toStrictEqual(calls.map((call) => call.callId))
    expect(outputs.map((item) => item.call_id)).toStrictEqual(callIds)
    // What the model read of slow: its output, or that its outcome is unknown.
    const slow = outputs.at(-1)
    if (slowIdempotent) expect(slow?.output).toBe("\"slow done\"")
    else {
      expect(slow?.status).toBe("incomplete")
      expect(slow?.output).toContain("was not run again: whether it took effect is unknown")
    }
  }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer))

/**
 * A run whose log was compacted (its first turn's quick calls summed up in a snapshot) is killed in the slow call
 * of its second turn, and resumes in a new process from the snapshot: no turn asked twice, no quick call run again.
 */
const crashAfterCompaction = (store: (dir: string) => Store) =>
  Effect.gen(function*() {
    const { dir, store: chosen } = yield* workspace(store)
    const server = yield* ProviderServer.ProviderServer
    const calls = quick.map((name) => ({ name, arguments: {}, callId: `call_${name}` }))
    yield* server.reply(
      LoopbackModel.reply(MockLanguageModel.callsTurn(calls)),
      LoopbackModel.reply(MockLanguageModel.callsTurn([{ name: "slow", arguments: {}, callId: "call_slow" }])),
      LoopbackModel.reply(MockLanguageModel.textTurn("done"))
    )
    const config = (runner: string): Config => ({
      store: chosen,
      program: "agent",
      runner,
      provider: server.url,
      markers: dir,
      runId: "crash/compacted",
      lease: 1500,
      waitForLease: true,
      quick,
      compactAfter: 2,
      // Idempotent: the call cut off runs again in the second process.
      slowIdempotent: true
    })
    const one = yield* child.spawn(config("one"))
    yield* one.waitFor(() => started(one.messages, "slow") || one.messages.some(ended))
    expect(one.messages.some(ended), one.stderr()).toBe(false)
    expect(appended(one.messages, "Snapshot")).toBe(1)
    yield* one.kill

    const two = yield* child.spawn(config("two"))
    const end = yield* two.waitFor(ended)
    expect(end, JSON.stringify({ one: one.messages, two: two.messages, stderr: two.stderr() })).toStrictEqual({
      result: "done"
    })
    yield* two.exit
    for (const name of quick) expect(lines(Path.join(dir, `${name}.log`)), name).toStrictEqual(["one"])
    expect(lines(Path.join(dir, "slow.log"))).toStrictEqual(["one", "two"])
    const requests = yield* server.requests
    expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["one", "one", "two"])
    // The resumed process sent the whole history, from the snapshot on: every call paired with its output.
    const history = Schema.decodeUnknownSync(Body)(requests[2]?.body).history
    const callIds = history.flatMap((item) => item.type === "function_call" ? [item.call_id] : [])
    const outputIds = history.flatMap((item) => item.type === "function_call_output" ? [item.call_id] : [])
    expect(callIds).toStrictEqual([...calls.map((call) => call.callId), "call_slow"])
    expect(outputIds).toStrictEqual(callIds)
    // The log holds the snapshot (and what followed), not the first turn's entries.
    const tags = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read("crash/compacted")).pipe(
      Effect.provide(checkpointer(chosen)),
      Effect.map((texts) => texts.map((text) => (JSON.parse(text) as { readonly _tag: string })._tag))
    )
    expect(tags[0]).toBe("Snapshot")
    expect(tags).not.toContain("Decided")
    expect(tags.at(-1)).toBe("Finished")
  }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer))

/** Two processes execute one run at once: one runs its tool, the other is refused at once. */
const twoWriters = (store: (dir: string) => Store) =>
  Effect.gen(function*() {
    const { dir, store: chosen } = yield* workspace(store)
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(
      LoopbackModel.reply(MockLanguageModel.callsTurn([{ name: "slow", arguments: {}, callId: "call_slow" }]))
    )
    const config = (runner: string): Config => ({
      store: chosen,
      program: "agent",
      runner,
      provider: server.url,
      markers: dir,
      runId: "contended",
      lease: 10_000,
      waitForLease: false,
      quick,
      slowIdempotent: false
    })
    const first = yield* child.spawn(config("first"))
    const second = yield* child.spawn(config("second"))
    // Whichever took the run runs the slow tool (for ever); the other ends with an error, which may
    // come first: the race waits for the one that starts the tool (a `raceFirst` lost to the refusal).
    const runs = (process: TestProcess.Child) =>
      Effect.as(process.waitFor(() => started(process.messages, "slow")), process)
    const running = yield* Effect.race(runs(first), runs(second))
    const refused = running === first ? second : first
    const error = yield* refused.waitFor(ended)
    expect(running.messages.some(ended)).toBe(false)
    if (chosen._tag === "sqlite") {
      // The embedded SQLite file is held by one process for its lifetime: the other cannot even open it.
      expect(String(error["error"])).toContain("another process holds the SQLite database")
    } else {
      expect(error["tag"], JSON.stringify(error)).toBe("RunInProgress")
    }
    expect(lines(Path.join(dir, "slow.log"))).toHaveLength(1)
    expect(yield* server.requests).toHaveLength(1)
  }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer))

describe.concurrent("checkpoints across processes", () => {
  for (const { name, skip, store } of stores) {
    describe.skipIf(skip)(`on ${name}`, () => {
      it.live(
        "an AgentLoop run killed mid-turn, its parallel calls recorded, resumes in a new process without running its non-idempotent call again",
        () => crashAndResume(store, "agent"),
        hangs
      )
      // Whether a call runs again does not depend on the store: one store is enough for the idempotent case.
      it.live.skipIf(name !== "files")(
        "an AgentLoop run killed mid-call of an idempotent tool runs the call again, with the same idempotency key",
        () => crashAndResume(store, "agent", true),
        hangs
      )
      it.live(
        "a step program killed mid-fork, its ended paths recorded, resumes in a new process",
        () => crashAndResume(store, "fork"),
        hangs
      )
      it.live("two processes executing one run: one runs it, the other is refused", () => twoWriters(store), hangs)
      it.live(
        "an AgentLoop run killed after its log was compacted resumes from its snapshot in a new process",
        () => crashAfterCompaction(store),
        hangs
      )
    })
  }
})
