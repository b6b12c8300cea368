/**
 * Who may decide a durable run's call: only the holder of the token the run
 * issued, only for a call the run reached, and only once. And run ids that
 * are refused before anything is stored.
 */
import { Approval } from "@agentloop/core"
import { RunId } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Layer, Schema, Stream } from "effect"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import * as Path from "node:path"
import { DurableAgent, DurableApproval, DurableRunner } from "../src/index.ts"
import { answer, call, pricing, ran, tempDir, toolkit } from "./fixtures.ts"

const agent = DurableAgent.make("guarded", { model: "test-model", instructions: "Use the tools.", toolkit })
const other = DurableAgent.make("other", { model: "test-model", instructions: "Use the tools.", toolkit })

const decodeToken = Schema.decodeSync(DurableApproval.TokenFromString)
const encodeToken = Schema.encodeSync(DurableApproval.TokenFromString)

/** A token for the run's first call, with a secret the run never issued. */
const guessed = (runId: string) =>
  encodeToken({ agent: "guarded", runId, wait: "approval/1/0", secret: "A".repeat(43) })

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

describe("durable approval tokens", () => {
  it.live(
    "refuse a forged, an early and a replayed token with typed errors; the real one works once, after a runner restart",
    () => {
      const temp = tempDir()
      const filename = Path.join(temp.dir, "runs.db")
      const before = ran.remove
      const runner = agent.layer.pipe(
        Layer.provideMerge(DurableRunner.layerSqlite({ filename, synchronous: "NORMAL" }))
      )
      return Effect.gen(function*() {
        const token = yield* Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(runner)
          return yield* Effect.gen(function*() {
            // Early: a token made up before the run exists names nothing the run issued.
            const early = yield* Effect.flip(agent.approve(guessed("g1"), Approval.approved))
            expect(early).toMatchObject({ _tag: "ApprovalNotIssued", runId: "g1", wait: "approval/1/0" })
            yield* agent.start({ runId: "g1", input: "Remove /etc/x" })
            const token = yield* approvalOf("g1")
            // Once the run reached the call, the guess is still not its token.
            expect((yield* Effect.flip(agent.approve(guessed("g1"), Approval.approved)))._tag).toBe("InvalidToken")
            return token
          }).pipe(Effect.provideContext(context))
        }))
        const parsed = decodeToken(token)
        expect(parsed).toMatchObject({ agent: "guarded", runId: "g1", wait: "approval/1/0" })
        expect(parsed.secret.length).toBeGreaterThanOrEqual(43)

        // The first runner is gone; the run waits in the file. A new runner takes the decision.
        yield* Effect.gen(function*() {
          // Forged: the right names with another secret, and the engine's own token for the same wait point.
          const forged = yield* Effect.flip(
            agent.approve(encodeToken({ ...parsed, secret: "x".repeat(parsed.secret.length) }), Approval.approved)
          )
          expect(forged._tag).toBe("InvalidToken")
          expect(forged.message).toMatch(/secret is not the one run "g1" issued/)
          const engineToken = DurableDeferred.tokenFromExecutionId(DurableApproval.deferred(1, 0), {
            workflow: agent.workflow,
            executionId: yield* agent.workflow.executionId({ runId: "g1", input: "" })
          })
          expect((yield* Effect.flip(agent.approve(engineToken, Approval.approved)))._tag).toBe("InvalidToken")
          // The real token sent to another agent, or with its first character lost: the error, logged, must not carry it.
          const elsewhere = yield* Effect.flip(DurableApproval.approve(other.workflow, token, Approval.approved))
          const cut = yield* Effect.flip(agent.approve(token.slice(1), Approval.approved))
          for (const refused of [elsewhere, cut]) {
            expect(refused._tag).toBe("InvalidToken")
            // The token's tail encodes its secret (the last field).
            expect(JSON.stringify(refused)).not.toContain(token.slice(-24))
            expect(Cause.pretty(Cause.fail(refused))).not.toContain(token.slice(-24))
          }
          expect(elsewhere).toMatchObject({ token: `approval/1/0 of run "g1" of agent "guarded"` })
          expect(ran.remove).toBe(before)

          yield* agent.approve(token, Approval.approved)
          const result = yield* agent.run({ runId: "g1", input: "Remove /etc/x" })
          expect(result._tag === "Stopped" && result.output).toBe("removed")
          expect(ran.remove).toBe(before + 1)

          // Replayed: refused whatever it asks, and the first decision stands.
          const replayed = yield* Effect.flip(agent.approve(token, Approval.denied("changed my mind")))
          expect(replayed).toMatchObject({ _tag: "ApprovalAlreadyDecided", decision: { _tag: "Approved" } })
          expect(ran.remove).toBe(before + 1)
        }).pipe(Effect.provide(runner))
      }).pipe(
        Effect.provide(
          Layer.mergeAll(MockLanguageModel.layer([call("remove", { path: "/etc/x" }), answer("removed")]), pricing)
        ),
        Effect.ensuring(Effect.sync(temp.remove))
      )
    }
  )

  it.live("two decisions sent at once with one token: one is recorded, the other is refused", () => {
    const temp = tempDir()
    const before = ran.remove
    return Effect.gen(function*() {
      yield* agent.start({ runId: "twice", input: "Remove /etc/y" })
      const token = yield* approvalOf("twice")
      const outcomes = yield* Effect.all(
        [agent.approve(token, Approval.approved), agent.approve(token, Approval.denied("no"))],
        { concurrency: 2, mode: "result" }
      )
      const tags = outcomes.map((outcome) => outcome._tag === "Success" ? "recorded" : outcome.failure._tag).sort()
      expect(tags).toStrictEqual(["ApprovalAlreadyDecided", "recorded"])
      const result = yield* agent.run({ runId: "twice", input: "Remove /etc/y" })
      expect(result._tag).toBe("Stopped")
      const events = yield* Stream.runCollect(agent.events("twice", { fromStep: 1 }))
      const results = events.filter((event) => event._tag === "ToolResult")
      expect(results).toHaveLength(1)
      expect(ran.remove - before).toBe(results[0]?._tag === "ToolResult" && results[0].outcome === "success" ? 1 : 0)
    }).pipe(
      Effect.provide(agent.layer.pipe(
        Layer.provideMerge(
          DurableRunner.layerSqlite({ filename: Path.join(temp.dir, "runs.db"), synchronous: "NORMAL" })
        ),
        Layer.provideMerge(
          Layer.mergeAll(MockLanguageModel.layer([call("remove", { path: "/etc/y" }), answer("ok")]), pricing)
        )
      )),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})

describe("run ids", () => {
  it.live("an empty, an overlong or a control-character id is refused with InvalidRunId before anything is stored", () => {
    const temp = tempDir()
    return Effect.gen(function*() {
      for (const runId of ["", "x".repeat(RunId.maxLength + 1), "a\u0000b", "line\nbreak"]) {
        const refused = yield* Effect.flip(agent.run({ runId, input: "Hi" }))
        expect(refused._tag).toBe("InvalidRunId")
        expect((yield* Effect.flip(agent.start({ runId, input: "Hi" })))._tag).toBe("InvalidRunId")
        expect((yield* Effect.flip(agent.result(runId)))._tag).toBe("InvalidRunId")
        expect((yield* Effect.flip(Stream.runDrain(agent.events(runId))))._tag).toBe("InvalidRunId")
        const token = encodeToken({ agent: "guarded", runId, wait: "approval/1/0", secret: "s" })
        expect((yield* Effect.flip(agent.approve(token, Approval.approved)))._tag).toBe("InvalidToken")
      }
      const longest = "é".repeat(RunId.maxLength)
      const result = yield* agent.run({ runId: longest, input: "Hi" })
      expect(result._tag === "Stopped" && result.output).toBe("hello")
      const recorder = yield* MockLanguageModel.MockLanguageModel
      expect((yield* recorder.requests).length).toBe(1)
    }).pipe(
      Effect.provide(agent.layer.pipe(
        Layer.provideMerge(
          DurableRunner.layerSqlite({ filename: Path.join(temp.dir, "runs.db"), synchronous: "NORMAL" })
        ),
        Layer.provideMerge(Layer.mergeAll(MockLanguageModel.layer([answer("hello")]), pricing))
      )),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})
