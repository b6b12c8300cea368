import { MockLanguageModel, SpanRecorder } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Ref, Stream } from "effect"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as Item from "../src/Item.ts"
import * as LanguageModel from "../src/LanguageModel.ts"
import * as Pricing from "../src/Pricing.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import * as Toolkit from "../src/Toolkit.ts"
import type * as Turn from "../src/Turn.ts"
import type * as TurnDelta from "../src/TurnDelta.ts"
import { add } from "./fixtures.ts"

/** A scripted model under a provider name of its own, and the requests it saw. */
const scripted = (provider: string, script: ReadonlyArray<MockLanguageModel.Reply>) =>
  Effect.map(MockLanguageModel.make(script), ({ model, recorder }) => ({
    layer: Layer.succeed(LanguageModel.LanguageModel, { ...model, provider }),
    requests: recorder.requests
  }))

const hello = [Item.userMessage("Hello")]

const turnOf = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): Turn.Turn => {
  const last = deltas.at(-1)
  if (last?.type !== "turn_complete") throw new Error("no turn_complete")
  return last.turn
}

const ask = <E>(layer: Layer.Layer<LanguageModel.LanguageModel, E>, options: LanguageModel.TurnOptions = {}) =>
  Effect.flatMap(LanguageModel.LanguageModel, (model) => Stream.runCollect(model.streamTurn(hello, options)))
    .pipe(Effect.provide(layer))

const unavailable = new AiError.Unavailable({ provider: "primary", status: 529, message: "Overloaded" })

describe("LanguageModel.fallback", () => {
  it.effect("moves on from each provider failure to the next step, which answers with its provider and model named", () =>
    Effect.gen(function*() {
      const failures: ReadonlyArray<AiError.AiError> = [
        unavailable,
        new AiError.RateLimited({ provider: "primary", message: "slow down" }),
        new AiError.QuotaExceeded({ provider: "primary", message: "no credit" }),
        new AiError.Timeout({ provider: "primary", message: "too slow" }),
        new AiError.AuthFailed({ provider: "primary", status: 401, message: "bad key" })
      ]
      for (const failure of failures) {
        const primary = yield* scripted("primary", [failure])
        const backup = yield* scripted("backup", [MockLanguageModel.textTurn("Hi from the backup")])
        const deltas = yield* ask(
          LanguageModel.fallback({ layer: primary.layer }, { layer: backup.layer, model: "backup-large" }),
          { model: "primary-large", instructions: "Be brief." }
        )
        const turn = turnOf(deltas)
        expect(turn.provider).toBe("backup")
        expect(turn.model).toBe("backup-large")
        // Each step is asked for its own model; the rest of the request is the turn's.
        expect((yield* primary.requests).map((r) => r.options)).toStrictEqual([
          { model: "primary-large", instructions: "Be brief." }
        ])
        expect((yield* backup.requests).map((r) => r.options)).toStrictEqual([
          { model: "backup-large", instructions: "Be brief." }
        ])
      }
    }))

  it.effect("keeps the model a provider reports, and names the first step when it answers", () =>
    Effect.gen(function*() {
      const primary = yield* scripted("primary", [MockLanguageModel.textTurn("Hi", { model: "primary-2025-01-01" })])
      const backup = yield* scripted("backup", [])
      const turn = turnOf(
        yield* ask(LanguageModel.fallback({ layer: primary.layer, model: "primary" }, {
          layer: backup.layer
        }))
      )
      expect([turn.provider, turn.model]).toStrictEqual(["primary", "primary-2025-01-01"])
      expect(yield* backup.requests).toHaveLength(0)
    }))

  it.effect("does not move on from an error of the request: another provider would refuse it too", () =>
    Effect.gen(function*() {
      const errors: ReadonlyArray<AiError.AiError> = [
        new AiError.InvalidRequest({ provider: "primary", status: 400, message: "bad image" }),
        new AiError.ContextLengthExceeded({ provider: "primary", message: "too long" }),
        new AiError.MalformedEvent({ provider: "primary", event: "x", message: "garbled" })
      ]
      for (const error of errors) {
        const primary = yield* scripted("primary", [error])
        const backup = yield* scripted("backup", [MockLanguageModel.textTurn("never")])
        const exit = yield* Effect.exit(ask(LanguageModel.fallback({ layer: primary.layer }, { layer: backup.layer })))
        expect(exit).toStrictEqual(Exit.fail(error))
        expect(yield* backup.requests).toHaveLength(0)
      }
    }))

  it.effect("moves on from the errors a step's moveOn names, and only those", () =>
    Effect.gen(function*() {
      const invalid = new AiError.InvalidRequest({ provider: "primary", status: 404, message: "no such model" })
      const primary = yield* scripted("primary", [invalid, unavailable])
      const backup = yield* scripted("backup", [MockLanguageModel.textTurn("Hi")])
      const layer = LanguageModel.fallback(
        { layer: primary.layer, moveOn: (error) => error._tag === "InvalidRequest" },
        { layer: backup.layer }
      )
      // The layer is built once: both turns go to the same scripted primary.
      const program = Effect.gen(function*() {
        const model = yield* LanguageModel.LanguageModel
        const first = yield* Stream.runCollect(model.streamTurn(hello, {}))
        const second = yield* Effect.exit(Stream.runCollect(model.streamTurn(hello, {})))
        return { first, second }
      }).pipe(Effect.provide(layer))
      const { first, second } = yield* program
      expect(turnOf(first).provider).toBe("backup")
      expect(second).toStrictEqual(Exit.fail(unavailable))
      expect(yield* primary.requests).toHaveLength(2)
      expect(yield* backup.requests).toHaveLength(1)
    }))

  it.effect("tries a step as often as its attempts say before the next, and fails with the last error when all fail", () =>
    Effect.gen(function*() {
      const timeout = new AiError.Timeout({ provider: "backup", message: "too slow" })
      const primary = yield* scripted("primary", [unavailable, unavailable, MockLanguageModel.textTurn("third time")])
      const backup = yield* scripted("backup", [timeout])
      const exit = yield* Effect.exit(
        ask(LanguageModel.fallback({ layer: primary.layer, attempts: 2 }, { layer: backup.layer }))
      )
      expect(exit).toStrictEqual(Exit.fail(timeout))
      expect(yield* primary.requests).toHaveLength(2)
      expect(yield* backup.requests).toHaveLength(1)
      const again = yield* scripted("primary", [unavailable, MockLanguageModel.textTurn("second time")])
      const turn = turnOf(
        yield* ask(LanguageModel.fallback({ layer: again.layer, attempts: 3 }, {
          layer: backup.layer
        }))
      )
      expect(turn.provider).toBe("primary")
      expect(yield* again.requests).toHaveLength(2)
    }))

  it.effect("never falls back after a delta: the deltas are not replayed, and the failure surfaces as it came", () =>
    Effect.gen(function*() {
      const long = MockLanguageModel.textTurn("A long answer that breaks off")
      const primary = yield* scripted("primary", [MockLanguageModel.partial(long, 2, unavailable)])
      const backup = yield* scripted("backup", [MockLanguageModel.textTurn("never")])
      const seen = yield* Ref.make<ReadonlyArray<TurnDelta.TurnDelta>>([])
      const exit = yield* Effect.exit(
        Effect.flatMap(LanguageModel.LanguageModel, (model) =>
          model.streamTurn(hello, {}).pipe(
            Stream.runForEach((delta) => Ref.update(seen, (all) => [...all, delta]))
          )).pipe(
            Effect.provide(LanguageModel.fallback({ layer: primary.layer, attempts: 2 }, { layer: backup.layer }))
          )
      )
      expect(exit).toStrictEqual(Exit.fail(unavailable))
      expect((yield* Ref.get(seen)).map((d) => d.type)).toStrictEqual(["text_delta", "text_delta"])
      // Neither another attempt of the same step nor the next step.
      expect(yield* primary.requests).toHaveLength(1)
      expect(yield* backup.requests).toHaveLength(0)
    }))

  it.effect("fails to build when a step's layer does", () =>
    Effect.gen(function*() {
      const broken = Layer.effect(LanguageModel.LanguageModel, Effect.fail("no key" as const))
      const backup = yield* scripted("backup", [])
      const exit = yield* Effect.exit(ask(LanguageModel.fallback({ layer: backup.layer }, { layer: broken })))
      expect(exit).toStrictEqual(Exit.fail("no key"))
    }))
})

