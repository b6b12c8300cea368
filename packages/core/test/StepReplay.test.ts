/**
 * `Step.stream` of a recorded program replays what its ledger recorded, as
 * the live execution streamed it, then goes on: a finished program replays to
 * its end running nothing, one cut off replays its recorded prefix and streams
 * the rest once, a fork replays its source's events up to its checkpoint. On
 * every store.
 */
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schema, Stream } from "effect"
import * as Checkpointer from "../src/Checkpointer.ts"
import type * as ExecutionContext from "../src/step/ExecutionContext.ts"
import * as Step from "../src/step/Step.ts"
import type * as StepEvent from "../src/step/StepEvent.ts"
import * as StepHistory from "../src/step/StepHistory.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Until from "../src/Until.ts"
import * as Verdict from "../src/Verdict.ts"
import { addCall, answer, model, pricing } from "./agentFixtures.ts"
import { eachStore, fresh, read } from "./checkpointFixtures.ts"
import { add } from "./fixtures.ts"

type Event = StepEvent.Event<unknown>

/** What a replay leaves out: the model's deltas and the tools' progress, which are not recorded. */
const recordedOnly = (events: ReadonlyArray<Event>) =>
  events.filter((event) =>
    event._tag !== "Turn" || (event.event._tag !== "Delta" && event.event._tag !== "ToolProgress")
  )

/** Streams `program` with `id` on a mock answering `script`: its events and how many requests the mock saw. */
const streamed = <O, E, R>(
  program: Step.Step<string, O, E, R, unknown>,
  id: string,
  script: ReadonlyArray<MockLanguageModel.Reply>,
  toolkit: Toolkit.Toolkit<never> = Toolkit.make(add)
) =>
  Effect.gen(function*() {
    const events: ReadonlyArray<Event> = yield* Stream.runCollect(
      Step.stream(program as Step.Step<string, O, E, R, unknown>, "Add 2 and 3, then 5 and 5", { id, toolkit })
    )
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { events, asked: requests.length }
  }).pipe(Effect.provide(Layer.mergeAll(MockLanguageModel.layer(script), pricing)))

/**
 * A program with every kind of event a ledger records: an agent loop (turns, tool calls, a verdict per turn), a
 * branch, a fork whose paths run at once, a sub-agent, a settle fork with a path that fails, and a loop whose
 * predicate gives feedback.
 */
const everything = () => {
  const agent = Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model })], until: Until.noToolCalls() })
  const double = Step.run({ id: "double", execute: (text: string) => `${text} ${text}` })
  const paths = Step.fork({
    id: "paths",
    mode: "all",
    paths: (_: string) => [
      Step.run({ id: "left", execute: (text: string) => text.length }),
      Step.spawn({ id: "helper", child: Step.run({ id: "inner", execute: (text: string) => text.split(" ").length }) })
    ],
    merge: (counts) => counts.join("/")
  })
  const settled = Step.fork({
    id: "settled",
    mode: "settle",
    paths: (_: string) => [
      Step.run({ id: "fine", execute: () => "fine" }),
      Step.run({ id: "broken", execute: () => Promise.reject(new Error("broken")) })
    ],
    merge: (results) => results.map((result) => result.status).join(",")
  })
  let drafts = 0
  const polish = Step.loop({
    id: "polish",
    steps: [Step.run({ id: "draft", execute: (text: string) => `${text}+${++drafts}` })],
    until: (snapshot) => snapshot.stepCount < 2 ? Verdict.continue("once more") : Verdict.stop("polished")
  })
  return Step.loop({
    id: "program",
    steps: [
      agent,
      Step.branch({ id: "route", route: (text: string) => text === "" ? null : double }),
      paths,
      settled,
      polish
    ],
    until: Until.maxSteps(1)
  })
}

const script = [addCall(2, 3), addCall(5, 5), answer("5 and 10")]

const suite = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.effect("a finished program streamed again replays the events it streamed, less deltas, asking nothing", () =>
      Effect.gen(function*() {
        const id = fresh("replayed")
        const live = yield* streamed(everything(), id, script)
        const tags = new Set(
          recordedOnly(live.events).map((event) => event._tag === "Turn" ? event.event._tag : event._tag)
        )
        expect([...tags].sort()).toStrictEqual([
          "Completed",
          "Failed",
          "LoopEnded",
          "Output",
          "Started",
          "ToolResult",
          "TurnCompleted",
          "Verdict"
        ])
        const again = yield* streamed(everything(), id, [])
        expect(again.asked).toBe(0)
        expect(again.events).toStrictEqual(recordedOnly(live.events))
      }).pipe(Effect.provide(layer())))
  })

describe("Step.stream of a recorded program", () => {
  eachStore("step-replay", suite)
})
