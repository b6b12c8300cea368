/**
 * Every decoding rule over loopback HTTP, each with a stream in the shape the
 * server it comes from sends (written by hand from what those servers send).
 */
import { Item, type LanguageModel, ProviderRetry, Turn } from "@agentloop/core"
import type { TurnDelta } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { ChatCompletions } from "../src/index.ts"
import { callArguments, callStart, chunk, delta, done, finish, id, model, role, textStream, usage } from "./fixtures.ts"
import { completed, failing, run, textOf, turn } from "./harness.ts"

const hello = [Item.userMessage("Say hello")]

/** Runs one turn against `frames` (in pieces of `chunkSize` bytes when given): its deltas and its turn. */
const answer = (frames: ReadonlyArray<string>, chunkSize?: number) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(ProviderServer.sse(frames, { chunkSize }))
    return yield* turn(hello)
  })

/** The error a turn against `frames` fails with, and the deltas before it. */
const broken = (frames: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(ProviderServer.sse(frames))
    return yield* failing(hello)
  })

/** Runs `body` against the layer on a fresh loopback server, without retries. */
const onLayer = <A, E>(
  body: Effect.Effect<A, E, ProviderServer.ProviderServer | LanguageModel.LanguageModel>,
  overrides?: Partial<Omit<ChatCompletions.Config, "baseUrl">>
) =>
  run((server) => Effect.provideService(body, ProviderServer.ProviderServer, server), {
    retryPolicy: ProviderRetry.none,
    ...overrides
  })

const itemId = (n: number, key = id) => `chatcmpl_item_${key}_${n}`

const types = (deltas: ReadonlyArray<TurnDelta.TurnDelta>) => deltas.map((d) => d.type)

describe("ChatCompletionsDecoder: the documented stream", () => {
  it.effect("reads OpenAI's stream split at every byte, usage with cached and reasoning tokens in the last chunk", () =>
    onLayer(Effect.gen(function*() {
      const frames = [
        role,
        delta({ content: "Hello" }),
        delta({ content: ", wörld 🌍" }),
        finish("stop"),
        usage({
          prompt_tokens: 30,
          completion_tokens: 12,
          total_tokens: 42,
          prompt_tokens_details: { cached_tokens: 20, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 4, audio_tokens: 0 }
        }),
        done
      ]
      const runs: Array<ReadonlyArray<TurnDelta.TurnDelta>> = []
      for (const size of [undefined, 1, 3, 7]) runs.push(yield* answer(frames, size))
      for (const deltas of runs) expect(deltas).toStrictEqual(runs[0])
      const deltas = runs[0]!
      expect(deltas.filter((d) => d.type === "text_delta").map((d) => d.delta)).toStrictEqual(["Hello", ", wörld 🌍"])
      const usageCounts = { input: 30, output: 12, total: 42, cachedInput: 20, reasoning: 4 }
      expect(deltas[deltas.length - 2]).toStrictEqual({ type: "usage", usage: usageCounts })
      expect(completed(deltas)).toStrictEqual({
        items: [{
          type: "message",
          id: itemId(0),
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "Hello, wörld 🌍" }]
        }],
        usage: usageCounts,
        stopReason: "stop",
        model,
        responseId: id,
        providerStopReason: "stop"
      })
    })))

  it.effect("stops reading at [DONE] without waiting for the server to close the stream", () =>
    onLayer(Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const frames = textStream("done")
      yield* server.reply(ProviderServer.sse(frames, { stallAfter: frames.join("").length }))
      expect(Turn.text(completed(yield* turn(hello)))).toBe("done")
      yield* server.awaitClientAbort
    })))

  it.effect("streams a refusal as refusal deltas and a refusal part", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        role,
        delta({ refusal: "I can't " }),
        delta({ refusal: "help." }),
        finish("stop"),
        done
      ])
      expect(textOf(deltas, "refusal_delta")).toBe("I can't help.")
      expect(completed(deltas).items).toStrictEqual([{
        type: "message",
        id: itemId(0),
        status: "completed",
        role: "assistant",
        content: [{ type: "refusal", refusal: "I can't help." }]
      }])
    })))
})

