import { Approval } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/core/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import * as Path from "node:path"
import { DurableAgent } from "../src/index.ts"
import { add, answer, call, embedded, model, ran, tempDir, toolkit } from "./fixtures.ts"

const agent = DurableAgent.make("calculator", { model, instructions: "Use the tools.", toolkit })

describe("DurableAgent on the embedded runner", () => {
  it.live("runs an agent as a workflow, logs its events, and answers a second run of the same id from storage", () => {
    const temp = tempDir()
    const before = ran.add
    return Effect.gen(function*() {
      const result = yield* agent.run({ runId: "r1", input: "Add 2 and 3" })
      expect(result._tag).toBe("Stopped")
      if (result._tag !== "Stopped") return
      expect(result.output).toBe("5")
      expect(result.termination.accounting.steps).toBe(2)
      expect(ran.add - before).toBe(1)
      const again = yield* agent.run({ runId: "r1", input: "Add 2 and 3" })
      expect(again).toStrictEqual(result)
      const recorder = yield* MockLanguageModel.MockLanguageModel
      expect((yield* recorder.requests).length).toBe(2)
      const events = yield* Stream.runCollect(agent.events("r1", { fromStep: 1 }))
      expect(events.map((event) => event._tag)).toStrictEqual([
        "TurnStarted",
        "TurnCompleted",
        "ToolResult",
        "Verdict",
        "TurnStarted",
        "TurnCompleted",
        "Verdict",
        "Finished"
      ])
      const fromLast = yield* Stream.runCollect(agent.events("r1"))
      expect(fromLast.map((event) => event._tag)).toStrictEqual(["TurnStarted", "TurnCompleted", "Verdict", "Finished"])
    }).pipe(
      Effect.provide(agent.layer.pipe(Layer.provideMerge(embedded(Path.join(temp.dir, "runs.db"), [call("add", { a: 2, b: 3 }), answer("5")])))),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})
void add

describe("DurableAgent approvals", () => {
  it.live("waits on a durable decision, streams ApprovalRequested, and goes on when approved", () => {
    const temp = tempDir()
    const before = ran.remove
    return Effect.gen(function*() {
      yield* agent.start({ runId: "a1", input: "Remove /tmp/x" })
      const requested = yield* agent.events("a1", { fromStep: 1 }).pipe(
        Stream.filter((event) => event._tag === "ApprovalRequested"),
        Stream.runHead
      )
      if (requested._tag === "None" || requested.value._tag !== "ApprovalRequested") return expect.unreachable()
      expect(ran.remove).toBe(before)
      expect(yield* agent.result("a1")).toStrictEqual(Option.none())
      const invalid = yield* Effect.flip(agent.approve("not-a-token", Approval.approved))
      expect(invalid._tag).toBe("InvalidToken")
      yield* agent.approve(requested.value.token, Approval.approved)
      const result = yield* agent.run({ runId: "a1", input: "Remove /tmp/x" })
      expect(result._tag === "Stopped" && result.output).toBe("removed")
      expect(ran.remove - before).toBe(1)
      const events = yield* Stream.runCollect(agent.events("a1", { fromStep: 1 }))
      const tool = events.find((event) => event._tag === "ToolResult")
      expect(tool?._tag === "ToolResult" && tool.outcome).toBe("success")
    }).pipe(
      Effect.provide(agent.layer.pipe(Layer.provideMerge(embedded(Path.join(temp.dir, "runs.db"), [call("remove", { path: "/tmp/x" }), answer("removed")])))),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})
