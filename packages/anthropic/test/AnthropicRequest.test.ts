import { AiError, Item, Tool } from "@agentloop/core"
import type { LanguageModel } from "@agentloop/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { AnthropicModels, AnthropicRequest } from "../src/index.ts"

const hello = [Item.userMessage("Hi")]

/** The body of a request; without the prompt cache's breakpoints unless `settings` asks for them (their own tests do). */
const body = (
  history: ReadonlyArray<Item.Item>,
  options: LanguageModel.TurnOptions = {},
  settings: Partial<AnthropicRequest.Settings> = {}
) =>
  Effect.map(
    AnthropicRequest.make(history, options, { model: "claude-sonnet-4-5", promptCache: false, ...settings }),
    (request) => request.body
  )

const tool = (name: string): LanguageModel.ToolDefinition => ({
  name,
  description: `The ${name} tool`,
  parameters: { type: "object", properties: {}, additionalProperties: false }
})

const Answer = Schema.Struct({
  answer: Schema.String.check(Schema.isMaxLength(40)),
  score: Schema.optionalKey(Schema.Int)
})

describe("AnthropicRequest", () => {
  it.effect("puts the instructions, then system and developer messages, in system; refusals and assistant text in messages", () =>
    Effect.gen(function*() {
      const system = (text: string, role: "system" | "developer") =>
        ({ type: "message", id: text, status: "completed", role, content: [{ type: "input_text", text }] }) as const
      const result = yield* body([
        system("Answer in French.", "system"),
        system("", "developer"),
        ...hello,
        {
          type: "message",
          id: "a",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "" }, { type: "refusal", refusal: "I can't." }]
        },
        system("Use metric units.", "developer"),
        Item.userMessage("Why?")
      ], { instructions: "Be brief." })
      expect(result.system).toStrictEqual([
        { type: "text", text: "Be brief." },
        { type: "text", text: "Answer in French." },
        { type: "text", text: "Use metric units." }
      ])
      expect(result.messages).toStrictEqual([
        { role: "user", content: [{ type: "text", text: "Hi" }] },
        { role: "assistant", content: [{ type: "text", text: "I can't." }] },
        { role: "user", content: [{ type: "text", text: "Why?" }] }
      ])
      expect(result.max_tokens).toBe(AnthropicRequest.defaultMaxTokens)
    }))

  it.effect("sends another provider's history: call ids made valid, its reasoning and extension items left out", () =>
    Effect.gen(function*() {
      const result = yield* body([
        ...hello,
        { type: "reasoning", id: "rs_openai", status: "completed", content: [], encrypted_content: "opaque" },
        {
          type: "reasoning",
          id: "anthropic_msg_1_0",
          status: "completed",
          content: [{ type: "output_text", text: "cut" }]
        },
        { type: "x-openai.web_search_call", id: "ws", status: "completed", data: { type: "web_search_call" } },
        { type: "function_call", id: "fc", status: "completed", call_id: "call:1/a", name: "add", arguments: "[1,2]" },
        { type: "function_call_output", id: "fo", status: "completed", call_id: "call:1/a", output: "3" }
      ])
      expect(result.messages).toStrictEqual([
        { role: "user", content: [{ type: "text", text: "Hi" }] },
        {
          role: "assistant",
          content: [{ type: "tool_use", id: "call_1_a", name: "add", input: { arguments: [1, 2] } }]
        },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "call_1_a", content: "3" }] }
      ])
    }))

  it.effect("fails with InvalidRequest for a result whose call is not in the history", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(body([
        ...hello,
        { type: "function_call_output", id: "fo", status: "completed", call_id: "toolu_missing", output: "3" }
      ]))
      expect(error).toBeInstanceOf(AiError.InvalidRequest)
      expect(error.message).toContain("toolu_missing")
    }))

  it.effect("maps the tool choice, and asks for one call at most when parallel calls are off", () =>
    Effect.gen(function*() {
      const tools = [tool("a"), tool("b")]
      const choices: ReadonlyArray<readonly [LanguageModel.ToolChoice, unknown]> = [
        ["auto", { type: "auto" }],
        ["none", { type: "none" }],
        ["required", { type: "any" }],
        [{ name: "b" }, { type: "tool", name: "b" }]
      ]
      for (const [toolChoice, expected] of choices) {
        expect((yield* body(hello, { tools, toolChoice })).tool_choice).toStrictEqual(expected)
      }
      expect((yield* body(hello, { tools })).tool_choice).toBeUndefined()
      expect((yield* body(hello, { tools }, { parallelToolCalls: false })).tool_choice)
        .toStrictEqual({ type: "auto", disable_parallel_tool_use: true })
      expect((yield* body(hello, { tools, toolChoice: "required" }, { parallelToolCalls: false })).tool_choice)
        .toStrictEqual({ type: "any", disable_parallel_tool_use: true })
      expect((yield* body(hello, { toolChoice: "required" })).tool_choice).toBeUndefined()
    }))

  it.effect("asks current models for adaptive thinking with an effort, and older ones for a budget within max_tokens", () =>
    Effect.gen(function*() {
      const adaptive = yield* body(hello, { params: { reasoningEffort: "minimal" } }, { model: "claude-opus-4-6" })
      expect([adaptive.thinking, adaptive.output_config, adaptive.max_tokens]).toStrictEqual([
        { type: "adaptive", display: "summarized" },
        { effort: "low" },
        AnthropicRequest.defaultMaxTokens + AnthropicRequest.thinkingBudgets.minimal
      ])
      const budget = yield* body(hello, { params: { reasoningEffort: "high" } })
      expect([budget.thinking, budget.output_config, budget.max_tokens]).toStrictEqual([
        { type: "enabled", budget_tokens: 24576 },
        undefined,
        AnthropicRequest.defaultMaxTokens + 24576
      ])
      const capped = yield* body(hello, { params: { reasoningEffort: "high", maxOutputTokens: 2000 } })
      expect([capped.thinking, capped.max_tokens]).toStrictEqual([{ type: "enabled", budget_tokens: 1999 }, 2000])
      // The API's smallest budget is 1,024 tokens: below that, no thinking.
      expect((yield* body(hello, { params: { reasoningEffort: "low", maxOutputTokens: 1000 } })).thinking)
        .toBeUndefined()
      const layer = { thinking: { type: "adaptive" } as const, maxTokens: 3000 }
      expect([(yield* body(hello, {}, layer)).thinking, (yield* body(hello, {}, layer)).max_tokens])
        .toStrictEqual([{ type: "adaptive" }, 3000])
      expect((yield* body(hello, { params: { reasoningEffort: "medium" } }, layer)).thinking)
        .toStrictEqual({ type: "enabled", budget_tokens: 2999 })
    }))

  it.effect("uses the API's structured output when the model has it, the schema's constraints in its descriptions", () =>
    Effect.gen(function*() {
      const result = yield* body(hello, { output: { name: "output", schema: Tool.toParameters(Answer) } })
      expect(result.tools).toBeUndefined()
      expect(result.output_config).toStrictEqual({
        format: {
          type: "json_schema",
          schema: {
            type: "object",
            properties: {
              answer: { type: "string", description: "({\"maxLength\":40})" },
              score: { type: "integer", description: "({\"minimum\":-9007199254740991,\"maximum\":9007199254740991})" }
            },
            required: ["answer"],
            additionalProperties: false
          }
        }
      })
    }))

  it.effect("asks for the structured output through a tool when the model or the schema cannot take the API's own", () =>
    Effect.gen(function*() {
      const schema = Tool.toParameters(Answer)
      const { $schema: _, ...inputSchema } = schema
      const old = yield* AnthropicRequest.make(hello, { output: { name: "output", schema } }, {
        promptCache: false,
        model: "claude-sonnet-4-20250514"
      })
      expect(old.outputTool).toBe("output")
      expect(old.body.output_config).toBeUndefined()
      expect(old.body.tools).toStrictEqual([{
        name: "output",
        description: expect.any(String),
        input_schema: inputSchema
      }])
      expect(old.body.tool_choice).toStrictEqual({ type: "tool", name: "output" })
      const withTools = yield* body(hello, { tools: [tool("search")], output: { name: "output", schema } }, {
        model: "claude-3-7-sonnet-20250219"
      })
      expect(withTools.tools?.map((t) => t.name)).toStrictEqual(["search", "output"])
      expect(withTools.tool_choice).toStrictEqual({ type: "any" })
      const thinking = yield* body(hello, { output: { name: "output", schema }, params: { reasoningEffort: "low" } }, {
        model: "claude-opus-4-0"
      })
      expect(thinking.tool_choice).toStrictEqual({ type: "auto" })
      // A record is an open object, which the API's structured output cannot take.
      const open = yield* AnthropicRequest.make(hello, {
        output: { name: "output", schema: Tool.toParameters(Schema.Record(Schema.String, Schema.Number)) }
      }, { model: "claude-opus-4-6" })
      expect(open.outputTool).toBe("output")
      const error = yield* Effect.flip(
        body(hello, { tools: [tool("output")], output: { name: "output", schema } }, { model: "claude-opus-4" })
      )
      expect(error).toBeInstanceOf(AiError.InvalidRequest)
    }))
})

describe("AnthropicModels", () => {
  it("tells which models take adaptive thinking and which have the API's structured output", () => {
    const cases = [
      ["claude-3-haiku-20240307", "budget", false],
      ["claude-3-7-sonnet-20250219", "budget", false],
      ["claude-sonnet-4-20250514", "budget", false],
      ["claude-opus-4-0", "budget", false],
      ["claude-opus-4-1-20250805", "budget", true],
      ["claude-sonnet-4-5@20250929", "budget", true],
      ["claude-haiku-4-5", "budget", true],
      ["claude-opus-4-5-20251101", "budget", true],
      ["claude-opus-4-6", "adaptive", true],
      ["claude-sonnet-4-6", "adaptive", true],
      ["claude-opus-4-7", "adaptive", true],
      ["claude-sonnet-5-5", "adaptive", true],
      ["claude-fable-5-1", "adaptive", true],
      ["my-proxy-alias", "adaptive", true]
    ] as const
    for (const [model, thinking, structured] of cases) {
      expect([model, AnthropicModels.thinking(model), AnthropicModels.structuredOutput(model)]).toStrictEqual([
        model,
        thinking,
        structured
      ])
    }
  })
})
