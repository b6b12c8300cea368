/**
 * An `AgentLoop` run over the Responses provider, traced by the real
 * OpenTelemetry SDK (through `@effect/opentelemetry`) into its in-memory
 * exporter: the GenAI span tree, the provider's HTTP-level attributes, and the
 * API key nowhere in what is exported.
 */
import { AgentLoop, Tool, Toolkit } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import * as OtelTracer from "@effect/opentelemetry/OtelTracer"
import { describe, expect, it } from "@effect/vitest"
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer, Redacted, Schema } from "effect"
import { Responses } from "../src/index.ts"
import { canary, model, Script, TestLayer, usage } from "./fixtures.ts"

const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }) => Effect.succeed(a + b)
})

/** Everything an exporter sends of the spans: names, attributes, events, status, links. */
const exported = (spans: ReadonlyArray<ReadableSpan>): string =>
  JSON.stringify(spans.map((span) => ({
    name: span.name,
    attributes: span.attributes,
    events: span.events,
    status: span.status,
    links: span.links,
    resource: span.resource.attributes
  })))

describe("traces over the Responses provider", () => {
  it.live("a two-turn run with a tool call: the span tree, its attributes, and no key anywhere", () =>
    Effect.gen(function*() {
      const exporter = new InMemorySpanExporter()
      const tracer = OtelTracer.layer.pipe(
        Layer.provide(Layer.succeed(
          OtelTracer.OtelTracerProvider,
          new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
        ))
      )
      const server = yield* ProviderServer.ProviderServer
      const first = new Script("resp_1").created()
        .callStart("fc_1", 0, "call_add", "add")
        .callDone("fc_1", 0, "call_add", "add", "{\"a\":2,\"b\":3}")
        .completed(usage(50, 20))
      const second = new Script("resp_2").created().message("msg_1", 0, ["2 + 3 = 5"]).completed(usage(80, 8))
      yield* server.reply(ProviderServer.sse(first.frames), ProviderServer.sse(second.frames))

      const result = yield* Effect.flatMap(
        AgentLoop.AgentLoop,
        (agent) => agent.run({ input: "Add 2 and 3", toolkit: Toolkit.make(add), model, name: "adder" })
      ).pipe(
        Effect.provide(AgentLoop.layer.pipe(
          Layer.provide(Responses.layer({ apiKey: Redacted.make(canary), baseUrl: server.url }))
        )),
        Effect.provide(tracer)
      )
      expect(result._tag === "Stopped" && result.output).toBe("2 + 3 = 5")

      const spans = exporter.getFinishedSpans()
      const run = spans.find((span) => span.name === "invoke_agent adder")!
      const chats = spans.filter((span) => span.name === `chat ${model}`)
      const tool = spans.find((span) => span.name === "execute_tool add")!
      expect(chats).toHaveLength(2)
      for (const span of [...chats, tool]) expect(span.parentSpanContext?.spanId).toBe(run.spanContext().spanId)
      const port = Number(new URL(server.url).port)
      expect(run.attributes).toMatchObject({ "gen_ai.provider.name": "openai", "agentloop.termination": "Stop" })
      expect(chats[0]!.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.response.id": "resp_1",
        "gen_ai.usage.input_tokens": 50,
        "gen_ai.usage.output_tokens": 20,
        "server.address": "127.0.0.1",
        "server.port": port
      })
      expect(chats[1]!.attributes["gen_ai.response.id"]).toBe("resp_2")
      // Each turn's HTTP request has its span (named by its method, as OpenTelemetry's HTTP conventions say) below it.
      const requests = spans.filter((span) => span.name === "POST")
      expect(requests.map((span) => span.parentSpanContext?.spanId)).toStrictEqual(
        chats.map((span) => span.spanContext().spanId)
      )
      // The key went to the server, and nowhere into what is exported.
      const [received] = yield* server.requests
      expect(received?.headers["authorization"]).toBe(`Bearer ${canary}`)
      expect(exported(spans)).not.toContain(canary)
    }).pipe(Effect.provide(TestLayer)))
})