describe("ChatCompletionsDecoder: reasoning", () => {
  const reasoningItem = (text: string, rest: Partial<Item.Reasoning> = {}): Item.Reasoning => ({
    type: "reasoning",
    id: itemId(0),
    status: "completed",
    content: [{ type: "output_text", text }],
    ...rest
  })

  it.effect("reads reasoning_content (DeepSeek, vLLM, llama.cpp) and reasoning (OpenRouter, Ollama, Groq), once when both come", () =>
    onLayer(Effect.gen(function*() {
      for (
        const field of [
          (text: string) => ({ reasoning_content: text }),
          (text: string) => ({ reasoning: text }),
          // vLLM sends the same text under both names.
          (text: string) => ({ reasoning_content: text, reasoning: text }),
          (text: string) => ({ reasoning_content: null, reasoning: text })
        ]
      ) {
        const deltas = yield* answer([
          role,
          delta(field("First, ")),
          delta(field("the sky.")),
          delta({ content: "Blue.", reasoning_content: "" }),
          finish("stop"),
          done
        ])
        expect(types(deltas)).toStrictEqual(["reasoning_delta", "reasoning_delta", "text_delta", "turn_complete"])
        expect(textOf(deltas, "reasoning_delta")).toBe("First, the sky.")
        const result = completed(deltas)
        expect(result.items[0]).toStrictEqual(reasoningItem("First, the sky."))
        expect(Turn.text(result)).toBe("Blue.")
      }
    })))

  it.effect("reads content as an array of parts: text, Mistral's thinking (text or chunks), Databricks' reasoning summaries", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        role,
        delta({ content: [{ type: "thinking", thinking: [{ type: "text", text: "Okay, the" }], closed: true }] }),
        delta({ content: [{ type: "thinking", thinking: " user asks" }] }),
        delta({
          content: [{ type: "reasoning", summary: [{ type: "summary_text", text: " for 17·23.", signature: "sig" }] }]
        }),
        delta({ content: [{ type: "thinking", thinking: [{ type: "text", text: "" }] }, { type: "text", text: "3" }] }),
        delta({ content: [{ type: "image_url", image_url: { url: "https://example.com/x.png" } }] }),
        delta({ content: "91" }, "stop"),
        done
      ])
      expect(textOf(deltas, "reasoning_delta")).toBe("Okay, the user asks for 17·23.")
      expect(textOf(deltas, "text_delta")).toBe("391")
      expect(completed(deltas).items.map((item) => item.type)).toStrictEqual(["reasoning", "message"])
    })))

  it.effect("reads OpenRouter's reasoning_details once beside reasoning, and keeps them, merged by index, for the next turn", () =>
    onLayer(Effect.gen(function*() {
      const detail = (fields: Record<string, unknown>) => ({
        type: "reasoning.text",
        format: "anthropic-claude-v1",
        index: 0,
        ...fields
      })
      const deltas = yield* answer([
        role,
        delta({ reasoning: "Let me ", reasoning_details: [detail({ text: "Let me " })] }),
        delta({ reasoning: "think.", reasoning_details: [detail({ text: "think." })] }),
        delta({ reasoning: null, reasoning_details: [detail({ signature: "c2ln" })] }),
        delta({
          reasoning_details: [{ type: "reasoning.encrypted", data: "ZW5j", index: 1, format: "openai-responses-v1" }]
        }),
        delta({ content: "Done." }),
        finish("stop"),
        done
      ])
      expect(textOf(deltas, "reasoning_delta")).toBe("Let me think.")
      expect(completed(deltas).items[0]).toStrictEqual(reasoningItem("Let me think.", {
        encrypted_content: JSON.stringify([
          { type: "reasoning.text", format: "anthropic-claude-v1", index: 0, text: "Let me think.", signature: "c2ln" },
          { type: "reasoning.encrypted", data: "ZW5j", index: 1, format: "openai-responses-v1" }
        ])
      }))
    })))

  it.effect("reads the text of reasoning_details when no reasoning string comes with them", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        role,
        delta({ reasoning_details: [{ type: "reasoning.summary", summary: "**Plan** ", index: 0 }] }),
        delta({ reasoning_details: [{ type: "reasoning.summary", summary: "add them", index: 0 }] }),
        delta({ content: "5" }),
        finish("stop"),
        done
      ])
      expect(textOf(deltas, "reasoning_delta")).toBe("**Plan** add them")
      const [reasoning] = completed(deltas).items
      expect(reasoning?.type === "reasoning" && reasoning.encrypted_content).toBe(
        JSON.stringify([{ type: "reasoning.summary", summary: "**Plan** add them", index: 0 }])
      )
    })))
})

