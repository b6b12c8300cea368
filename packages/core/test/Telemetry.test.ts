import { MockLanguageModel } from "@agentloop/testing"
import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import { describe, expect, it } from "@effect/vitest"
import { SpanKind } from "@opentelemetry/api"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { Deferred, Effect, Fiber, Layer, Stream } from "effect"
import type { Tracer } from "effect"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Item from "../src/Item.ts"
import * as LanguageModel from "../src/LanguageModel.ts"
import * as Telemetry from "../src/Telemetry.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import { addCall, answer, environment, model, runWith, toolkit } from "./agentFixtures.ts"

/** A real OpenTelemetry SDK exporting to memory, installed as the Effect tracer. */
const otel = () => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const layer = OtelTracer.layer.pipe(Layer.provide(Layer.succeed(OtelTracer.OtelTracerProvider, provider)))
  return { exporter, layer }
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId

/** A two-turn run with a tool call, traced into memory. */
const tracedRun = (captureContent: boolean) =>
  Effect.gen(function*() {
    const { exporter, layer } = otel()
    yield* runWith([addCall(2, 3), answer("2 + 3 = 5")], {
      input: "Add 2 and 3",
      instructions: "Use the tools.",
      toolkit,
      model,
      name: "calculator"
    }).pipe(
      Effect.provide(captureContent ? Layer.merge(layer, Telemetry.layerCaptureContent) : layer)
    )
    return exporter.getFinishedSpans()
  })

