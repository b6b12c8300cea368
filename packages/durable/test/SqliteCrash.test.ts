/**
 * The embedded runner across real processes: a child is killed (`SIGKILL`)
 * in the middle of a run and a new process resumes it from the same SQLite
 * file; the loopback server counts the model requests of every process.
 */
import { MockLanguageModel, ProviderServer } from "@agentloop/core/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Config } from "./child.ts"
import { tempDir, turnReply } from "./fixtures.ts"
import { has, spawn } from "./processes.ts"

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
  it.live("resumes a killed run in a new process: no turn asked twice, an idempotent call run again, another not", () =>
    Effect.gen(function*() {
      const { server, config, marker } = yield* setup
      yield* server.reply(
        turnReply(MockLanguageModel.callsTurn([
          { name: "add", arguments: { a: 2, b: 3 }, callId: "call_add" },
          { name: "charge", arguments: { cents: 500 }, callId: "call_charge" }
        ])),
        turnReply(MockLanguageModel.textTurn("done"))
      )
      const first = yield* spawn(config("one", "run", "crash-1", "Add and charge"))
      yield* first.waitFor((message) => message["toolStarted"] === "add")
      yield* first.waitFor((message) => message["toolStarted"] === "charge")

      // A second process on the same file is refused while the first holds it.
      const probe = yield* spawn(config("probe", "run", "crash-1", "Add and charge"))
      expect(yield* probe.waitFor(has("error"))).toStrictEqual({ error: "DatabaseLocked" })

      yield* first.kill
      const second = yield* spawn(config("two", "run", "crash-1", "Add and charge"))
      const done = yield* second.waitFor((message) => has("result")(message) || has("error")(message))
      expect(done, second.stderr()).toStrictEqual({ result: "done" })

      const requests = yield* server.requests
      expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["one", "two"])
      expect(marker("add")).toStrictEqual(["one", "two"])
      expect(marker("charge")).toStrictEqual(["one"])
      const told = JSON.stringify(requests[1]?.body)
      expect(told).toContain("was cut short by a crash and, as it is not idempotent, was not run again")
      expect(told).toContain("fco_call_add")
    }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer)), 30_000)

  it.live("an approval requested before a crash is granted later by another process, which finishes the run", () =>
    Effect.gen(function*() {
      const { server, config, marker } = yield* setup
      yield* server.reply(
        turnReply(MockLanguageModel.callsTurn([{ name: "remove", arguments: { path: "/tmp/x" }, callId: "call_rm" }])),
        turnReply(MockLanguageModel.textTurn("removed"))
      )
      const first = yield* spawn(config("one", "run", "approve-1", "Remove /tmp/x"))
      yield* first.waitFor(has("approval"))
      yield* first.kill
      expect(marker("remove")).toStrictEqual([])

      const approver = yield* spawn(config("two", "approve", "approve-1", "Remove /tmp/x"))
      const done = yield* approver.waitFor((message) => has("result")(message) || has("error")(message))
      expect(done, approver.stderr()).toStrictEqual({ result: "removed" })
      expect(marker("remove")).toStrictEqual(["two"])
      expect((yield* server.requests).map((request) => request.headers["x-runner"])).toStrictEqual(["one", "two"])
    }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer)), 30_000)
})

void Layer
