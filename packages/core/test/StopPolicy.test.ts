import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Schema } from "effect"
import * as Snapshot from "../src/Snapshot.ts"
import * as StopPolicy from "../src/StopPolicy.ts"
import * as Until from "../src/Until.ts"

class Judge extends Context.Service<Judge, { readonly verdict: (text: string) => Effect.Effect<boolean> }>()(
  "test/Judge"
) {}

class JudgeDown extends Schema.TaggedError<JudgeDown>()("JudgeDown", { message: Schema.String }) {}

describe("StopPolicy", () => {
  it.effect("defaults to noToolCalls", () =>
    Effect.gen(function*() {
      const policy = yield* StopPolicy.StopPolicy
      const answered = Snapshot.make({ runId: "r", stepCount: 1, lastStepMeta: { toolCalls: [] } })
      expect((yield* Until.evaluate(policy, answered)).reason).toBe("the model answered without calling a tool")
      expect((yield* Until.evaluate(policy, { ...answered, stepCount: 0 })).stop).toBe(false)
    }))

  it.effect("a layer sets the policy, with the services its predicate needs taken when it is built", () =>
    Effect.gen(function*() {
      const policy = yield* StopPolicy.StopPolicy
      // The evaluation below runs without Judge in its context.
      const verdict = yield* Until.evaluate(policy, Snapshot.make({ runId: "r", lastText: "FINAL: 42" }))
      expect(verdict).toStrictEqual({ stop: true, reason: "verification passed" })
      expect((yield* Until.evaluate(policy, Snapshot.make({ runId: "r", lastText: "thinking" }))).stop).toBe(false)
    }).pipe(
      Effect.provide(
        StopPolicy.layer(
          Until.verified((_, snapshot) =>
            Judge.use((judge) => Effect.map(judge.verdict(snapshot.lastText), (pass) => ({ pass })))
          )
        ).pipe(Layer.provide(Layer.succeed(Judge, { verdict: (text) => Effect.succeed(text.startsWith("FINAL:")) })))
      )
    ))

  it.effect("a policy's own failure reaches the run as PredicateFailed", () =>
    Effect.gen(function*() {
      const policy = yield* StopPolicy.StopPolicy
      const error = yield* Effect.flip(Until.evaluate(policy, Snapshot.make({ runId: "r" })))
      expect(error.message).toBe("until predicate failed: judge offline")
      expect(error.cause).toBeInstanceOf(JudgeDown)
    }).pipe(Effect.provide(StopPolicy.layer(() => Effect.fail(new JudgeDown({ message: "judge offline" }))))))
})
