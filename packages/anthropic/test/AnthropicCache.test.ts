import { AgentLoop, ProviderRetry, TokenUsage, Tool, Toolkit } from "@agentloop/core"
import type { AgentEvent, Turn } from "@agentloop/core"
import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { Anthropic, AnthropicCache, type AnthropicRequest } from "../src/index.ts"
import { AnthropicWire } from "../src/testing/index.ts"

const cached = { cache_control: { type: "ephemeral" } } as const
const text = (value: string) => ({ type: "text" as const, text: value })

const body = (messages: ReadonlyArray<AnthropicRequest.Message>): AnthropicRequest.Body => ({
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  system: [text("You are careful."), text("Use metric units.")],
  tools: [
    { name: "a", description: "A", input_schema: { type: "object" } },
    { name: "b", description: "B", input_schema: { type: "object" } }
  ],
  messages,
  stream: true
})

const breakpoints = (value: unknown): number => JSON.stringify(value).split("\"cache_control\"").length - 1

describe("AnthropicCache.withBreakpoints", () => {
  it("marks the last tool, the last system block and the end of the history by default", () => {
    const marked = AnthropicCache.withBreakpoints(
      body([{ role: "user", content: [text("Hi"), text("there")] }]),
      undefined
    )
    expect(marked.tools?.map((tool) => "cache_control" in tool)).toStrictEqual([false, true])
    expect(marked.system).toStrictEqual([text("You are careful."), { ...text("Use metric units."), ...cached }])
    expect(marked.messages).toStrictEqual([{ role: "user", content: [text("Hi"), { ...text("there"), ...cached }] }])
  })

  it("marks where the previous turn's request ended too, so it is read back however many blocks the turn added", () => {
    const calls = Array.from({ length: 12 }, (_, i) => ({ type: "tool_use", id: `t${i}`, name: "a", input: {} }))
    const results = calls.map((call) => ({ type: "tool_result", tool_use_id: call.id, content: "ok" }))
    const marked = AnthropicCache.withBreakpoints(
      body([
        { role: "user", content: [text("Plan")] },
        { role: "assistant", content: [text("First")] },
        {
          role: "user",
          content: [text("Go on"), { type: "image", source: { type: "url", url: "https://e.com/a.png" } }]
        },
        { role: "assistant", content: [{ type: "thinking", thinking: "…", signature: "s" }, text("Now"), ...calls] },
        { role: "user", content: results }
      ]),
      undefined
    )
    // The user message before the last assistant message (its image is its last block), and the last result.
    expect(marked.messages[2]!.content.at(-1)).toMatchObject(cached)
    expect(marked.messages[4]!.content.at(-1)).toMatchObject(cached)
    expect(breakpoints(marked.messages[0])).toBe(0)
    expect(breakpoints(marked.messages[3])).toBe(0)
    // Four at most, as the API allows.
    expect(breakpoints(marked)).toBe(4)
  })

  it("puts no breakpoint on a thinking block, nor on a block it does not model, and marks nothing for an empty request", () => {
    const marked = AnthropicCache.withBreakpoints(
      body([
        { role: "user", content: [text("Hi")] },
        {
          role: "assistant",
          content: [text("Let me see"), { type: "redacted_thinking", data: "x" }, { type: "web_search_tool_result" }]
        }
      ]),
      undefined
    )
    expect(marked.messages[1]!.content).toStrictEqual([
      { ...text("Let me see"), ...cached },
      { type: "redacted_thinking", data: "x" },
      { type: "web_search_tool_result" }
    ])
    const empty = AnthropicCache.withBreakpoints({ ...body([]), tools: [], system: [] }, undefined)
    expect(breakpoints(empty)).toBe(0)
  })

  it("is configurable prefix by prefix, and off with false", () => {
    const request = body([{ role: "user", content: [text("Hi")] }])
    expect(AnthropicCache.withBreakpoints(request, false)).toBe(request)
    const noTools = AnthropicCache.withBreakpoints(request, { tools: false })
    expect([breakpoints(noTools.tools), breakpoints(noTools.system), breakpoints(noTools.messages)]).toStrictEqual([
      0,
      1,
      1
    ])
    const onlyTools = AnthropicCache.withBreakpoints(request, { system: false, history: false })
    expect([breakpoints(onlyTools.tools), breakpoints(onlyTools.system), breakpoints(onlyTools.messages)])
      .toStrictEqual([
        1,
        0,
        0
      ])
  })
})

