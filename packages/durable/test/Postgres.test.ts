// @module-tag slow
/**
 * Runners sharing PostgreSQL, as real processes: two runners and this test
 * as a client. An approval is granted from the client to a run on a runner,
 * and a run whose runner is killed (`SIGKILL`) finishes on the other one.
 */
import { Approval } from "@agentloop/core"
import { LoopbackModel, MockLanguageModel, ProviderServer, TestProcess } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { DurableAgent, DurableRunner } from "../src/index.ts"
import type { Config } from "./child.ts"
import { crashChild, tempDir } from "./fixtures.ts"
import { connection, dropTables, reachable, uniquePrefix } from "./postgres.ts"

const available = await reachable()

const lines = (file: string): ReadonlyArray<string> =>
  Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : []

/** The agent as a client sees it: its name and output; the runners hold its tools. */
const agent = DurableAgent.make("crash-test", {})

/** The `Finished` event of `runId`, read from its log (which asks the engine nothing). */
const finished = (runId: string) =>
  agent.events(runId, { fromStep: 1 }).pipe(
    Stream.filter((event) => event._tag === "Finished"),
    Stream.runHead,
    Effect.flatMap(Effect.fromOption),
    Effect.orDie
  )

describe.skipIf(!available)("runners sharing PostgreSQL", () => {
  it.live("a decision granted from a client process, and a killed runner's run finished by the other", () => {
    const prefix = uniquePrefix("runners")
    const temp = tempDir()
    return Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const config = (runner: string): Config => ({
        store: { _tag: "pg", prefix, client: false },
        runner,
        provider: server.url,
        markers: temp.dir,
        action: "serve",
        runId: "",
        input: ""
      })
      const runners = {
        A: yield* crashChild.spawn(config("A")),
        B: yield* crashChild.spawn(config("B"))
      }
      yield* Effect.all([runners.A.waitFor(TestProcess.has("ready")), runners.B.waitFor(TestProcess.has("ready"))])

      // A decision from this process reaches the run on whichever runner holds it.
      yield* server.reply(
        LoopbackModel.reply(
          MockLanguageModel.callsTurn([{ name: "remove", arguments: { path: "/x" }, callId: "call_rm" }])
        ),
        LoopbackModel.reply(MockLanguageModel.textTurn("removed"))
      )
      yield* agent.start({ runId: "pg-approve", input: "Remove /x" })
      const requested = yield* agent.events("pg-approve", { fromStep: 1 }).pipe(
        Stream.filter((event) => event._tag === "ApprovalRequested"),
        Stream.runHead
      )
      if (requested._tag === "None" || requested.value._tag !== "ApprovalRequested") return expect.unreachable()
      yield* agent.approve(requested.value.token, Approval.approved)
      const approved = yield* agent.run({ runId: "pg-approve", input: "Remove /x" })
      expect(approved._tag === "Stopped" && approved.output).toBe("removed")
      expect(lines(Path.join(temp.dir, "remove.log"))).toHaveLength(1)

      // The runner that runs the tools is killed mid-call; the other finishes the run.
      yield* server.reply(
        LoopbackModel.reply(MockLanguageModel.callsTurn([
          { name: "add", arguments: { a: 2, b: 3 }, callId: "call_add" },
          { name: "charge", arguments: { cents: 500 }, callId: "call_charge" }
        ])),
        LoopbackModel.reply(MockLanguageModel.textTurn("done"))
      )
      yield* agent.start({ runId: "pg-crash", input: "Add and charge" })
      const started = yield* Effect.raceFirst(
        runners.A.waitFor((message) => message["toolStarted"] === "charge"),
        runners.B.waitFor((message) => message["toolStarted"] === "charge")
      )
      const killed = started["runner"] === "A" ? "A" : "B"
      const survivor = killed === "A" ? "B" : "A"
      yield* runners[killed].kill
      // Nobody asks for the run: the survivor takes the dead runner's runs over by itself. No deadline here but the
      // test's: on a busy machine, takeover and child processes take what they take.
      const done = yield* finished("pg-crash")
      expect(done._tag === "Finished" && done.result._tag === "Stopped" && done.result.output).toBe("done")

      const requests = (yield* server.requests).slice(2)
      expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual([killed, survivor])
      expect(lines(Path.join(temp.dir, "add.log"))).toStrictEqual([killed, survivor])
      expect(lines(Path.join(temp.dir, "charge.log"))).toStrictEqual([killed])
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(
        ProviderServer.layer,
        DurableRunner.layerPg("client", connection, {
          prefix,
          sharding: { shardsPerGroup: 16 }
        })
      )),
      Effect.ensuring(Effect.andThen(dropTables(prefix), Effect.sync(temp.remove)))
    )
  }, 60_000)

  it.live("a new process that only starts a runner goes on with the runs of a killed runner, with no request", () => {
    const prefix = uniquePrefix("resume")
    const temp = tempDir()
    return Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const start = (runner: string, action: Config["action"]) =>
        crashChild.spawn(
          {
            store: { _tag: "pg", prefix, client: false },
            runner,
            provider: server.url,
            markers: temp.dir,
            action,
            runId: "pg-resume",
            input: "Add and charge"
          } satisfies Config
        )
      yield* server.reply(
        LoopbackModel.reply(MockLanguageModel.callsTurn([
          { name: "add", arguments: { a: 2, b: 3 }, callId: "call_add" },
          { name: "charge", arguments: { cents: 500 }, callId: "call_charge" }
        ])),
        LoopbackModel.reply(MockLanguageModel.textTurn("done"))
      )
      const a = yield* start("A", "run")
      yield* a.waitFor((message) => message["toolStarted"] === "add")
      yield* a.waitFor((message) => message["toolStarted"] === "charge")
      yield* a.kill
      // B is a runner of another name: it takes A's shards once A's heartbeat is older than shardLockExpiration.
      const b = yield* start("B", "serve")
      const done = yield* b.waitFor((message) =>
        TestProcess.has("finished")(message) || TestProcess.has("error")(message)
      )
      expect(done, b.stderr()).toStrictEqual({ finished: "done" })
      const requests = yield* server.requests
      expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual(["A", "B"])
      expect(lines(Path.join(temp.dir, "add.log"))).toStrictEqual(["A", "B"])
      expect(lines(Path.join(temp.dir, "charge.log"))).toStrictEqual(["A"])
      expect(JSON.stringify(requests[1]?.body)).toContain("whether it took effect is unknown")
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(
        ProviderServer.layer,
        DurableRunner.layerPg("client", connection, { prefix, sharding: { shardsPerGroup: 16 } })
      )),
      Effect.ensuring(Effect.andThen(dropTables(prefix), Effect.sync(temp.remove)))
    )
  }, 60_000)

  it.live("a run id holding a NUL byte (which PostgreSQL's text refuses) fails with InvalidRunId, typed, before anything is sent", () => {
    const prefix = uniquePrefix("runid")
    return Effect.gen(function*() {
      const runId = "nul\u0000byte"
      expect((yield* Effect.flip(agent.start({ runId, input: "Hi" })))._tag).toBe("InvalidRunId")
      expect((yield* Effect.flip(agent.result(runId)))._tag).toBe("InvalidRunId")
      expect((yield* Effect.flip(Stream.runDrain(agent.events(runId))))._tag).toBe("InvalidRunId")
      expect(yield* agent.result("no-such-run")).toStrictEqual(Option.none())
    }).pipe(
      Effect.provide(DurableRunner.layerPg("client", connection, { prefix })),
      Effect.ensuring(dropTables(prefix))
    )
  })
})
