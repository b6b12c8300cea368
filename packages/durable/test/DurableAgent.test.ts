import { MockLanguageModel } from "@agentloop/core/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
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
