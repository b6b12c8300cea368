import { MockLanguageModel, SpanRecorder, StuckTool } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema, Stream } from "effect"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Compactor from "../src/Compactor.ts"
import { Halt } from "../src/Halt.ts"
import * as Item from "../src/Item.ts"
import { LanguageModel } from "../src/LanguageModel.ts"
import * as StopPolicy from "../src/StopPolicy.ts"
import * as Termination from "../src/Termination.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Turn from "../src/Turn.ts"
import * as Until from "../src/Until.ts"
import {
  addCall,
  answer,
  environment,
  expectTermination,
  failureOf,
  model,
  requestsOf,
  runWith,
  toolkit,
  usage
} from "./agentFixtures.ts"

describe("AgentLoop", () => {
  it.effect("runs turns and tools until the model answers, and returns the answer with the accounting", () =>
    Effect.gen(function*() {
      const result = yield* runWith([addCall(2, 3), answer("2 + 3 = 5")], { input: "Add 2 and 3", toolkit, model })
      if (result._tag !== "Stopped") return expect.unreachable()
      expect(result.termination._tag).toBe("Stop")
      expect(result.output).toBe("2 + 3 = 5")
      expect(result.termination.reason).toBe("the model answered without calling a tool")
      expect(Termination.category(result.termination)).toBe("success")
      expect(result.termination.accounting.steps).toBe(2)
      expect(result.termination.accounting.cost).toBeCloseTo(0.00008, 12)
      expect(result.history.map((item) => item.type)).toStrictEqual([
        "message",
        "function_call",
        "function_call_output",
        "message"
      ])
    }))

  it.effect("streams deltas, tool results, turn boundaries with usage and cost, the verdict and the result", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const events = yield* Stream.runCollect(agent.stream({ input: "Add", toolkit, model }))
      const tags = events.map((event) => event._tag).filter((tag, i, all) => tag !== "Delta" || all[i - 1] !== "Delta")
      expect(tags).toStrictEqual([
        "TurnStarted",
        "Delta",
        "TurnCompleted",
        "ToolResult",
        "Verdict",
        "TurnStarted",
        "Delta",
        "TurnCompleted",
        "Verdict",
        "Finished"
      ])
      const completed = events.filter((event) => event._tag === "TurnCompleted")
      expect(completed.map((event) => event.accounting.steps)).toStrictEqual([1, 2])
      expect(completed[1]!.accounting.usage.total).toBe(60)
      expect(completed[0]!.cost).toBeCloseTo(0.00004, 12)
      const deltas = events.flatMap((event) => event._tag === "Delta" ? [event.delta.type] : [])
      expect(deltas).toContain("function_call_arguments_delta")
      expect(deltas).toContain("usage")
      // The assembled turn arrives once, in TurnCompleted, not also as a turn_complete delta.
      expect(deltas).not.toContain("turn_complete")
      expect(completed[1]!.turn).toStrictEqual(answer("two"))
    }).pipe(Effect.provide(environment([addCall(1, 1), answer("two")]))))

  it.effect("uses the StopPolicy in context when no predicate is given", () =>
    Effect.gen(function*() {
      const result = yield* runWith([answer("thinking"), answer("DONE")], { input: "Go", model }).pipe(
        Effect.provide(StopPolicy.layer(Until.outputContains("DONE")))
      )
      expect(result.termination._tag === "Stop" && result.termination.reason).toBe("output contains \"DONE\"")
      expect(result.termination.accounting.steps).toBe(2)
    }))

  it.effect("feeds a non-stopping verdict's feedback to the next turn", () =>
    Effect.gen(function*() {
      const seen: Array<unknown> = []
      const until = Until.verified((output) => {
        seen.push(output)
        return output === "42" ? { pass: true } : { pass: false, feedback: "The answer must be a number." }
      })
      const { exit, requests } = yield* requestsOf([answer("many"), answer("42")], { input: "How many?", until, model })
      expect(Exit.isSuccess(exit)).toBe(true)
      // The verify function receives the turn's text, as the docs say.
      expect(seen).toStrictEqual(["many", "42"])
      expect(requests[1]!.history.at(-1)).toStrictEqual(Item.userMessage("The answer must be a number.", "feedback_1"))
    }))

  it.effect("ends with Submitted when the finish tool succeeds", () =>
    Effect.gen(function*() {
      const result = yield* runWith([
        MockLanguageModel.callsTurn([{ name: "submit", arguments: { answer: 5 } }], { model, usage })
      ], { input: "Submit 5", toolkit, finish: "submit", model })
      expect(result.termination._tag).toBe("Submitted")
      expect(result.termination._tag === "Submitted" && result.termination.value).toStrictEqual({ answer: 5 })
      expect(Termination.category(result.termination)).toBe("success")
    }))

  it.effect("decodes a structured output, repairing it with the decode error as feedback", () =>
    Effect.gen(function*() {
      const Answer = Schema.Struct({ total: Schema.Finite })
      const { exit, requests } = yield* Effect.gen(function*() {
        const agent = yield* AgentLoop.AgentLoop
        const exit = yield* Effect.exit(agent.run({ input: "Total?", output: Answer, model }))
        return { exit, requests: yield* (yield* MockLanguageModel.MockLanguageModel).requests }
      }).pipe(Effect.provide(environment([answer("{\"total\": \"five\"}"), answer("{\"total\": 5}")])))
      expect(exit).toMatchObject({ _tag: "Success", value: { output: { total: 5 } } })
      expect(requests[0]!.options.output?.schema).toMatchObject({ type: "object", required: ["total"] })
      const repair = requests[1]!.history.at(-1)
      expect(repair).toMatchObject({ type: "message", role: "user" })
      expect(JSON.stringify(repair)).toContain("total")
    }))

  it.effect("MaxTurns: the turn limit", () =>
    Effect.gen(function*() {
      const error = yield* failureOf([addCall(1, 1), addCall(1, 2), addCall(1, 3)], {
        input: "Add forever",
        toolkit,
        model,
        limits: { maxTurns: 2 }
      })
      expectTermination(error, "MaxTurns", 2)
      expect(Termination.category(error)).toBe("capacity")
    }))

  it.effect("MaxBudgetUsd: checked after each turn, with the cost that tripped it", () =>
    Effect.gen(function*() {
      const error = yield* failureOf([addCall(1, 1), addCall(1, 2), addCall(1, 3), answer("done")], {
        input: "Add",
        toolkit,
        model,
        limits: { maxBudgetUsd: 0.0001 }
      })
      expectTermination(error, "MaxBudgetUsd", 3)
      expect(error.accounting.cost).toBeGreaterThanOrEqual(0.0001)
      expect(Termination.category(error)).toBe("capacity")
    }))

  it.effect("ConsecutiveMistakes: turns whose calls all fail, reset by a success", () =>
    Effect.gen(function*() {
      const unknown = (n: number) =>
        MockLanguageModel.callsTurn([{ name: "multiply", arguments: { n } }], { model, usage })
      const error = yield* failureOf(
        [unknown(1), addCall(1, 1), unknown(2), unknown(3), unknown(4), answer("never")],
        { input: "Multiply", toolkit, model }
      )
      expectTermination(error, "ConsecutiveMistakes", 5)
      if (error._tag !== "ConsecutiveMistakes") return
      expect(error.mistakes).toHaveLength(3)
      expect(error.mistakes[0]).toContain("Unknown tool \"multiply\"")
    }))

  it.effect("NoProgress: turns that repeat the same calls and results with no new text", () =>
    Effect.gen(function*() {
      const same = addCall(2, 2, "call_same")
      const error = yield* failureOf([same, same, same, same, answer("never")], { input: "Add", toolkit, model })
      expectTermination(error, "NoProgress", 4)
      if (error._tag !== "NoProgress") return
      expect(error.iterations).toBe(3)
      // The calls and outputs of each of the three turns that repeated their predecessor.
      expect(error.stuck.map((item) => `${item.type}:${"call_id" in item ? item.call_id : ""}`)).toStrictEqual(
        Array.from({ length: 3 }, () => ["function_call:call_same", "function_call_output:call_same"]).flat()
      )
      expect(error.stuck.filter((item) => item.type === "function_call_output").map((item) => item.output))
        .toStrictEqual(["4", "4", "4"])
    }))

  it.effect("Halted: a tool that halts ends the run", () =>
    Effect.gen(function*() {
      const error = yield* failureOf([
        MockLanguageModel.callsTurn([{ name: "halt", arguments: { why: "the user left" } }], { model, usage }),
        answer("never")
      ], { input: "Stop", toolkit, model })
      expectTermination(error, "Halted", 1)
      expect(error.message).toContain("the user left")
      expect(Termination.category(error)).toBe("fatal")
    }))

  it.effect("Halted: the afterTurn hook halts the run, after seeing the turn and the snapshot", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const error = yield* failureOf([addCall(1, 1), addCall(1, 2), answer("never")], {
        input: "Add",
        toolkit,
        model,
        afterTurn: (turn, snapshot) => {
          seen.push(snapshot.stepCount)
          return snapshot.stepCount < 2 || Turn.functionCalls(turn).length === 0
            ? Effect.void
            : Effect.fail(new Halt({ reason: "two turns of adding is enough" }))
        }
      })
      expectTermination(error, "Halted", 2)
      expect(error.message).toBe("halted by the afterTurn hook: two turns of adding is enough")
      expect(seen).toStrictEqual([1, 2])
    }))

  it.effect("ProviderAuth: the provider rejected the credentials", () =>
    Effect.gen(function*() {
      const error = yield* failureOf([
        addCall(1, 1),
        new AiError.AuthFailed({ provider: "mock", status: 401, message: "bad key" })
      ], { input: "Add", toolkit, model })
      expectTermination(error, "ProviderAuth", 1)
      expect(Termination.category(error)).toBe("fatal")
    }))

  it.effect("ProviderQuota: the provider has no quota left, which no retry cures", () =>
    Effect.gen(function*() {
      const error = yield* failureOf([
        new AiError.QuotaExceeded({ provider: "openai", status: 429, message: "You exceeded your current quota" })
      ], { input: "Hi", model })
      expectTermination(error, "ProviderQuota", 0)
      expect(Termination.category(error)).toBe("fatal")
    }))

  it.effect("DuringExecution: a provider error the retries did not cure, and a failing predicate", () =>
    Effect.gen(function*() {
      const unavailable = yield* failureOf([new AiError.Unavailable({ provider: "mock", message: "down" })], {
        input: "Hi",
        model
      })
      expectTermination(unavailable, "DuringExecution", 0)
      expect(unavailable.message).toContain("down")
      expect(Termination.category(unavailable)).toBe("retryable")

      const throwing = yield* failureOf([answer("hi")], {
        input: "Hi",
        model,
        until: () => {
          throw new Error("predicate bug")
        }
      })
      expectTermination(throwing, "DuringExecution", 1)
      expect(throwing.message).toContain("predicate bug")
    }))

  it.effect("MaxStructuredOutputRetries and SchemaValidation: an output that never decodes", () =>
    Effect.gen(function*() {
      const Answer = Schema.Struct({ total: Schema.Finite })
      const exhausted = yield* failureOf([answer("nope"), answer("still"), answer("no")], {
        input: "Total?",
        output: Answer,
        model
      })
      expectTermination(exhausted, "MaxStructuredOutputRetries", 3)
      if (exhausted._tag !== "MaxStructuredOutputRetries") return
      expect(exhausted.diagnostic).toMatchObject({ target: "structured_output", raw: "no" })

      const strict = yield* failureOf([answer("{\"total\": null}")], {
        input: "Total?",
        output: Answer,
        model,
        limits: { maxStructuredOutputRetries: 0 }
      })
      expectTermination(strict, "SchemaValidation", 1)
      if (strict._tag !== "SchemaValidation") return
      expect(strict.diagnostic.issues[0]?.path).toStrictEqual(["total"])
      expect(Termination.category(strict)).toBe("retryable")
    }))

  it.effect("passes the model's deltas on in the chunks they came in, on a thread too (one chunk per delta would make a write per delta downstream)", () =>
    Effect.gen(function*() {
      const turn = MockLanguageModel.textTurn("x".repeat(400), { model, usage })
      const deltas = MockLanguageModel.deltas(turn, 1)
      const oneChunk = Layer.succeed(LanguageModel, { provider: "mock", streamTurn: () => Stream.fromIterable(deltas) })
      const chunksOf = (options: AgentLoop.Options) =>
        Effect.gen(function*() {
          const agent = yield* AgentLoop.AgentLoop
          const sizes: Array<number> = []
          yield* Stream.runForEachArray(agent.stream(options), (chunk) => Effect.sync(() => sizes.push(chunk.length)))
          return sizes
        }).pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(oneChunk))))
      for (const options of [{ input: "Say x" }, { input: "Say x", thread: "chunks" }]) {
        const sizes = yield* chunksOf(options)
        expect(sizes.reduce((a, b) => a + b, 0)).toBeGreaterThan(400)
        expect(sizes.length).toBeLessThan(10)
      }
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  describe("context overflow", () => {
    const overflow = new AiError.ContextLengthExceeded({ provider: "mock", message: "too long" })

    it.effect("compacts once and retries the request with the shorter history", () =>
      Effect.gen(function*() {
        const { exit, requests } = yield* requestsOf([addCall(1, 1), addCall(2, 2), overflow, answer("done")], {
          input: "Add",
          toolkit,
          model
        })
        expect(exit).toMatchObject({ _tag: "Success" })
        expect(requests[2]!.history.filter((item) => item.type === "function_call")).toHaveLength(2)
        expect(requests[3]!.history.filter((item) => item.type === "function_call")).toStrictEqual([
          expect.objectContaining({ call_id: "call_2_2" })
        ])
        expect(requests[3]!.history.filter((item) => item.type === "function_call_output")).toStrictEqual([
          expect.objectContaining({ call_id: "call_2_2" })
        ])
      }))

    it.effect("PromptTooLong: the compacted request still does not fit", () =>
      Effect.gen(function*() {
        const error = yield* failureOf([addCall(1, 1), overflow, overflow], { input: "Add", toolkit, model })
        expectTermination(error, "PromptTooLong", 1)
        expect(Termination.category(error)).toBe("capacity")
      }))

    it.effect("CompactionFailed: the compactor cannot shorten the history", () =>
      Effect.gen(function*() {
        const error = yield* failureOf([overflow], { input: "A very long question", model })
        expectTermination(error, "CompactionFailed", 0)
        expect(error.message).toContain("no tool call with an output is left to drop")
        expect(error).toMatchObject({ cause: { _tag: "ContextLengthExceeded" } })
        expect(Termination.category(error)).toBe("fatal")
      }))

    it.effect("uses the Compactor in context", () =>
      Effect.gen(function*() {
        const { requests } = yield* requestsOf([overflow, answer("done")], { input: "Long", model }).pipe(
          Effect.provide(Compactor.layer(() => Effect.succeed([Item.userMessage("summary")])))
        )
        expect(requests[1]!.history).toStrictEqual([Item.userMessage("summary")])
      }))
  })

  it.effect("interrupting the consumer mid-tool interrupts the tool and asks the model nothing more", () =>
    Effect.gen(function*() {
      const { started, stopped: interrupted, tool: slow } = StuckTool.make("slow")
      const agent = yield* AgentLoop.AgentLoop
      const fiber = yield* agent.run({ input: "Wait", toolkit: Toolkit.make(slow), model }).pipe(Effect.forkChild)
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(interrupted)
      const recorder = yield* MockLanguageModel.MockLanguageModel
      expect(yield* recorder.requests).toHaveLength(1)
      expect(yield* recorder.remaining).toBe(1)
    }).pipe(Effect.provide(environment([
      MockLanguageModel.callsTurn([{ name: "slow", arguments: {} }], { model, usage }),
      answer("never")
    ]))))

  it.effect("a consumer that stops pulling stops the run", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const events = yield* agent.stream({ input: "Add", toolkit, model }).pipe(
        Stream.takeUntil((event) => event._tag === "TurnCompleted"),
        Stream.runCollect
      )
      expect(events.at(-1)?._tag).toBe("TurnCompleted")
      const recorder = yield* MockLanguageModel.MockLanguageModel
      expect(yield* recorder.requests).toHaveLength(1)
      expect(yield* recorder.remaining).toBe(2)
    }).pipe(Effect.provide(environment([addCall(1, 1), addCall(2, 2), answer("done")]))))
})