describe("Telemetry", () => {
  it.effect("names a run's thread on its span", () =>
    Effect.gen(function*() {
      const { exporter, layer } = otel()
      yield* runWith([answer("hi")], { input: "Hi", name: "chat", thread: "user-42" }).pipe(
        Effect.provide(Layer.merge(layer, Checkpointer.layerMemory))
      )
      const run = exporter.getFinishedSpans().find((span) => span.name === "invoke_agent chat")!
      expect(run.attributes).toMatchObject({ "agentloop.thread.id": "user-42", "agentloop.termination": "Stop" })
    }))

  it.effect("the model's stream runs in its turn's chat span, its setup and its pulls", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const spanName = Effect.map(Effect.orDie(Effect.currentSpan), (span) => {
        seen.push(span.name)
      })
      const model = Layer.succeed(LanguageModel.LanguageModel, {
        provider: "mock",
        streamTurn: () =>
          Stream.unwrap(Effect.as(spanName, Stream.fromIterable(MockLanguageModel.deltas(answer("hi"))))).pipe(
            Stream.tap(() => spanName)
          )
      })
      const agent = yield* AgentLoop.make.pipe(Effect.provide(model))
      yield* agent.run({ input: "Hi", model: "m" })
      expect(seen.length).toBeGreaterThan(1)
      expect(new Set(seen)).toStrictEqual(new Set(["chat m"]))
    }))

  it.effect("a model turn that fails has its error's tag as error.type on its chat span", () =>
    Effect.gen(function*() {
      const { exporter, layer } = otel()
      const failure = new AiError.AuthFailed({ provider: "mock", status: 401, message: "bad key" })
      yield* Effect.flip(runWith([failure], { input: "Hi", model })).pipe(Effect.provide(layer))
      const chat = exporter.getFinishedSpans().find((span) => span.name === `chat ${model}`)
      expect(chat?.attributes["error.type"]).toBe("AuthFailed")
    }))

  it.effect("a turn's chat span ends with its turn, before its last deltas reach the consumer", () =>
    Effect.gen(function*() {
      const { exporter, layer } = otel()
      const chatEnded = () => exporter.getFinishedSpans().some((span) => span.name === `chat ${model}`)
      const ended: Array<boolean> = []
      yield* Effect.gen(function*() {
        const agent = yield* AgentLoop.AgentLoop
        yield* Stream.runForEach(
          agent.stream({ input: "Hi", model }),
          (event) => Effect.sync(() => event._tag === "Delta" && ended.push(chatEnded()))
        )
      }).pipe(Effect.provide(Layer.merge(environment([answer("hi")]), layer)))
      expect(ended.length).toBeGreaterThan(0)
      expect(ended.at(-1)).toBe(true)
    }))

  it.effect("an interrupted run releases its model request, then ends its chat span, then its run span", () =>
    Effect.gen(function*() {
      const { exporter, layer } = otel()
      const asked = yield* Deferred.make<void>()
      const order: Array<string> = []
      const chatEnded = () => exporter.getFinishedSpans().some((span) => span.name === `chat ${model}`)
      const waiting = Layer.succeed(LanguageModel.LanguageModel, {
        provider: "mock",
        streamTurn: () =>
          Stream.fromEffect(Effect.andThen(Deferred.succeed(asked, undefined), Effect.never)).pipe(
            Stream.ensuring(Effect.sync(() =>
              order.push(chatEnded() ? "released after its chat span ended" : "released in its chat span")
            ))
          )
      })
      const agent = yield* AgentLoop.make.pipe(Effect.provide(waiting))
      const fiber = yield* Effect.forkChild(agent.run({ input: "Hi", model }).pipe(Effect.provide(layer)))
      yield* Deferred.await(asked)
      yield* Fiber.interrupt(fiber)
      const spans = exporter.getFinishedSpans()
      const chat = spans.find((span) => span.name === `chat ${model}`)!
      const run = spans.find((span) => span.name === "invoke_agent")!
      expect(order).toStrictEqual(["released in its chat span"])
      expect(spans.indexOf(chat)).toBeLessThan(spans.indexOf(run))
      expect(parentOf(chat)).toBe(run.spanContext().spanId)
      expect(chat.attributes["effect.fiber.interrupted"]).toBe(true)
      expect(run.attributes["effect.fiber.interrupted"]).toBe(true)
    }))

  it.effect("traces a run, its model turns and its tool call as OpenTelemetry GenAI spans", () =>
    Effect.gen(function*() {
      const spans = yield* tracedRun(false)
      const run = spans.find((span) => span.name === "invoke_agent calculator")!
      const chats = spans.filter((span) => span.name === `chat ${model}`)
      const tool = spans.find((span) => span.name === "execute_tool add")!
      expect(run).toBeDefined()
      expect(parentOf(run)).toBeUndefined()
      expect(chats).toHaveLength(2)
      for (const span of [...chats, tool]) expect(parentOf(span)).toBe(run.spanContext().spanId)
      // Each turn's verdict, in a span of the run.
      const verdicts = spans.filter((span) => span.name === "Until.evaluate")
      expect(verdicts.map((span) => span.attributes["until.stop"])).toStrictEqual([false, true])
      for (const span of verdicts) expect(parentOf(span)).toBe(run.spanContext().spanId)

      expect(run.attributes).toMatchObject({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "calculator",
        "gen_ai.provider.name": "mock",
        "gen_ai.request.model": model,
        "gen_ai.usage.input_tokens": 40,
        "gen_ai.usage.output_tokens": 20,
        "agentloop.termination": "Stop"
      })
      expect(chats[0]!.kind).toBe(SpanKind.CLIENT)
      expect(chats[0]!.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "mock",
        "gen_ai.request.model": model,
        "gen_ai.response.model": model,
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "gen_ai.usage.input_tokens": 20,
        "gen_ai.usage.output_tokens": 10,
        "gen_ai.output.type": "text"
      })
      expect(chats[1]!.attributes["gen_ai.response.finish_reasons"]).toStrictEqual(["stop"])
      expect(tool.attributes).toMatchObject({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call_2_3",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Adds two numbers",
        "agentloop.tool.outcome": "success"
      })
      // Message content is recorded only when the application opts in.
      const exported = JSON.stringify(spans.map((span) => span.attributes))
      expect(exported).not.toContain("Add 2 and 3")
      expect(exported).not.toContain("Use the tools.")
      expect(exported).not.toContain("2 + 3 = 5")
    }))

  it.effect("records instructions, messages, tool arguments and results under layerCaptureContent", () =>
    Effect.gen(function*() {
      const spans = yield* tracedRun(true)
      const [first, second] = spans.filter((span) => span.name === `chat ${model}`)
      expect(JSON.parse(String(first!.attributes["gen_ai.system_instructions"]))).toStrictEqual([
        { type: "text", content: "Use the tools." }
      ])
      expect(JSON.parse(String(first!.attributes["gen_ai.input.messages"]))).toStrictEqual([
        { role: "user", parts: [{ type: "text", content: "Add 2 and 3" }] }
      ])
      expect(JSON.parse(String(second!.attributes["gen_ai.output.messages"]))).toStrictEqual([
        { role: "assistant", parts: [{ type: "text", content: "2 + 3 = 5" }], finish_reason: "stop" }
      ])
      expect(JSON.parse(String(second!.attributes["gen_ai.input.messages"])).at(-1)).toStrictEqual({
        role: "tool",
        parts: [{ type: "tool_call_response", id: "call_2_3", response: "5" }]
      })
      const tool = spans.find((span) => span.name === "execute_tool add")!
      expect(tool.attributes["gen_ai.tool.call.arguments"]).toBe("{\"a\":2,\"b\":3}")
      expect(tool.attributes["gen_ai.tool.call.result"]).toBe("5")
    }))

  it("names providers as the conventions do", () => {
    expect(Telemetry.providerName("openai")).toBe("openai")
    expect(Telemetry.providerName("gemini")).toBe("gcp.gemini")
    expect(Telemetry.providerName("my-gateway")).toBe("my-gateway")
  })
})