describe("ChatCompletionsDecoder: tool calls", () => {
  const calls = (deltas: ReadonlyArray<TurnDelta.TurnDelta>) =>
    Turn.functionCalls(completed(deltas)).map((call) => [call.call_id, call.name, call.arguments])

  it.effect("streams parallel calls by index, interleaved, id and name on the first piece only", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        role,
        delta({ content: "Checking." }),
        callStart(0, "call_a", "weather"),
        callStart(1, "call_b", "search"),
        callArguments(0, "{\"city\":"),
        callArguments(1, "{\"q\":\"café\"}"),
        callArguments(0, "\"Zürich\"}"),
        finish("tool_calls"),
        usage(),
        done
      ], 5)
      expect(deltas.slice(1, -2)).toStrictEqual([
        { type: "function_call_start", call_id: "call_a", name: "weather" },
        { type: "function_call_start", call_id: "call_b", name: "search" },
        { type: "function_call_arguments_delta", call_id: "call_a", delta: "{\"city\":" },
        { type: "function_call_arguments_delta", call_id: "call_b", delta: "{\"q\":\"café\"}" },
        { type: "function_call_arguments_delta", call_id: "call_a", delta: "\"Zürich\"}" },
        { type: "function_call_done", call_id: "call_a", name: "weather", arguments: "{\"city\":\"Zürich\"}" },
        { type: "function_call_done", call_id: "call_b", name: "search", arguments: "{\"q\":\"café\"}" }
      ])
      const result = completed(deltas)
      expect(result.stopReason).toBe("tool_calls")
      expect(result.items.map((item) => [item.type, item.id])).toStrictEqual([
        ["message", itemId(0)],
        ["function_call", itemId(1)],
        ["function_call", itemId(2)]
      ])
    })))

  it.effect("keeps a call's extra_content (Gemini's thought signature) and sends it back on that call only", () =>
    onLayer(Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const signed = { google: { thought_signature: "c2lnLTE=" } }
      yield* server.reply(
        ProviderServer.sse([
          delta({
            role: "assistant",
            tool_calls: [
              {
                index: 0,
                id: "call_p",
                type: "function",
                function: { name: "weather", arguments: "" },
                extra_content: signed
              },
              { index: 1, id: "call_l", type: "function", function: { name: "weather", arguments: "" } }
            ]
          }),
          callArguments(0, "{\"city\":\"Paris\"}"),
          callArguments(1, "{\"city\":\"London\"}"),
          finish("tool_calls"),
          done
        ]),
        ProviderServer.sse(textStream("Sunny in both."))
      )
      const deltas = yield* turn(hello)
      expect(types(deltas)).toStrictEqual([
        "function_call_start",
        "function_call_start",
        "function_call_arguments_delta",
        "function_call_arguments_delta",
        "function_call_done",
        "function_call_done",
        "turn_complete"
      ])
      const first = completed(deltas)
      expect(first.items.map((item) => item.type)).toStrictEqual(["reasoning", "function_call", "function_call"])
      const outputs = Turn.functionCalls(first).map((call): Item.Item => ({
        type: "function_call_output",
        id: `out_${call.call_id}`,
        status: "completed",
        call_id: call.call_id,
        output: "\"sun\""
      }))
      // The history goes through JSON, as a checkpoint would, before it is sent back.
      const history = Schema.decodeUnknownSync(Item.History)(
        JSON.parse(JSON.stringify([...hello, ...first.items, ...outputs]))
      )
      yield* turn(history)
      const body = (yield* server.requests)[1]?.body as { readonly messages: ReadonlyArray<unknown> }
      expect(body.messages[1]).toStrictEqual({
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_p",
            type: "function",
            function: { name: "weather", arguments: "{\"city\":\"Paris\"}" },
            extra_content: signed
          },
          { id: "call_l", type: "function", function: { name: "weather", arguments: "{\"city\":\"London\"}" } }
        ]
      })
    })))

  it.effect("skips an extra_content that is not an object, and keeps the call", () =>
    onLayer(Effect.gen(function*() {
      for (const junk of ["junk", 7, null, ["a"]]) {
        const deltas = yield* answer([
          delta({
            tool_calls: [{ index: 0, id: "call_j", function: { name: "f", arguments: "{}" }, extra_content: junk }]
          }),
          finish("tool_calls"),
          done
        ])
        expect(completed(deltas).items).toMatchObject([{ type: "function_call", call_id: "call_j", arguments: "{}" }])
      }
    })))

  it.effect("reads calls without index (Google), whole, two in one delta, told apart by id or, without ids, by name", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        delta({
          role: "assistant",
          tool_calls: [
            { id: "g1", type: "function", function: { name: "a", arguments: "{\"x\":1}" } },
            { id: "g2", type: "function", function: { name: "b", arguments: "{}" } }
          ]
        }),
        finish("tool_calls"),
        done
      ])
      expect(calls(deltas)).toStrictEqual([["g1", "a", "{\"x\":1}"], ["g2", "b", "{}"]])
      const unnamed = yield* answer([
        delta({
          tool_calls: [
            { id: "", type: "function", function: { name: "a", arguments: "{\"x\":1}" } },
            { id: "", type: "function", function: { name: "b", arguments: "{}" } }
          ]
        }),
        finish("tool_calls"),
        done
      ])
      expect(calls(unnamed)).toStrictEqual([[`call_${id}_0`, "a", "{\"x\":1}"], [`call_${id}_1`, "b", "{}"]])
    })))

  it.effect("reads an index that starts at 1, and later pieces that repeat id and name as empty strings", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        role,
        delta({ content: "Reading it." }),
        callStart(1, "toolu_1", "read_file"),
        delta({ tool_calls: [{ index: 1, id: "", type: "function", function: { name: "", arguments: "" } }] }),
        delta({ tool_calls: [{ index: 1, id: "", function: { name: "", arguments: "{\"pa" } }] }),
        delta({
          tool_calls: [{ index: 1, id: "toolu_1", function: { name: "read_file", arguments: "th\": \"a.txt\"}" } }]
        }),
        finish("tool_calls"),
        done
      ])
      expect(calls(deltas)).toStrictEqual([["toolu_1", "read_file", "{\"path\": \"a.txt\"}"]])
      expect(deltas.filter((d) => d.type === "function_call_start")).toHaveLength(1)
    })))

  it.effect("reads a whole call in one chunk with the finish_reason and the usage", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        chunk({
          choices: [{
            index: 0,
            delta: {
              role: "assistant",
              tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "now", arguments: "{}" } }]
            },
            finish_reason: "tool_calls"
          }],
          usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 }
        }),
        done
      ])
      expect(types(deltas)).toStrictEqual([
        "function_call_start",
        "function_call_arguments_delta",
        "function_call_done",
        "usage",
        "turn_complete"
      ])
      expect(completed(deltas).usage).toStrictEqual({ input: 7, output: 3, total: 10 })
    })))

  it.effect("takes another id at a known index for a new call (servers that number every call 0)", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        callStart(0, "first", "a"),
        callArguments(0, "{\"n\":1}"),
        callStart(0, "second", "b"),
        delta({ tool_calls: [{ index: 0, id: "second", function: { arguments: "{\"n\":2}" } }] }),
        finish("tool_calls"),
        done
      ])
      expect(calls(deltas)).toStrictEqual([["first", "a", "{\"n\":1}"], ["second", "b", "{\"n\":2}"]])
    })))

  it.effect("keeps a call whose later pieces carry another id and no name together (Poolside)", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        callStart(0, "call_head", "search"),
        delta({ tool_calls: [{ index: 0, id: "call_tail", type: "function", function: { arguments: "{\"q\":" } }] }),
        delta({
          tool_calls: [{ index: 0, id: "call_tail", type: "function", function: { arguments: "\"otters\"}" } }]
        }),
        callStart(1, "call_next", "fetch"),
        delta({ tool_calls: [{ index: 1, id: "call_next_tail", function: { arguments: "{}" } }] }),
        finish("tool_calls"),
        done
      ])
      expect(calls(deltas)).toStrictEqual([
        ["call_head", "search", "{\"q\":\"otters\"}"],
        ["call_next", "fetch", "{}"]
      ])
      expect(deltas.filter((d) => d.type === "function_call_arguments_delta")).toStrictEqual([
        { type: "function_call_arguments_delta", call_id: "call_head", delta: "{\"q\":" },
        { type: "function_call_arguments_delta", call_id: "call_head", delta: "\"otters\"}" },
        { type: "function_call_arguments_delta", call_id: "call_next", delta: "{}" }
      ])
    })))

  it.effect("announces a call whose first piece has no name once the name comes, with the arguments so far as one delta", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        delta({ tool_calls: [{ index: 0, id: "late", function: { arguments: "{\"a\":" } }] }),
        delta({ tool_calls: [{ index: 0, function: { name: "named", arguments: "1" } }] }),
        delta({ tool_calls: [{ index: 0, function: { arguments: "}" } }] }),
        finish("tool_calls"),
        done
      ])
      expect(deltas.slice(0, 4)).toStrictEqual([
        { type: "function_call_start", call_id: "late", name: "named" },
        { type: "function_call_arguments_delta", call_id: "late", delta: "{\"a\":1" },
        { type: "function_call_arguments_delta", call_id: "late", delta: "}" },
        { type: "function_call_done", call_id: "late", name: "named", arguments: "{\"a\":1}" }
      ])
    })))

  it.effect("makes an id up for a call without one, takes arguments sent as an object, and reads the legacy function_call", () =>
    onLayer(Effect.gen(function*() {
      const objects = yield* answer([
        delta({ tool_calls: [{ index: 0, function: { name: "sum", arguments: { a: 1, b: [2, 3] } } }] }),
        finish("tool_calls"),
        done
      ])
      expect(calls(objects)).toStrictEqual([[`call_${id}_0`, "sum", "{\"a\":1,\"b\":[2,3]}"]])
      const legacy = yield* answer([
        delta({ role: "assistant", content: null, function_call: { name: "lookup", arguments: "" } }),
        delta({ function_call: { arguments: "{\"q\":" } }),
        delta({ function_call: { arguments: "\"x\"}" } }),
        finish("function_call"),
        done
      ])
      expect(calls(legacy)).toStrictEqual([[`call_${id}_0`, "lookup", "{\"q\":\"x\"}"]])
      expect(completed(legacy).stopReason).toBe("tool_calls")
    })))

  it.effect("keys calls by index without allocating for it: an index of 10^9 is a call like any other", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        callStart(1_000_000_000, "far", "f"),
        callArguments(1_000_000_000, "{}"),
        callStart(2 ** 53 - 1, "farther", "g"),
        finish("tool_calls"),
        done
      ])
      expect(calls(deltas)).toStrictEqual([["far", "f", "{}"], ["farther", "g", ""]])
    })))

  it.effect("fails with MalformedEvent for a call that never got a name, and for an index that is not one", () =>
    onLayer(Effect.gen(function*() {
      const unnamed = yield* broken([
        delta({ content: "a" }),
        delta({ tool_calls: [{ index: 0, id: "nameless", function: { arguments: "{}" } }] }),
        finish("tool_calls"),
        done
      ])
      expect(unnamed.error._tag).toBe("MalformedEvent")
      expect(unnamed.error.message).toMatch(/call nameless never got a function name/)
      expect(textOf(unnamed.deltas, "text_delta")).toBe("a")
      for (const index of [-1, 1.5, 2 ** 53, "0"]) {
        const { error } = yield* broken([delta({ tool_calls: [{ index, id: "x", function: { name: "f" } }] })])
        expect(error._tag, String(index)).toBe("MalformedEvent")
        expect(error.message).toMatch(/choices\[0\]\.delta\.tool_calls\[0\]\.index/)
      }
    })))
})

