import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import { describe, expect, it } from "@effect/vitest"
import { SpanKind } from "@opentelemetry/api"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer } from "effect"
import * as Telemetry from "../src/Telemetry.ts"
import { addCall, answer, model, runWith, toolkit } from "./agentFixtures.ts"

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