describe("LanguageModel.fallback in an agent run", () => {
  // primary-model: $10 per million input tokens; backup-model: $1. A turn of a million input tokens costs either.
  const pricing = Pricing.layer({
    "primary-model": { input: 10, cachedInput: 10, output: 0 },
    "backup-model": { input: 1, cachedInput: 1, output: 0 }
  })
  const millionTurn = (a: number) =>
    MockLanguageModel.callsTurn([{ name: "add", arguments: { a, b: 1 } }], { usage: TokenUsage.make(1_000_000, 0) })

  it.effect("prices each turn for the model that answered, and keeps the run's budget across the switch", () =>
    Effect.gen(function*() {
      // Turn 1 by the primary ($10); turns 2 to 4 by the backup ($1 each) while the primary is overloaded.
      const primary = yield* scripted("primary", [millionTurn(1), unavailable, unavailable, unavailable])
      const backup = yield* scripted("backup", [millionTurn(2), millionTurn(3), millionTurn(4), millionTurn(5)])
      const recorder = SpanRecorder.make()
      const events = yield* Effect.gen(function*() {
        const agent = yield* AgentLoop.AgentLoop
        return yield* agent.stream({
          input: "Add",
          toolkit: Toolkit.make(add),
          model: "primary-model",
          limits: { maxBudgetUsd: 12 }
        }).pipe(Stream.runCollect, Effect.exit)
      }).pipe(
        Effect.provide(AgentLoop.layer.pipe(
          Layer.provideMerge(LanguageModel.fallback(
            { layer: primary.layer, model: "primary-model" },
            { layer: backup.layer, model: "backup-model" }
          )),
          Layer.provideMerge(pricing)
        )),
        Effect.withTracer(recorder.tracer)
      )
      expect(events._tag).toBe("Failure")
      const error = events._tag === "Failure" ? events.cause.reasons[0] : undefined
      // $10 + $1 + $1 reaches the $12 budget at the third turn: the fourth is never asked.
      expect(error).toMatchObject({
        _tag: "Fail",
        error: { _tag: "MaxBudgetUsd", accounting: { steps: 3, cost: 12 } }
      })
      expect(yield* primary.requests).toHaveLength(3)
      expect(yield* backup.requests).toHaveLength(2)
      // Each turn's span says who answered, and records the attempt that failed before.
      const chats = recorder.spans.filter((span) => span.name === "chat primary-model")
      expect(
        chats.map((span) => [span.attributes.get("gen_ai.provider.name"), span.attributes.get("gen_ai.response.model")])
      )
        .toStrictEqual([["primary", "primary-model"], ["backup", "backup-model"], ["backup", "backup-model"]])
      expect(chats.map((span) => span.events.map(([name, , attributes]) => [name, attributes["error.type"]])))
        .toStrictEqual([[], [["gen_ai.fallback", "Unavailable"]], [["gen_ai.fallback", "Unavailable"]]])
    }))
})