describe("ChatCompletionsDecoder: usage", () => {
  const usageOf = (frames: ReadonlyArray<string>) => Effect.map(answer(frames), (deltas) => completed(deltas).usage)

  it.effect("reads Groq's x_groq.usage, DeepSeek's prompt_cache_hit_tokens and a top-level cached_tokens", () =>
    onLayer(Effect.gen(function*() {
      const groq = yield* usageOf([
        delta({ content: "hi" }),
        chunk({
          choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
          x_groq: {
            id: "req_01",
            usage: { queue_time: 0.09, prompt_tokens: 38, prompt_time: 0.003, completion_tokens: 4, total_tokens: 42 }
          }
        }),
        done
      ])
      expect(groq).toStrictEqual({ input: 38, output: 4, total: 42 })
      const deepseek = yield* usageOf([
        delta({ content: "hi" }),
        finish("stop"),
        usage({
          prompt_tokens: 100,
          completion_tokens: 10,
          total_tokens: 110,
          prompt_cache_hit_tokens: 64,
          prompt_cache_miss_tokens: 36
        }),
        done
      ])
      expect(deepseek).toStrictEqual({ input: 100, output: 10, total: 110, cachedInput: 64 })
      const moonshot = yield* usageOf([
        delta({ content: "hi" }, "stop"),
        usage({ prompt_tokens: 50, completion_tokens: 5, total_tokens: 55, cached_tokens: 32 }),
        done
      ])
      expect(moonshot).toStrictEqual({ input: 50, output: 5, total: 55, cachedInput: 32 })
    })))

  it.effect("reads OpenRouter's cache_write_tokens as cacheWrite, and no other server's counts as writes", () =>
    onLayer(Effect.gen(function*() {
      // OpenRouter's usage accounting for a Claude model: reads and writes beside each other.
      const openRouter = yield* usageOf([
        delta({ content: "hi" }),
        finish("stop"),
        usage({
          prompt_tokens: 3410,
          completion_tokens: 100,
          total_tokens: 3510,
          prompt_tokens_details: { cached_tokens: 3000, cache_write_tokens: 400, audio_tokens: 0 },
          cost: 0.0039
        }),
        done
      ])
      expect(openRouter).toStrictEqual({ input: 3410, output: 100, total: 3510, cachedInput: 3000, cacheWrite: 400 })
      // OpenAI reports hits only: a cache write is never made up from them.
      const openAi = yield* usageOf([
        delta({ content: "hi" }),
        finish("stop"),
        usage({
          prompt_tokens: 2006,
          completion_tokens: 300,
          total_tokens: 2306,
          prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 }
        }),
        done
      ])
      expect(openAi).toStrictEqual({ input: 2006, output: 300, total: 2306, cachedInput: 1920 })
      expect("cacheWrite" in openAi).toBe(false)
    })))

  it.effect("keeps the last counts reported: a usage: null chunk after them, and usage with null counts until the last", () =>
    onLayer(Effect.gen(function*() {
      const trailing = yield* usageOf([
        delta({ content: "hi" }),
        finish("stop"),
        usage({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 }),
        chunk({ choices: [], usage: null }),
        done
      ])
      expect(trailing).toStrictEqual({ input: 9, output: 2, total: 11 })
      const nulls = { prompt_tokens: null, completion_tokens: null, total_tokens: null }
      const repeated = yield* usageOf([
        chunk({ choices: [{ index: 0, delta: { content: "a" }, finish_reason: null }], usage: nulls }),
        chunk({ choices: [{ index: 0, delta: { content: "b" }, finish_reason: null }], usage: nulls }),
        chunk({
          choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
          usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, prompt_tokens_details: null }
        }),
        done
      ])
      expect(repeated).toStrictEqual({ input: 5, output: 2, total: 7 })
    })))

  it.effect("counts xAI's reasoning tokens, which its completion_tokens leaves out, in output", () =>
    onLayer(Effect.gen(function*() {
      const xai = yield* usageOf([
        delta({ reasoning_content: "First" }),
        delta({ content: "Sunny." }),
        finish("stop"),
        usage({
          prompt_tokens: 307,
          completion_tokens: 26,
          total_tokens: 560,
          prompt_tokens_details: { text_tokens: 307, cached_tokens: 306 },
          completion_tokens_details: { reasoning_tokens: 227 },
          num_sources_used: 0,
          cost_in_usd_ticks: 1_497_500
        }),
        done
      ])
      expect(xai).toStrictEqual({ input: 307, output: 253, total: 560, cachedInput: 306, reasoning: 227 })
      // OpenAI's completion_tokens already holds its reasoning tokens: nothing is added.
      const openai = yield* usageOf([
        delta({ content: "Sunny." }),
        finish("stop"),
        usage({
          prompt_tokens: 307,
          completion_tokens: 253,
          total_tokens: 560,
          completion_tokens_details: { reasoning_tokens: 227 }
        }),
        done
      ])
      expect(openai).toStrictEqual({ input: 307, output: 253, total: 560, reasoning: 227 })
      // A total that is neither sum (a server's own count) is kept as it came.
      const odd = yield* usageOf([
        delta({ content: "Sunny." }),
        finish("stop"),
        usage({
          prompt_tokens: 10,
          completion_tokens: 5,
          total_tokens: 40,
          completion_tokens_details: { reasoning_tokens: 3 }
        }),
        done
      ])
      expect(odd).toStrictEqual({ input: 10, output: 5, total: 40, reasoning: 3 })
    })))

  it.effect("takes OpenRouter's usage.cost as the turn's cost, and leaves usage out when no chunk reports it", () =>
    onLayer(Effect.gen(function*() {
      const priced = completed(
        yield* answer([
          delta({ content: "hi" }, "stop"),
          usage({ prompt_tokens: 10, completion_tokens: 1, total_tokens: 11, cost: 0.000042 }),
          done
        ])
      )
      expect(priced.cost).toBe(0.000042)
      const unreported = yield* answer([delta({ content: "hi" }), finish("stop"), done])
      expect(types(unreported)).toStrictEqual(["text_delta", "turn_complete"])
      expect(completed(unreported).usage).toStrictEqual({ input: 0, output: 0, total: 0 })
    })))

  it.effect("takes xAI's cost_in_usd_ticks, ten billion to the dollar, as the turn's cost", () =>
    onLayer(Effect.gen(function*() {
      const xai = (cost: Record<string, unknown>) =>
        Effect.map(
          answer([
            delta({ content: "Sunny." }),
            finish("stop"),
            usage({
              prompt_tokens: 12,
              completion_tokens: 2,
              total_tokens: 354,
              prompt_tokens_details: { text_tokens: 12, cached_tokens: 11 },
              completion_tokens_details: { reasoning_tokens: 340 },
              num_sources_used: 0,
              ...cost
            }),
            done
          ]),
          (deltas) => completed(deltas).cost
        )
      expect(yield* xai({ cost_in_usd_ticks: 1_721_250 })).toBe(0.000172125)
      // A cost in USD, where a gateway adds one, is taken as it is.
      expect(yield* xai({ cost_in_usd_ticks: 1_721_250, cost: 0.0002 })).toBe(0.0002)
      expect(yield* xai({ cost_in_usd_ticks: null })).toBeUndefined()
    })))
})

