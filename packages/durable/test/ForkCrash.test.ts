// @module-tag slow
/**
 * A fork across real processes, on SQLite: forked from a finished run at the
 * start of a call (of a tool that is not idempotent) after a decided
 * approval, the fork is run by another process, which is killed (`SIGKILL`)
 * in the middle of the fork's own call; a process that only starts a runner
 * finishes it. The copied turns are never asked again, the calls that had
 * ended never run again, the call that had started is not run (its outcome
 * unknown), the approval stays decided, and the fork's log replays it all.
 */
import { Approval } from "@agentloop/core"
import { LoopbackModel, MockLanguageModel, ProviderServer, TestProcess } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { DurableApproval, DurableRunner, NodeSqliteClient } from "../src/index.ts"
import type { Config } from "./child.ts"
import * as CrashAgent from "./CrashAgent.ts"
import { crashChild, tempDir } from "./fixtures.ts"

const lines = (file: string): ReadonlyArray<string> =>
  Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : []

const secretOf = (token: string) => Schema.decodeSync(DurableApproval.TokenFromString)(token).secret

describe("a fork across processes", () => {
  it.live(
    "killed in the middle of its own call, it is finished by the next runner, with nothing it copied done twice",
    () =>
      Effect.gen(function*() {
        const temp = tempDir()
        yield* Effect.addFinalizer(() => Effect.sync(temp.remove))
        const server = yield* ProviderServer.ProviderServer
        const filename = Path.join(temp.dir, "runs.db")
        const marker = (tool: string) => lines(Path.join(temp.dir, `${tool}.log`))
        const agent = CrashAgent.make({ markers: temp.dir, runner: "test" })
        /** This process on the file: a runner of the agent, or a client that only stores and reads runs. */
        const here = (runs: boolean) =>
          runs
            ? agent.layer.pipe(
              Layer.provideMerge(DurableRunner.layerSqlite({ filename })),
              Layer.provide(LoopbackModel.layer(server.url, "test"))
            )
            : DurableRunner.layer("client").pipe(Layer.provideMerge(NodeSqliteClient.layer({ filename })))
        const spawn = (runner: string) =>
          crashChild.spawn(
            {
              store: { _tag: "sqlite", filename },
              runner,
              provider: server.url,
              markers: temp.dir,
              action: "serve",
              runId: "fork",
              input: "Go"
            } satisfies Config
          )
        const approvalOf = (runId: string) =>
          agent.events(runId, { fromStep: 1 }).pipe(
            Stream.filter((event) => event._tag === "ApprovalRequested"),
            Stream.runHead,
            Effect.flatMap((event) =>
              event._tag === "Some" && event.value._tag === "ApprovalRequested"
                ? Effect.succeed(event.value.token)
                : Effect.die("no approval requested")
            )
          )

        yield* server.reply(
          LoopbackModel.reply(
            MockLanguageModel.callsTurn([{ name: "remove", arguments: { path: "/a" }, callId: "call_rm" }])
          ),
          LoopbackModel.reply(
            MockLanguageModel.callsTurn([{ name: "pay", arguments: { cents: 5 }, callId: "call_pay" }])
          ),
          LoopbackModel.reply(MockLanguageModel.textTurn("done")),
          LoopbackModel.reply(
            MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 }, callId: "call_add" }])
          ),
          LoopbackModel.reply(MockLanguageModel.textTurn("forked done"))
        )

        // This process runs the source: a removal it approves, a payment, an answer.
        const source = yield* Effect.gen(function*() {
          yield* agent.start({ runId: "src", input: "Go" })
          yield* agent.approve(yield* approvalOf("src"), Approval.approved)
          const result = yield* agent.run({ runId: "src", input: "Go" })
          expect(result._tag === "Stopped" && result.output).toBe("done")
          return yield* agent.checkpoints("src")
        }).pipe(Effect.provide(here(true)))
        const paying = source.findIndex((c) => c.kind === "started" && c.step === 2)
        expect(source.map((c) => c.kind)).toStrictEqual([
          "turn",
          "started",
          "tool",
          "decision",
          "turn",
          "started",
          "tool",
          "decision",
          "turn",
          "finished"
        ])
        expect(paying).toBe(5)

        // The fork from the payment's start is recorded and started here, by a process that runs no agent.
        yield* agent.fork({ runId: "fork", from: "src", at: paying }).pipe(Effect.provide(here(false)))

        // Process one picks the fork up, asks for its next turn, and is killed in the middle of its call.
        const one = yield* spawn("one")
        yield* one.waitFor((message) => message["toolStarted"] === "add")
        yield* one.kill
        // Process two only starts a runner: the fork goes on by itself and finishes.
        const two = yield* spawn("two")
        expect(yield* two.waitFor(TestProcess.has("finished"))).toStrictEqual({ finished: "forked done" })
        yield* two.kill

        // No copied turn was asked again; the removal and the payment ran in the source only; the fork's own
        // idempotent call cut off by the crash ran again.
        const requests = yield* server.requests
        expect(requests.map((request) => request.headers["x-runner"])).toStrictEqual([
          "test",
          "test",
          "test",
          "one",
          "two"
        ])
        expect(marker("remove")).toStrictEqual(["test"])
        expect(marker("pay")).toStrictEqual(["test"])
        expect(marker("add")).toStrictEqual(["one", "two"])
        const told = JSON.stringify(requests[3]?.body)
        expect(told).toContain("removed /a")
        expect(told).toContain("was cut short by a crash and, as it is not idempotent, was not run again")
        expect(told).not.toContain("paid 5")

        yield* Effect.gen(function*() {
          // The fork's log replays what it copied, then what it did.
          const events = yield* Stream.runCollect(agent.events("fork", { fromStep: 1 }))
          const outcomes = events.flatMap((event) =>
            event._tag === "ToolResult" ? [`${event.call.call_id} ${event.outcome}`] : []
          )
          expect(outcomes).toStrictEqual(["call_rm success", "call_pay failure", "call_add success"])
          const finished = events.at(-1)
          expect(finished?._tag === "Finished" && finished.result._tag === "Stopped" && finished.result.output).toBe(
            "forked done"
          )
          // Its approval was decided in the source: its own token, with a secret of its own, decides nothing.
          const token = yield* approvalOf("fork")
          expect(secretOf(token)).not.toBe(secretOf(yield* approvalOf("src")))
          const refused = yield* Effect.flip(agent.approve(token, Approval.denied("too late")))
          expect(refused).toMatchObject({ _tag: "ApprovalAlreadyDecided", decision: { _tag: "Approved" } })

          // Its history is the source's up to the fork, then its own; the source is as it was.
          const forked = yield* agent.checkpoints("fork")
          expect(forked.slice(0, paying + 1)).toStrictEqual(source.slice(0, paying + 1))
          expect(forked.slice(paying + 1).map((c) => `${c.kind} ${c.step}`)).toStrictEqual([
            "fork 2",
            "decision 2",
            "turn 3",
            "tool 3",
            "decision 3",
            "turn 4",
            "finished 4"
          ])
          expect(yield* agent.checkpoints("src")).toStrictEqual(source)
        }).pipe(Effect.provide(here(false)))
      }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer)),
    60_000
  )
})