describe("AgentLoop spans", () => {
  it.effect("records each verdict and the termination on the run's span", () =>
    Effect.gen(function*() {
      const { spans, tracer } = SpanRecorder.make()
      yield* Effect.exit(
        runWith([addCall(1, 1), addCall(1, 2)], {
          input: "Add",
          toolkit,
          model,
          limits: { maxTurns: 1 }
        }).pipe(Effect.withTracer(tracer))
      )
      const run = spans.find((span) => span.name === "invoke_agent")
      expect(run?.attributes.get("agentloop.termination")).toBe("MaxTurns")
      expect(run?.attributes.get("agentloop.termination.category")).toBe("capacity")
      expect(run?.attributes.get("error.type")).toBe("MaxTurns")
      const verdicts = spans.filter((span) => span.name === "Until.evaluate")
      expect(verdicts.map((span) => span.attributes.get("until.stop"))).toStrictEqual([false])
      expect(verdicts[0]?.parent).toMatchObject({ _tag: "Some", value: { spanId: run?.spanId } })
    }))

  it.effect("records the termination of a run that fails before its first turn, or on a failed turn", () =>
    Effect.gen(function*() {
      const terminationOf = (script: ReadonlyArray<MockLanguageModel.Reply>, options: AgentLoop.Options) =>
        Effect.gen(function*() {
          const { spans, tracer } = SpanRecorder.make()
          yield* Effect.exit(runWith(script, options).pipe(Effect.withTracer(tracer)))
          const run = spans.find((span) => span.name === "invoke_agent")
          return [run?.attributes.get("agentloop.termination"), run?.attributes.get("error.type")]
        })
      expect(
        yield* terminationOf([answer("never")], { input: "Hi", model: "my-local-model", limits: { maxBudgetUsd: 1 } })
      )
        .toStrictEqual(["UnpricedModel", "UnpricedModel"])
      const refused = new AiError.AuthFailed({ provider: "mock", status: 401, message: "bad key" })
      expect(yield* terminationOf([refused], { input: "Hi", model })).toStrictEqual(["ProviderAuth", "ProviderAuth"])
    }))

  it.effect("records a success, its usage and the verdict's reason", () =>
    Effect.gen(function*() {
      const { spans, tracer } = SpanRecorder.make()
      yield* runWith([answer("hello")], { input: "Hi", model }).pipe(Effect.withTracer(tracer))
      const run = spans.find((span) => span.name === "invoke_agent")
      expect(run?.attributes.get("agentloop.termination")).toBe("Stop")
      expect(run?.attributes.get("error.type")).toBeUndefined()
      expect(run?.attributes.get("gen_ai.usage.input_tokens")).toBe(20)
      expect(spans.find((span) => span.name === "Until.evaluate")?.attributes.get("until.reason")).toBe(
        "the model answered without calling a tool"
      )
    }))
})
