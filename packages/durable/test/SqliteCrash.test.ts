/**
 * The embedded runner across real processes: a child is killed (`SIGKILL`)
 * in the middle of a run and a new process resumes it from the same SQLite
 * file; the loopback server counts the model requests of every process.
 */
import { LoopbackModel, MockLanguageModel, ProviderServer, TestProcess } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Config } from "./child.ts"
import { childScript, sources, tempDir } from "./fixtures.ts"

const lines = (file: string): ReadonlyArray<string> =>
  Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : []

const setup = Effect.gen(function*() {
  const temp = tempDir()
  yield* Effect.addFinalizer(() => Effect.sync(temp.remove))
  const server = yield* ProviderServer.ProviderServer
  const config = (runner: string, action: Config["action"], runId: string, input: string): Config => ({
    store: { _tag: "sqlite", filename: Path.join(temp.dir, "runs.db") },
    runner,
    provider: server.url,
    markers: temp.dir,
    action,
    runId,
    input
  })
  return { server, config, marker: (tool: string) => lines(Path.join(temp.dir, `${tool}.log`)) }
})

describe("the embedded runner across processes", () => {
  it.live(
    "resumes a killed run in a new process (no turn asked twice, an idempotent call run again, another not), and a decision requested before a crash is granted by a later process",
    () =>
      Effect.gen(function*() {
        const { server, config, marker } = yield* setup
        yield* server.reply(
          LoopbackModel.reply(MockLanguageModel.callsTurn([
            { name: "add", arguments: { a: 2, b: 3 }, callId: "call_add" },
            { name: "charge", arguments: { cents: 500 }, callId: "call_charge" }
          ])),
          LoopbackModel.reply(
            MockLanguageModel.callsTurn([{ name: "remove", arguments: { path: "/tmp/x" }, callId: "call_rm" }])
          ),
          LoopbackModel.reply(MockLanguageModel.textTurn("done"))
        )
        const start = (runner: string, action: Config["action"]) =>
          TestProcess.spawn(childScript, config(runner, action, "crash-1", "Add, charge, remove"), sources)

        // Process one is killed while both calls of the first turn run.
        const one = yield* start("one", "run")
        yield* one.waitFor((message) => message["toolStarted"] === "add")
        yield* one.waitFor((message) => message["toolStarted"] === "charge")
        // A second process on the same file is refused while the first holds it.
        const probe = yield* start("probe", "run")
        expect(yield* probe.waitFor(TestProcess.has("error"))).toStrictEqual({ error: "DatabaseLocked" })
        yield* one.kill

        // Process two resumes the run, and is killed while the second turn's call waits for a decision.
        const two = yield* start("two", "run")
        yield* two.waitFor(TestProcess.has("approval"))
        yield* two.kill
        expect(marker("remove")).toStrictEqual([])

        // Process three grants the decision, and finishes the run.
        const three = yield* start("three", "approve")
        const done = yield* three.waitFor((message) =>
          TestProcess.has("result")(message) || TestProcess.has("error")(message)
        )
        expect(done, three.stderr()).toStrictEqual({ result: "done" })

        const requests = yield* server.requests
        expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["one", "two", "three"])
        expect(marker("add")).toStrictEqual(["one", "two"])
        expect(marker("charge")).toStrictEqual(["one"])
        expect(marker("remove")).toStrictEqual(["three"])
        const told = JSON.stringify(requests[1]?.body)
        expect(told).toContain("was cut short by a crash and, as it is not idempotent, was not run again")
        expect(told).toContain("fco_call_add")
        expect(JSON.stringify(requests[2]?.body)).toContain("removed /tmp/x")
      }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer)),
    40_000
  )
})
