/**
 * A durable run's history, on SQLite and PostgreSQL: its checkpoints (the
 * same as an `AgentLoop` run's on a `Checkpointer`), the run at any of them,
 * and forks from any of them, with and without an edit, while the source
 * runs, around approvals; bad input refused with typed errors.
 */
import { AgentHistory, AgentLoop, Checkpointer } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { DurableAgent } from "../src/index.ts"
import { answer, call, model, pricing, toolkit } from "./fixtures.ts"
import { eachStore } from "./historyStores.ts"

/** The text of the last user message or tool output a request ends with. */
const lastWords = (request: MockLanguageModel.Request): string => {
  const last = request.history.at(-1)
  if (last?.type === "function_call_output") return last.output
  if (last?.type === "message") return last.content.map((part) => "text" in part ? part.text : "").join("")
  return ""
}

const historian = DurableAgent.make("historian", { model, toolkit })

/** Notes, then adds, then answers. */
const noteAndAdd: MockLanguageModel.Respond = (request) => {
  const last = lastWords(request)
  if (last === "Note and add") return call("note", { text: "a" })
  if (last.includes("noted a")) return call("add", { a: 2, b: 3 })
  return answer(`${last} it is`)
}

/** The checkpoints without what differs between two stores: when they were written. */
const timeless = (checkpoints: ReadonlyArray<AgentHistory.Checkpoint>) =>
  checkpoints.map(({ time: _, ...checkpoint }) => checkpoint)

describe("a durable run's checkpoints", () => {
  eachStore(
    "are the Checkpointer's, in the order written, and the run is read at any of them",
    { agents: historian.layer, respond: noteAndAdd },
    Effect.gen(function*() {
      const result = yield* historian.run({ runId: "h1", input: "Note and add" })
      expect(result._tag === "Stopped" && result.output).toBe("5 it is")
      const checkpoints = yield* historian.checkpoints("h1")
      expect(checkpoints.map((c) => `${c.kind} ${c.step}`)).toStrictEqual([
        "turn 1",
        "started 1",
        "tool 1",
        "decision 1",
        "turn 2",
        "tool 2",
        "decision 2",
        "turn 3",
        "finished 3"
      ])
      expect(checkpoints.map((c) => c.index)).toStrictEqual([0, 1, 2, 3, 4, 5, 6, 7, 8])
      const times = checkpoints.map((c) => c.time ?? -1)
      expect(times.every((time, i) => time > 0 && time >= (times[i - 1] ?? 0))).toBe(true)
      expect(checkpoints.map((c) => c.usage.total)).toStrictEqual([30, 30, 30, 30, 60, 60, 60, 90, 90])
      expect(checkpoints[8]?.cost).toBeCloseTo(3 * (checkpoints[0]?.cost ?? 0))

      // The same run recorded by AgentLoop on a Checkpointer has the same checkpoints.
      const options = { input: "Note and add", model, toolkit, runId: "h1" }
      const recorded = yield* Effect.gen(function*() {
        yield* Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run(options)).pipe(
          Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(noteAndAdd))))
        )
        const listed = yield* AgentHistory.checkpoints(options)
        const states = yield* Effect.forEach(listed, (_, index) => AgentHistory.stateAt(options, index))
        return { listed, states }
      }).pipe(Effect.provide(Layer.merge(Checkpointer.layerMemory, pricing)))
      expect(timeless(checkpoints)).toStrictEqual(timeless(recorded.listed))
      for (const [index, expected] of recorded.states.entries()) {
        const state = yield* historian.stateAt("h1", index)
        expect({ ...state, checkpoint: undefined, result: state.result?.history }).toStrictEqual({
          ...expected,
          checkpoint: undefined,
          result: expected.result?.history
        })
      }

      // Between the turn and its call, the call is pending; once it started, it reads as cut off.
      const answered = yield* historian.stateAt("h1", 0)
      expect(answered.pending.map((c) => c.name)).toStrictEqual(["note"])
      const started = yield* historian.stateAt("h1", 1)
      expect(started.pending).toStrictEqual([])
      expect(JSON.stringify(started.history.at(-1))).toContain("cut short")
      const last = yield* historian.stateAt("h1", -1)
      expect(last.result?._tag === "Stopped" && last.result.output).toBe("5 it is")
      expect(last.turns).toBe(3)
    })
  )
})
