import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Step from "../src/step/Step.ts"
import * as StepEvent from "../src/step/StepEvent.ts"
import * as Until from "../src/Until.ts"
import { addCall, answer, model, pricing, toolkit } from "./agentFixtures.ts"

class Down extends Schema.TaggedError<Down>()("Down", { at: Schema.Finite }) {}

const now = Effect.clockWith((clock) => Effect.succeed(clock.currentTimeMillisUnsafe()))

describe("Step.stream", () => {
  const environment = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
    Layer.mergeAll(MockLanguageModel.layer(script), pricing)

  it.effect("every event is a Schema that survives a JSON round trip, and the stream ends with the output", () =>
    Effect.gen(function*() {
      const agent = Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model })], until: Until.noToolCalls() })
      const events = yield* Stream.runCollect(Step.stream(agent, "Add 2 and 3", { toolkit, id: "run-1" })).pipe(
        Effect.provide(environment([addCall(2, 3), answer("5")]))
      )
      expect(events.at(-1)).toStrictEqual({ _tag: "Output", value: "5" })
      const kinds = new Set(events.map((event) => event._tag === "Turn" ? `Turn/${event.event._tag}` : event._tag))
      expect([...kinds]).toStrictEqual([
        "Started",
        "Turn/Delta",
        "Turn/TurnCompleted",
        "Turn/ToolResult",
        "Completed",
        "Verdict",
        "LoopEnded",
        "Output"
      ])
      const schema = StepEvent.schema(Schema.String)
      const json = JSON.parse(JSON.stringify(events.map((event) => Schema.encodeSync(schema)(event))))
      expect(json.map((event: unknown) => Schema.decodeUnknownSync(schema)(event))).toStrictEqual(events)
      const completed = events.find((event) => event._tag === "Completed" && event.kind === "llm")
      expect(completed).toMatchObject({ stepId: "turn", contextId: "run-1", meta: { toolCalls: [{ name: "add" }] } })
    }))

  it.effect("a failing program streams Failed events and fails with the error", () =>
    Effect.gen(function*() {
      const program = Step.branch({
        id: "route",
        route: () => Step.run({ id: "boom", execute: () => Effect.fail(new Down({ at: 1 })) })
      })
      const collected: Array<StepEvent.Event<unknown>> = []
      const error = yield* Effect.flip(
        Stream.runForEach(Step.stream(program, undefined), (event) => Effect.sync(() => collected.push(event)))
      )
      expect(error).toStrictEqual(new Down({ at: 1 }))
      expect(collected.map((event) => event._tag === "Output" ? "Output" : `${event._tag} ${event.stepId}`))
        .toStrictEqual([
          "Started route",
          "Started boom",
          "Failed boom",
          "Failed route"
        ])
    }))

  it.effect("a consumer that stops pulling interrupts every step; the program does not run ahead of it", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const times: Array<number> = []
      const program = Step.every({
        id: "tick",
        ms: 10,
        step: Step.run({
          id: "work",
          execute: () =>
            Effect.flatMap(now, (at) => Effect.sync(() => times.push(at))).pipe(
              Effect.ensuring(Effect.sync(() => log.push("work finalized")))
            )
        })
      })
      const fiber = yield* Effect.forkChild(
        Stream.runCollect(Step.stream(program, undefined).pipe(Stream.take(4))).pipe(
          Effect.ensuring(Effect.sync(() => log.push("consumer done")))
        )
      )
      yield* TestClock.adjust(Duration.millis(100))
      const events = yield* Fiber.join(fiber)
      expect(events.map((event) => event._tag)).toStrictEqual(["Started", "Started", "Completed", "Started"])
      const ran = times.length
      yield* TestClock.adjust(Duration.seconds(10))
      // Interrupted: no more runs once the consumer had its events.
      expect(times.length).toBe(ran)
      expect(log.at(-1)).toBe("consumer done")
    }))

  it.effect("the program waits for its consumer: it runs at most an event ahead", () =>
    Effect.gen(function*() {
      let runs = 0
      const program = Step.loop({
        id: "count",
        steps: [Step.run({ id: "one", execute: (n: number) => (runs++, n + 1) })],
        until: Until.maxSteps(1000)
      })
      const pulled = yield* Stream.runCollect(Step.stream(program, 0).pipe(Stream.take(1)))
      expect(pulled).toHaveLength(1)
      // The loop's Started was taken; at most one more event was sent (the first step's Started), so the
      // first step ran at most once, and its Completed never left: not a thousand iterations.
      expect(Step.streamBuffer).toBe(1)
      expect(runs).toBeLessThanOrEqual(1)
    }))
})
