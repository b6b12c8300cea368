// @module-tag slow
/**
 * The embedded runner across real processes: a child is killed (`SIGKILL`)
 * in the middle of a run, and a new process that only starts a runner on the
 * same SQLite file resumes it with no request from anyone; the loopback server
 * counts the model requests of every process. A run that keeps killing its
 * process is parked; the decisions for a turn's calls, sent from several
 * processes around crashes, each reach their own call.
 */
import { Approval } from "@agentloop/core"
import { LoopbackModel, MockLanguageModel, ProviderServer, TestProcess } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schedule, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { DurableRunner } from "../src/index.ts"
import type { Config } from "./child.ts"
import * as CrashAgent from "./CrashAgent.ts"
import { crashChild, tempDir } from "./fixtures.ts"

const lines = (file: string): ReadonlyArray<string> =>
  Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : []

const setup = Effect.gen(function*() {
  const temp = tempDir()
  yield* Effect.addFinalizer(() => Effect.sync(temp.remove))
  const server = yield* ProviderServer.ProviderServer
  const filename = Path.join(temp.dir, "runs.db")
  const start = (runner: string, action: Config["action"], runId: string, extra: Partial<Config> = {}) =>
    crashChild.spawn(
      {
        store: { _tag: "sqlite", filename },
        runner,
        provider: server.url,
        markers: temp.dir,
        action,
        runId,
        input: "Go",
        ...extra
      } satisfies Config
    )
  /** The test agent in this process, on a runner over the same file, asking the same server as `test`. */
  const here = (maxCrashes?: number) => {
    const agent = CrashAgent.make({ markers: temp.dir, runner: "test", maxCrashes })
    return {
      agent,
      layer: agent.layer.pipe(
        Layer.provideMerge(DurableRunner.layerSqlite({ filename })),
        Layer.provide(LoopbackModel.layer(server.url, "test"))
      )
    }
  }
  return {
    server,
    start,
    here,
    marker: (tool: string) => lines(Path.join(temp.dir, `${tool}.log`)),
    fuse: Path.join(temp.dir, "fuse")
  }
})