const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }) => Effect.succeed(a + b)
})

const model = "claude-sonnet-4-5-20250929"

/**
 * A turn as Anthropic reports it: `fresh` input tokens neither read from nor
 * written to the cache, `written` to it, `read` from it, and `output`.
 */
const usage = (fresh: number, written: number, read: number, output: number) =>
  TokenUsage.make(fresh + written + read, output, { cacheWrite: written, cachedInput: read })

const call = (a: number, u: TokenUsage.TokenUsage): Turn.Turn => ({
  ...MockLanguageModel.callsTurn([{ name: "add", arguments: { a, b: 1 }, callId: `toolu_${a}` }], { model, usage: u }),
  responseId: `msg_${a}`
})

describe("Anthropic prompt caching in a long run", () => {
  it.effect("a run's cost is the invoice's: fresh input, cache writes, cache reads and output at their rates", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      // What Anthropic reports, turn by turn, for a run whose prefix grows: written once, then read back.
      yield* server.reply(
        call(1, usage(20, 3000, 0, 150)),
        call(2, usage(15, 400, 3000, 120)),
        call(3, usage(10, 350, 3400, 80)),
        { ...MockLanguageModel.textTurn("Done: 4.", { model, usage: usage(12, 0, 3750, 60) }), responseId: "msg_4" }
      )
      const agent = yield* AgentLoop.AgentLoop
      const events = yield* Stream.runCollect(agent.stream({
        input: "Add 1 and 1, then 2 and 1, then 3 and 1",
        instructions: "Use the tool for every sum.",
        toolkit: Toolkit.make(add),
        model,
        limits: { maxBudgetUsd: 1 }
      }))
      const turns = events.filter((event): event is AgentEvent.TurnCompleted => event._tag === "TurnCompleted")
      // claude-sonnet-4-5 per million tokens: $3 input, $3.75 cache writes, $0.30 cache reads, $15 output.
      // Turn 1: 20 × 3 + 3000 × 3.75 + 150 × 15 = 13,560 µ$;  turn 2: 45 + 1,500 + 900 + 1,800 = 4,245 µ$;
      // turn 3: 30 + 1,312.5 + 1,020 + 1,200 = 3,562.5 µ$;     turn 4: 36 + 0 + 1,125 + 900 = 2,061 µ$.
      expect(turns.map((turn) => turn.cost)).toStrictEqual([
        expect.closeTo(0.01356, 12),
        expect.closeTo(0.004245, 12),
        expect.closeTo(0.0035625, 12),
        expect.closeTo(0.002061, 12)
      ])
      // The invoice's lines: 57 input tokens, 3,750 written, 10,150 read, 410 output.
      const invoice = 57 * 3e-6 + 3750 * 3.75e-6 + 10150 * 0.3e-6 + 410 * 15e-6
      expect(invoice).toBeCloseTo(0.0234285, 12)
      const last = turns.at(-1)!.accounting
      expect(last.cost).toBeCloseTo(invoice, 12)
      expect(last.usage).toStrictEqual({
        input: 57 + 3750 + 10150,
        output: 410,
        total: 57 + 3750 + 10150 + 410,
        cachedInput: 10150,
        cacheWrite: 3750
      })
      // Every request marked its stable prefix: the tool, the system prompt, and the history.
      const requests = yield* server.requests
      expect(requests).toHaveLength(4)
      for (const request of requests) {
        const sent = request.body as AnthropicRequest.Body
        expect(sent.tools?.at(-1)).toMatchObject(cached)
        expect(sent.system?.at(-1)).toMatchObject(cached)
        expect(sent.messages.at(-1)?.content.at(-1)).toMatchObject(cached)
      }
      const third = (requests[2]!.body as AnthropicRequest.Body).messages
      // Where the second request ended (the first result), read back by the third.
      expect(third.map((message) => breakpoints(message))).toStrictEqual([0, 0, 1, 0, 1])
    }).pipe(
      Effect.provide(AgentLoop.layer.pipe(
        Layer.provideMerge(
          Layer.unwrap(Effect.map(ProviderServer.ProviderServer, (server) =>
            Anthropic.layerWithoutHttpClient({
              apiKey: Redacted.make("sk-ant-test"),
              baseUrl: server.url,
              retryPolicy: ProviderRetry.none
            })))
        ),
        Layer.provideMerge(Layer.mergeAll(ProviderServer.layerWire(AnthropicWire.wire), FetchHttpClient.layer))
      ))
    ))
})
