/**
 * Checkpoints across real processes: a child executing a run is killed
 * (`SIGKILL`) in the middle of a tool call, and a new process executes the run
 * again from the same store, files or PostgreSQL. The loopback server records
 * every model request of every process, so the test sees that no turn was
 * asked twice; the tools' marker files show which call ran again.
 */
import { LoopbackModel, MockLanguageModel, ProviderServer, Reachable, TestProcess } from "@agentloop/testing"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Config } from "./crash/child.ts"
import { sources } from "./fixtures.ts"

const child = new URL("./crash/child.ts", import.meta.url).pathname
const postgres = await Reachable.listening(5432)
if (!postgres) console.warn("CheckpointCrash: SKIPPING the PostgreSQL case: nothing listens on 127.0.0.1:5432")

/**
 * Each case starts two Node processes that load the sources: seconds on a busy machine, not a fixed time.
 * The limit only ends a case that hangs; a child that dies ends its case at once (see `TestProcess.waitFor`).
 */
const hangs = 600_000

const lines = (file: string): ReadonlyArray<string> =>
  Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : []

/** Runs the crash scenario on `store`, for `program`; cleans up after itself. */
const scenario = (store: (dir: string) => Config["store"], program: Config["program"]) =>
  Effect.gen(function*() {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-crash-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(
      LoopbackModel.reply(
        MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 }, callId: "call_add" }])
      ),
      LoopbackModel.reply(MockLanguageModel.callsTurn([
        { name: "add", arguments: { a: 5, b: 5 }, callId: "call_add_again" },
        { name: "slow", arguments: {}, callId: "call_slow" }
      ])),
      LoopbackModel.reply(MockLanguageModel.textTurn("done"))
    )
    const config = (runner: string): Config => ({
      store: store(dir),
      program,
      runner,
      provider: server.url,
      markers: dir,
      runId: "crash-run"
    })

    // Killed while the second turn's `slow` runs (its `add` may or may not have ended and been recorded).
    const one = yield* TestProcess.spawn(child, config("one"), sources)
    yield* one.waitFor((message) => message["toolStarted"] === "slow")
    yield* one.kill

    const two = yield* TestProcess.spawn(child, config("two"), sources)
    const ended = yield* two.waitFor((message) =>
      TestProcess.has("result")(message) || TestProcess.has("error")(message)
    )
    expect(ended, two.stderr()).toStrictEqual({ result: "done" })

    // The first two turns were asked once, by the killed process; the resumed one asked only for the third.
    const requests = yield* server.requests
    expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["one", "one", "two"])
    const diagnostics = JSON.stringify({
      one: one.messages,
      two: two.messages,
      store: Fs.readdirSync(dir, { recursive: true })
    })
    expect(JSON.stringify(requests[2]?.body), diagnostics).toContain("finally")
    // The first turn's `add` ended (and was recorded) long before the kill: not run again. `slow` was cut off: run
    // again. The second turn's `add` ran concurrently with `slow`: at most once more.
    const adds = lines(Path.join(dir, "add.log"))
    expect(adds.slice(0, 2)).toStrictEqual(["one", "one"])
    expect(adds.length).toBeLessThanOrEqual(3)
    expect(lines(Path.join(dir, "slow.log"))).toStrictEqual(["one", "two"])
  }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer))

describe("checkpoints across processes", () => {
  it.live(
    "an AgentLoop run killed mid-tool resumes in a new process, on the file system",
    () => scenario((dir) => ({ _tag: "files", directory: Path.join(dir, "store") }), "agent"),
    hangs
  )

  it.live(
    "a step program killed mid-tool resumes in a new process, on the file system",
    () => scenario((dir) => ({ _tag: "files", directory: Path.join(dir, "store") }), "steps"),
    hangs
  )

  const table = `agentloop_crash_${process.pid}`
  it.live.skipIf(!postgres)(
    "an AgentLoop run killed mid-tool resumes in a new process, on PostgreSQL",
    () =>
      scenario(() => ({ _tag: "pg", table }), "agent").pipe(
        Effect.ensuring(
          Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DROP TABLE IF EXISTS ${sql(table)}`).pipe(
            Effect.provide(PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" })),
            Effect.orDie
          )
        )
      ),
    hangs
  )
})
