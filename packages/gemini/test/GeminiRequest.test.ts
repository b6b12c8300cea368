import { AiError, Item } from "@agentloop/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { GeminiRequest } from "../src/index.ts"

const call = (callId: string, name: string, args: string): Item.FunctionCall => ({
  type: "function_call",
  id: `fc-${callId}`,
  status: "completed",
  call_id: callId,
  name,
  arguments: args
})

const result = (callId: string, output: string): Item.FunctionCallOutput => ({
  type: "function_call_output",
  id: `out-${callId}`,
  status: "completed",
  call_id: callId,
  output
})

describe("GeminiRequest", () => {
  it.effect("puts instructions, then system and developer messages, in systemInstruction", () =>
    Effect.gen(function*() {
      const system: Item.Message = { ...Item.userMessage("Answer in French."), role: "system" }
      const developer: Item.Message = { ...Item.userMessage("Never use tools."), role: "developer" }
      const body = yield* GeminiRequest.make([system, Item.userMessage("Hi"), developer], { instructions: "Be brief." })
      expect(body.systemInstruction).toStrictEqual({
        parts: [{ text: "Be brief." }, { text: "Answer in French." }, { text: "Never use tools." }]
      })
      expect(body.contents).toStrictEqual([{ role: "user", parts: [{ text: "Hi" }] }])
    }))

  it.effect("merges consecutive items of one role and alternates user and model", () =>
    Effect.gen(function*() {
      const refusal: Item.Message = {
        type: "message",
        id: "r",
        status: "completed",
        role: "assistant",
        content: [{ type: "refusal", refusal: "I cannot help with that." }]
      }
      const body = yield* GeminiRequest.make([
        Item.userMessage("a"),
        Item.userMessage("b"),
        Item.assistantMessage("c"),
        refusal,
        Item.userMessage("d")
      ], {})
      expect(body.contents).toStrictEqual([
        { role: "user", parts: [{ text: "a" }, { text: "b" }] },
        { role: "model", parts: [{ text: "c" }, { text: "I cannot help with that." }] },
        { role: "user", parts: [{ text: "d" }] }
      ])
    }))

  it.effect("wraps function outputs that are not JSON objects in { output }", () =>
    Effect.gen(function*() {
      const outputs = ["{\"ok\":true}", "[1,2]", "42", "\"text\"", "null", "not json at all"]
      const history = [
        Item.userMessage("go"),
        ...outputs.map((_, i) => call(`c${i}`, "tool", "{}")),
        ...outputs.map((output, i) => result(`c${i}`, output))
      ]
      const body = yield* GeminiRequest.make(history, {})
      expect(body.contents[2]?.parts.map((part) => part.functionResponse?.response)).toStrictEqual([
        { ok: true },
        { output: [1, 2] },
        { output: 42 },
        { output: "text" },
        { output: null },
        { output: "not json at all" }
      ])
      expect(body.contents[2]?.parts.map((part) => part.functionResponse?.id)).toStrictEqual(
        outputs.map((_, i) => `c${i}`)
      )
    }))

  it.effect("fails with InvalidRequest for a result without its call", () =>
    Effect.gen(function*() {
      const orphan = yield* Effect.flip(GeminiRequest.make([Item.userMessage("x"), result("missing", "{}")], {}))
      expect(orphan).toBeInstanceOf(AiError.InvalidRequest)
      expect(orphan.message).toContain("missing")
    }))

  it.effect("sends arguments that are not a JSON object, a model's bad call, under \"arguments\"", () =>
    Effect.gen(function*() {
      const body = yield* GeminiRequest.make([
        Item.userMessage("x"),
        call("a", "tool", "{not json"),
        call("b", "tool", "3"),
        call("c", "tool", "[1,2]"),
        call("d", "tool", "null")
      ], {})
      expect(body.contents[1]?.parts.map((part) => part.functionCall?.args)).toStrictEqual([
        { arguments: "{not json" },
        { arguments: 3 },
        { arguments: [1, 2] },
        { arguments: null }
      ])
    }))

  it.effect("sends a call with empty arguments, as Toolkit reads them, as an empty object", () =>
    Effect.gen(function*() {
      const body = yield* GeminiRequest.make([Item.userMessage("x"), call("c", "now", ""), call("d", "now", " ")], {})
      expect(body.contents[1]?.parts).toStrictEqual([
        { functionCall: { id: "c", name: "now", args: {} } },
        { functionCall: { id: "d", name: "now", args: {} } }
      ])
    }))

  it.effect("leaves out other providers' reasoning and applications' extension items", () =>
    Effect.gen(function*() {
      const openAiReasoning: Item.Reasoning = {
        type: "reasoning",
        id: "rs_123",
        status: "completed",
        content: [{ type: "output_text", text: "private" }],
        encrypted_content: "gAAAA-openai"
      }
      const extension: Item.Extension = { type: "x-note", id: "n", status: "completed", data: { a: 1 } }
      const body = yield* GeminiRequest.make(
        [Item.userMessage("q"), openAiReasoning, extension, Item.assistantMessage("a")],
        {}
      )
      expect(body.contents).toStrictEqual([
        { role: "user", parts: [{ text: "q" }] },
        { role: "model", parts: [{ text: "a" }] }
      ])
    }))

  it.effect("maps tool choice to functionCallingConfig", () =>
    Effect.gen(function*() {
      const configs = []
      for (const toolChoice of ["auto", "none", "required", { name: "search" }] as const) {
        configs.push((yield* GeminiRequest.make([Item.userMessage("q")], { toolChoice })).toolConfig)
      }
      expect(configs).toStrictEqual([
        { functionCallingConfig: { mode: "AUTO" } },
        { functionCallingConfig: { mode: "NONE" } },
        { functionCallingConfig: { mode: "ANY" } },
        { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["search"] } }
      ])
    }))

  it.effect("sends the layer's thinking config, with reasoningEffort replacing a budget by a level", () =>
    Effect.gen(function*() {
      const settings = { thinkingConfig: { thinkingBudget: 1024 } }
      const fromLayer = yield* GeminiRequest.make([Item.userMessage("q")], {}, settings)
      expect(fromLayer.generationConfig).toStrictEqual({
        thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 }
      })
      const fromTurn = yield* GeminiRequest.make(
        [Item.userMessage("q")],
        { params: { reasoningEffort: "high" } },
        settings
      )
      expect(fromTurn.generationConfig).toStrictEqual({
        thinkingConfig: { includeThoughts: true, thinkingLevel: "high" }
      })
      const hidden = yield* GeminiRequest.make([Item.userMessage("q")], {}, {
        thinkingConfig: { includeThoughts: false, thinkingLevel: "minimal" }
      })
      expect(hidden.generationConfig).toStrictEqual({
        thinkingConfig: { includeThoughts: false, thinkingLevel: "minimal" }
      })
      const none = yield* GeminiRequest.make([Item.userMessage("q")], {})
      expect(none.generationConfig).toBeUndefined()
    }))

  it.effect("sends reasoningEffort as a thinking budget to Gemini 2.x models, which take no level", () =>
    Effect.gen(function*() {
      const effort = (reasoningEffort: "minimal" | "low" | "medium" | "high", model: string) =>
        Effect.map(
          GeminiRequest.make([Item.userMessage("q")], { params: { reasoningEffort } }, {
            model,
            thinkingConfig: { thinkingLevel: "high" }
          }),
          (body) => body.generationConfig?.thinkingConfig
        )
      expect(yield* effort("low", "gemini-2.5-flash")).toStrictEqual({ includeThoughts: true, thinkingBudget: 2048 })
      expect(yield* effort("high", "models/gemini-2.5-pro")).toStrictEqual({
        includeThoughts: true,
        thinkingBudget: 24576
      })
      expect(yield* effort("minimal", "gemini-3-flash-preview")).toStrictEqual({
        includeThoughts: true,
        thinkingLevel: "minimal"
      })
    }))
})