describe("Telemetry of images, files and the prompt cache", () => {
  it("records an image URL as a uri part and inline bytes as a blob part without them, tool outputs' parts too", () => {
    const attributes = Telemetry.chatAttributes({
      provider: "anthropic",
      request: {},
      captureContent: true,
      history: [
        Item.userMessage([
          { type: "input_text", text: "Compare" },
          Item.imageUrl("https://example.com/a.png"),
          Item.fileFromBytes(new Uint8Array(4096), "application/pdf", { filename: "b.pdf" })
        ]),
        {
          type: "function_call_output",
          id: "o",
          status: "completed",
          call_id: "c",
          output: "{}",
          content: [Item.imageFromBytes(new Uint8Array([1, 2, 3]), "image/png")]
        }
      ]
    })
    const messages = String(attributes["gen_ai.input.messages"])
    expect(JSON.parse(messages)).toStrictEqual([
      {
        role: "user",
        parts: [
          { type: "text", content: "Compare" },
          { type: "uri", modality: "image", uri: "https://example.com/a.png" },
          { type: "blob", modality: "document", mime_type: "application/pdf" }
        ]
      },
      {
        role: "tool",
        parts: [
          { type: "tool_call_response", id: "c", response: "{}" },
          { type: "blob", modality: "image", mime_type: "image/png" }
        ]
      }
    ])
    expect(messages).not.toContain("base64")
  })

  it("records cache writes apart from cache reads, and the provider a turn names", () => {
    expect(Telemetry.usageAttributes(TokenUsage.make(100, 5, { cachedInput: 40, cacheWrite: 50 }))).toStrictEqual({
      "gen_ai.usage.input_tokens": 100,
      "gen_ai.usage.output_tokens": 5,
      "gen_ai.usage.cache_read.input_tokens": 40,
      "gen_ai.usage.cache_creation.input_tokens": 50
    })
    const recorded = new Map<string, unknown>()
    const span = { attribute: (key: string, value: unknown) => recorded.set(key, value) } as unknown as Tracer.Span
    Telemetry.annotateTurn(span, { items: [], usage: TokenUsage.empty, stopReason: "stop", provider: "gemini" }, false)
    expect(recorded.get("gen_ai.provider.name")).toBe("gcp.gemini")
  })
})