describe.concurrent("the embedded runner across processes", () => {
  it.live(
    "a process that only starts a runner resumes a killed run by itself (no turn asked twice, an idempotent call run again, another reported as unknown); a decision requested before a crash is granted by a later process",
    () =>
      Effect.gen(function*() {
        const { here, marker, server, start } = yield* setup
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

        // Process one runs the run, and is killed while both calls of the first turn run.
        const one = yield* start("one", "run", "crash-1")
        yield* one.waitFor((message) => message["toolStarted"] === "add")
        yield* one.waitFor((message) => message["toolStarted"] === "charge")
        // A second process on the same file is refused while the first holds it.
        const probe = yield* start("probe", "run", "crash-1")
        expect(yield* probe.waitFor(TestProcess.has("error"))).toStrictEqual({ error: "DatabaseLocked" })
        yield* one.kill

        // Process two only starts a runner: the run goes on by itself, up to the decision its second turn waits for.
        const two = yield* start("two", "serve", "crash-1")
        yield* two.waitFor(TestProcess.has("approval"))
        yield* two.kill
        expect(marker("remove")).toStrictEqual([])

        // This process records the decision, and the run finishes here.
        const { agent, layer } = here()
        const result = yield* Effect.gen(function*() {
          const requested = yield* agent.events("crash-1", { fromStep: 1 }).pipe(
            Stream.filter((event) => event._tag === "ApprovalRequested"),
            Stream.runHead
          )
          if (requested._tag === "None" || requested.value._tag !== "ApprovalRequested") return expect.unreachable()
          yield* agent.approve(requested.value.token, Approval.approved)
          return yield* agent.run({ runId: "crash-1", input: "Go" })
        }).pipe(Effect.provide(layer))
        expect(result._tag === "Stopped" && result.output).toBe("done")

        const requests = yield* server.requests
        expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["one", "two", "test"])
        expect(marker("add")).toStrictEqual(["one", "two"])
        expect(marker("charge")).toStrictEqual(["one"])
        expect(marker("remove")).toStrictEqual(["test"])
        const told = JSON.stringify(requests[1]?.body)
        expect(told).toContain("was cut short by a crash and, as it is not idempotent, was not run again")
        expect(told).toContain("fco_call_add")
        expect(JSON.stringify(requests[2]?.body)).toContain("removed /tmp/x")
      }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer)),
    60_000
  )

  it.live(
    "a run that keeps killing its process is parked with a typed reason, listed, refused, and goes on once unparked",
    () =>
      Effect.gen(function*() {
        const { fuse, here, marker, server, start } = yield* setup
        Fs.writeFileSync(fuse, "")
        yield* server.reply(
          LoopbackModel.reply(MockLanguageModel.callsTurn([{ name: "explode", arguments: {}, callId: "call_boom" }])),
          LoopbackModel.reply(MockLanguageModel.textTurn("survived"))
        )
        // The call kills its process: the first time after the run recorded its start, its input and its turn, the
        // second with no step recorded since, which counts.
        const one = yield* start("one", "run", "poison", { maxCrashes: 1 })
        expect(yield* one.exit).toBeNull()
        const two = yield* start("two", "serve", "poison", { maxCrashes: 1 })
        expect(yield* two.exit).toBeNull()
        expect(marker("explode")).toStrictEqual(["one", "two"])

        // The next runner does not run it again: it parks it, and says why.
        const { agent, layer } = here(1)
        yield* Effect.gen(function*() {
          const parked = yield* agent.parked.pipe(
            Effect.repeat({ schedule: Schedule.spaced("50 millis"), until: (runs) => runs.length > 0 })
          )
          expect(parked).toMatchObject([{ _tag: "RunParked", runId: "poison", crashes: 1, recordedSteps: 3 }])
          expect((yield* Effect.flip(agent.run({ runId: "poison", input: "Go" })))._tag).toBe("RunParked")
          expect((yield* Effect.flip(agent.result("poison")))._tag).toBe("RunParked")
          expect(marker("explode")).toStrictEqual(["one", "two"])

          // Fixed (the fuse is gone) and released, it goes on from its recorded turn.
          Fs.rmSync(fuse)
          expect(yield* agent.unpark("poison")).toBe(true)
          const result = yield* agent.run({ runId: "poison", input: "Go" })
          expect(result._tag === "Stopped" && result.output).toBe("survived")
          expect(yield* agent.parked).toStrictEqual([])
          expect(yield* agent.unpark("poison")).toBe(false)
        }).pipe(Effect.provide(layer))
        expect(marker("explode")).toStrictEqual(["one", "two", "test"])
        const requests = yield* server.requests
        expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["one", "test"])
      }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer)),
    60_000
  )

  it.live(
    "decisions for a turn's calls sent from several processes around crashes each reach their own call, none asked twice",
    () =>
      Effect.gen(function*() {
        const { here, marker, server, start } = yield* setup
        yield* server.reply(
          LoopbackModel.reply(MockLanguageModel.callsTurn([
            { name: "remove", arguments: { path: "/a" }, callId: "call_a" },
            { name: "remove", arguments: { path: "/b" }, callId: "call_b" },
            { name: "remove", arguments: { path: "/c" }, callId: "call_c" }
          ])),
          LoopbackModel.reply(MockLanguageModel.textTurn("two removed"))
        )
        // Process one reaches the three wait points, and is killed.
        const one = yield* start("one", "run", "many")
        for (const call of ["call_a", "call_b", "call_c"]) yield* one.waitFor((message) => message["callId"] === call)
        yield* one.kill
        // Process two denies the second call, and is killed with the other two still waiting.
        const two = yield* start("two", "approve", "many", { decisions: { call_b: "not /b" } })
        yield* two.waitFor((message) => message["decided"] === "call_b")
        yield* two.kill
        expect(marker("remove")).toStrictEqual([])

        // This process approves the other two, in the other order.
        const { agent, layer } = here()
        yield* Effect.gen(function*() {
          const requested = yield* agent.events("many", { fromStep: 1 }).pipe(
            Stream.filter((event) => event._tag === "ApprovalRequested"),
            Stream.take(3),
            Stream.runCollect
          )
          const token = (callId: string) =>
            requested.find((event) => event._tag === "ApprovalRequested" && event.call.call_id === callId)
          for (const callId of ["call_c", "call_a"]) {
            const event = token(callId)
            if (event?._tag !== "ApprovalRequested") return expect.unreachable()
            yield* agent.approve(event.token, Approval.approved)
          }
          const b = token("call_b")
          if (b?._tag !== "ApprovalRequested") return expect.unreachable()
          expect((yield* Effect.flip(agent.approve(b.token, Approval.approved)))._tag).toBe("ApprovalAlreadyDecided")

          const result = yield* agent.run({ runId: "many", input: "Go" })
          expect(result._tag === "Stopped" && result.output).toBe("two removed")
          const events = yield* Stream.runCollect(agent.events("many", { fromStep: 1 }))
          expect(events.filter((event) => event._tag === "ApprovalRequested")).toHaveLength(3)
          const outcomes = events.flatMap((event) =>
            event._tag === "ToolResult" ? [[event.call.call_id, event.outcome, event.reason ?? null]] : []
          )
          expect(outcomes).toStrictEqual([
            ["call_a", "success", null],
            ["call_b", "denied", "not /b"],
            ["call_c", "success", null]
          ])
        }).pipe(Effect.provide(layer))
        expect(marker("remove")).toStrictEqual(["test", "test"])
        const requests = yield* server.requests
        expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["one", "test"])
        const told = JSON.stringify(requests[1]?.body)
        expect(told).toContain("removed /a")
        expect(told).toContain("removed /c")
        expect(told).toContain("not /b")
      }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer)),
    60_000
  )
})