describe("ChatCompletionsDecoder: how a stream starts and ends", () => {
  it.effect("reads Azure's first chunk (empty choices, id and model), a choice without delta, and no role delta", () =>
    onLayer(Effect.gen(function*() {
      const azure = (fields: Record<string, unknown>) => `data: ${JSON.stringify(fields)}\n\n`
      const deltas = yield* answer([
        azure({
          choices: [],
          created: 0,
          id: "",
          model: "",
          object: "",
          prompt_filter_results: [{ prompt_index: 0, content_filter_results: { hate: { filtered: false } } }]
        }),
        azure({
          choices: [{
            content_filter_results: {},
            delta: { content: "Hello", refusal: null },
            finish_reason: null,
            index: 0
          }],
          id: "chatcmpl-azure",
          model: "gpt-4o-2024-11-20",
          obfuscation: "D3Wb",
          usage: null
        }),
        azure({
          choices: [{ content_filter_results: {}, delta: {}, finish_reason: "stop", index: 0, logprobs: null }],
          id: "chatcmpl-azure",
          model: "gpt-4o-2024-11-20"
        }),
        azure({
          choices: [{
            content_filter_offsets: { check_offset: 0, start_offset: 0, end_offset: 5 },
            finish_reason: null,
            index: 0
          }],
          id: "chatcmpl-azure",
          model: "gpt-4o-2024-11-20"
        }),
        azure({
          choices: [],
          id: "chatcmpl-azure",
          model: "gpt-4o-2024-11-20",
          usage: { completion_tokens: 1, prompt_tokens: 8, total_tokens: 9 }
        }),
        done
      ])
      const result = completed(deltas)
      expect([result.responseId, result.model, Turn.text(result)]).toStrictEqual([
        "chatcmpl-azure",
        "gpt-4o-2024-11-20",
        "Hello"
      ])
      expect(result.items[0]?.id).toBe(itemId(0, "chatcmpl-azure"))
    })))

  it.effect("keeps the first finish_reason when a second chunk repeats one", () =>
    onLayer(Effect.gen(function*() {
      const result = completed(
        yield* answer([delta({ content: "Once upon a" }, "length"), delta({}, "stop"), usage(), done])
      )
      expect([result.stopReason, result.providerStopReason]).toStrictEqual(["max_tokens", "length"])
    })))

  it.effect("maps every finish_reason, any case, keeping the raw one, and marks the item a length stop cut", () =>
    onLayer(Effect.gen(function*() {
      const cases = [
        ["stop", "stop"],
        ["STOP", "stop"],
        ["eos", "stop"],
        ["eos_token", "stop"],
        ["stop_sequence", "stop"],
        ["end_turn", "stop"],
        ["tool_calls", "stop"],
        ["length", "max_tokens"],
        ["max_tokens", "max_tokens"],
        ["model_length", "max_tokens"],
        ["content_filter", "content_filter"],
        ["insufficient_system_resource", "other"],
        ["abort", "other"]
      ] as const
      for (const [reason, stopReason] of cases) {
        const result = completed(yield* answer([delta({ content: "Once upon a" }), finish(reason), done]))
        expect([result.providerStopReason, result.stopReason], reason).toStrictEqual([reason, stopReason])
        expect(result.items[0]?.status).toBe(stopReason === "max_tokens" ? "incomplete" : "completed")
      }
      const callsOnStop = completed(yield* answer([callStart(0, "c", "f"), finish("stop"), done]))
      expect(callsOnStop.stopReason).toBe("tool_calls")
      // Hugging Face's text-generation-inference ends an answer with eos_token, calls or not.
      const callsOnEos = completed(yield* answer([callStart(0, "c", "f"), finish("eos_token"), done]))
      expect(callsOnEos.stopReason).toBe("tool_calls")
    })))

  it.effect("completes without [DONE] or without the usage chunk, and with a last [DONE] no blank line follows", () =>
    onLayer(Effect.gen(function*() {
      const ends = [
        [role, delta({ content: "no done" }), finish("stop"), usage()],
        [role, delta({ content: "no usage" }), finish("stop"), done],
        [role, delta({ content: "no line" }), finish("stop"), usage(), "data: [DONE]\n"],
        [role, delta({ content: "no end" }), finish("stop"), usage(), "data: [DONE]"]
      ]
      for (const frames of ends) {
        const deltas = yield* answer(frames, 4)
        expect(completed(deltas).stopReason).toBe("stop")
        expect(textOf(deltas, "text_delta")).toBe(JSON.parse(frames[1]!.slice(6)).choices[0].delta.content)
      }
    })))

  it.effect("completes at [DONE] without a finish_reason when an answer came (Snowflake), and fails without one", () =>
    onLayer(Effect.gen(function*() {
      for (const last of [done, "data: [DONE]"]) {
        const result = completed(yield* answer([delta({ content: "Snow" }), delta({ content: "flake" }), last]))
        expect([Turn.text(result), result.stopReason, result.providerStopReason]).toStrictEqual([
          "Snowflake",
          "stop",
          undefined
        ])
      }
      const calls = completed(yield* answer([callStart(0, "s", "f"), callArguments(0, "{}"), done]))
      expect(calls.stopReason).toBe("tool_calls")
      const empty = yield* broken([role, usage(), done])
      expect(empty.error._tag).toBe("IncompleteTurn")
      expect(empty.error.message).toMatch(/\[DONE\] before any answer/)
    })))

  it.effect("fails with IncompleteTurn after the deltas when the stream ends before any finish_reason", () =>
    onLayer(Effect.gen(function*() {
      const { deltas, error } = yield* broken([role, delta({ reasoning_content: "hm" }), delta({ content: "cut " })])
      expect(types(deltas)).toStrictEqual(["reasoning_delta", "text_delta"])
      expect(error._tag).toBe("IncompleteTurn")
      expect(error.message).toBe("chat-completions: the stream ended before a finish_reason")
      // A body that ends inside a chunk: the cut chunk is dropped, and the turn is as far as it got.
      const cut = delta({ content: "never read" }).slice(0, 40)
      const inside = yield* broken([role, delta({ content: "cut " }), cut])
      expect([textOf(inside.deltas, "text_delta"), inside.error._tag]).toStrictEqual(["cut ", "IncompleteTurn"])
      const finished = completed(yield* answer([delta({ content: "whole" }), finish("stop"), usage().slice(0, 40)]))
      expect([Turn.text(finished), finished.usage]).toStrictEqual(["whole", { input: 0, output: 0, total: 0 }])
    })))

  it.effect("skips SSE comments, empty data lines and fields no rule reads", () =>
    onLayer(Effect.gen(function*() {
      const deltas = yield* answer([
        ": OPENROUTER PROCESSING\n\n",
        role,
        "data: \n\n",
        ": OPENROUTER PROCESSING\n\n",
        chunk({
          choices: [
            {
              index: 0,
              delta: { content: "Hi", channel: "final", annotations: [] },
              logprobs: { content: [{ token: "Hi", logprob: -0.1, bytes: [72, 105], top_logprobs: [] }] },
              text: "Hi",
              token_id: 13_347,
              finish_reason: null,
              native_finish_reason: null
            },
            { index: 1, delta: { content: "another choice" }, finish_reason: null }
          ],
          system_fingerprint: "fp_1",
          provider: "Together",
          service_tier: "default"
        }),
        finish("stop"),
        chunk({ object: "chat.completion.done", choices: [{ index: 0, finish_reason: null }] }),
        done
      ])
      expect(types(deltas)).toStrictEqual(["text_delta", "turn_complete"])
      expect(Turn.text(completed(deltas))).toBe("Hi")
    })))

  it.effect("fails with MalformedEvent naming the field when a chunk is not JSON or not a chunk", () =>
    onLayer(Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [string, RegExp]> = [
        ["data: {\"choices\": [\n\n", /not JSON/],
        [chunk({ choices: "none" }), /choices: Expected/],
        [delta({ content: 42 }), /choices\[0\]\.delta\.content/],
        [usage({ prompt_tokens: -1 }), /usage\.prompt_tokens/],
        [usage({ completion_tokens: 1.5 }), /usage\.completion_tokens/],
        [delta({ tool_calls: [{ index: 0, function: { name: 7 } }] }), /tool_calls\[0\]\.function\.name/],
        [chunk({ choices: [{ index: 0, delta: {}, finish_reason: 5 }] }), /finish_reason/]
      ]
      for (const [frame, message] of cases) {
        const { deltas, error } = yield* broken([delta({ content: "ok" }), frame, finish("stop"), done])
        expect(textOf(deltas, "text_delta")).toBe("ok")
        expect(error._tag, frame).toBe("MalformedEvent")
        expect(error.message).toMatch(message)
      }
    })))
})
