import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Ref, Schema, Stream } from "effect"
import {
  AiError as EffectAiError,
  LanguageModel as AiLanguageModel,
  Response,
  Tool as AiTool,
  Toolkit as AiToolkit
} from "effect/ai"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as Approval from "../src/Approval.ts"
import * as EffectAi from "../src/effect-ai/EffectAi.ts"
import type * as Item from "../src/Item.ts"
import * as LanguageModel from "../src/LanguageModel.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { add } from "./fixtures.ts"

const call = (name: string, args: string, callId = "c1"): Item.FunctionCall => ({
  type: "function_call",
  id: `fc_${callId}`,
  status: "completed",
  call_id: callId,
  name,
  arguments: args
})

const errorOf = (result: Toolkit.Result): unknown => (JSON.parse(result.output.output) as { error: unknown }).error

const Schedule = AiTool.make("Schedule", {
  description: "Schedules a meeting",
  parameters: Schema.Struct({ title: Schema.String, at: Schema.Date }),
  success: Schema.Struct({ id: Schema.String, at: Schema.Date })
})
const Refuse = AiTool.make("Refuse", { description: "Always fails", failure: Schema.String })
const Refund = AiTool.make("Refund", {
  description: "Refunds an order",
  parameters: Schema.Struct({ order: Schema.String }),
  success: Schema.String,
  failure: Schema.String,
  failureMode: "return",
  needsApproval: (params) => params.order.startsWith("big")
})
const Search = AiTool.dynamic("Search", {
  description: "Searches",
  parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] }
})
const Progressing = AiTool.make("Progressing", { description: "Reports progress", success: Schema.Finite })
const WebSearch = AiTool.providerDefined({
  id: "openai.web_search",
  customName: "WebSearch",
  providerName: "web_search"
})()

const Effects = AiToolkit.make(Schedule, Refuse, Refund, Search, Progressing, WebSearch)

const handled = Effect.gen(function*() {
  const seen = yield* Ref.make<ReadonlyArray<unknown>>([])
  const layer = Effects.toLayer({
    Schedule: ({ at, title }) =>
      Effect.as(Ref.update(seen, (all) => [...all, at]), { id: `${title}-1`, at: new Date(at.getTime() + 60_000) }),
    Refuse: () => Effect.fail("never"),
    Refund: ({ order }) => order === "lost" ? Effect.fail("no such order") : Effect.succeed(`refunded ${order}`),
    Search: (params) => Effect.succeed({ found: params }),
    Progressing: (_, context) => Effect.andThen(context.preliminary(0.5), Effect.succeed(1))
  })
  const toolkit = yield* Effects.pipe(Effect.provide(layer))
  return { toolkit: EffectAi.fromEffectAiToolkit(toolkit), seen }
})

describe("EffectAi.fromEffectAiToolkit", () => {
  it.effect("runs effect/ai tools as agentloop tools, decoding arguments with their Schema", () =>
    Effect.gen(function*() {
      const { seen, toolkit } = yield* handled
      expect(toolkit.tools.map((tool) => tool.name)).toEqual(["Schedule", "Refuse", "Refund", "Search", "Progressing"])
      expect(toolkit.byName.get("Schedule")!.parameters).toEqual(AiTool.getJsonSchema(Schedule))
      const [result] = yield* Toolkit.executeAllSafe(toolkit, [
        call("Schedule", JSON.stringify({ title: "standup", at: "2026-01-01T09:00:00.000Z" }))
      ])
      expect(result!.outcome).toBe("success")
      expect(JSON.parse(result!.output.output)).toEqual({ id: "standup-1", at: "2026-01-01T09:01:00.000Z" })
      // The handler got a Date, as its Schema says.
      expect(yield* Ref.get(seen)).toEqual([new Date("2026-01-01T09:00:00.000Z")])
    }))

  it.effect("bad arguments are a mistake before the handler runs", () =>
    Effect.gen(function*() {
      const { seen, toolkit } = yield* handled
      const [result] = yield* Toolkit.executeAllSafe(toolkit, [call("Schedule", JSON.stringify({ title: 1 }))])
      expect(result!.outcome).toBe("invalid_arguments")
      expect(yield* Ref.get(seen)).toEqual([])
    }))

  it.effect("a failure is a mistake the model reads, whatever the failure mode", () =>
    Effect.gen(function*() {
      const { toolkit } = yield* handled
      const [refused, lost] = yield* Toolkit.executeAllSafe(toolkit, [
        call("Refuse", "{}", "c1"),
        call("Refund", JSON.stringify({ order: "lost" }), "c2")
      ])
      expect(refused!.outcome).toBe("failure")
      expect(errorOf(refused!)).toContain("never")
      expect(lost!.outcome).toBe("failure")
      expect(errorOf(lost!)).toContain("no such order")
    }))

  it.effect("keeps approval, raw JSON Schemas and preliminary results", () =>
    Effect.gen(function*() {
      const { toolkit } = yield* handled
      const progress: Array<unknown> = []
      const [big, small, search, progressing] = yield* Toolkit.executeAllSafe(toolkit, [
        call("Refund", JSON.stringify({ order: "big-1" }), "c1"),
        call("Refund", JSON.stringify({ order: "small-1" }), "c2"),
        call("Search", JSON.stringify({ q: "effect" }), "c3"),
        call("Progressing", "{}", "c4")
      ], { onProgress: (event) => Effect.sync(() => progress.push(event.value)) })
      expect(big!.outcome).toBe("denied")
      expect(small!.output.output).toBe(JSON.stringify("refunded small-1"))
      expect(toolkit.byName.get("Search")!.parameters).toEqual(Search.jsonSchema)
      expect(JSON.parse(search!.output.output)).toEqual({ found: { q: "effect" } })
      expect(progressing!.output.output).toBe("1")
      expect(progress).toEqual([0.5])
    }))
})

const needsApproval = Tool.make({
  name: "wipe",
  description: "Wipes the disk",
  input: Schema.Struct({}),
  output: Schema.String,
  needsApproval: true,
  execute: () => Effect.succeed("wiped")
})

describe("EffectAi.toEffectAiToolkit", () => {
  it.effect("runs agentloop tools through executeAllSafe under effect/ai's handle", () =>
    Effect.gen(function*() {
      const toolkit = yield* EffectAi.toEffectAiToolkit(Toolkit.make(add, needsApproval))
      expect(AiTool.getJsonSchema(toolkit.tools.add!)).toEqual(add.parameters)
      const results = (name: string, params: unknown) =>
        toolkit.handle(name, params).pipe(Stream.unwrap, Stream.runCollect)
      const [sum] = yield* results("add", { a: 2, b: 3 })
      expect(sum).toMatchObject({ isFailure: false, result: 5 })
      const [bad] = yield* results("add", { a: "two" })
      expect(bad!.isFailure).toBe(true)
      expect(JSON.stringify(bad!.result)).toContain(`do not match its parameters`)
      const [denied] = yield* results("wipe", {})
      expect(denied!.isFailure).toBe(true)
      expect(JSON.stringify(denied!.result)).toContain("requires approval")
      const [approved] = yield* results("wipe", {}).pipe(Effect.provide(Approval.allowAll))
      expect(approved).toMatchObject({ isFailure: false, result: "wiped" })
    }))

  it.effect("effect/ai's generateText on an agentloop model resolves agentloop tools", () =>
    Effect.gen(function*() {
      const toolkit = yield* EffectAi.toEffectAiToolkit(Toolkit.make(add))
      const response = yield* AiLanguageModel.generateText({ prompt: "What is 2 + 3?", toolkit })
      expect(response.toolResults.map((part) => [part.name, part.result])).toEqual([["add", 5]])
      const [request] = yield* (yield* MockLanguageModel.MockLanguageModel).requests
      expect(request!.options.tools?.map((tool) => tool.parameters)).toEqual([add.parameters])
    }).pipe(
      Effect.provide(EffectAi.toEffectAiLanguageModel),
      Effect.provide(
        MockLanguageModel.layer([MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 } }])])
      )
    ))
})

describe("EffectAi.toEffectAiLanguageModel", () => {
  const onMock = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
    EffectAi.toEffectAiLanguageModel.pipe(Layer.provideMerge(MockLanguageModel.layer(script)))

  it.effect("streams text as effect/ai parts, then the metadata and the finish with the usage", () =>
    Effect.gen(function*() {
      const parts = yield* AiLanguageModel.streamText({ prompt: "hi" }).pipe(Stream.runCollect)
      const types = parts.map((part) => part.type)
      expect(types.slice(0, 2)).toEqual(["text-start", "text-delta"])
      expect(types.slice(-3)).toEqual(["text-end", "response-metadata", "finish"])
      const text = parts.flatMap((part) => part.type === "text-delta" ? [part.delta] : []).join("")
      expect(text).toBe("Hello there, friend")
      const finish = parts.at(-1)
      expect(finish?.type === "finish" && [finish.reason, finish.usage.inputTokens.total]).toEqual(["stop", 12])
    }).pipe(
      Effect.provide(
        EffectAi.toEffectAiLanguageModel.pipe(
          Layer.provide(
            MockLanguageModel.layer([
              MockLanguageModel.textTurn("Hello there, friend", { usage: TokenUsage.make(12, 4) })
            ])
          )
        )
      )
    ))

  it.effect("sends the prompt as history and instructions", () =>
    Effect.gen(function*() {
      const model = yield* AiLanguageModel.LanguageModel
      yield* model.generateText({
        prompt: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "Add 1 and 2" },
          { role: "assistant", content: [{ type: "tool-call", id: "t1", name: "add", params: { a: 1, b: 2 } }] },
          { role: "tool", content: [{ type: "tool-result", id: "t1", name: "add", isFailure: false, result: 3 }] }
        ]
      })
      const [request] = yield* (yield* MockLanguageModel.MockLanguageModel).requests
      expect(request!.options.instructions).toBe("Be brief.")
      expect(request!.history.map((item) => item.type)).toEqual(["message", "function_call", "function_call_output"])
      expect(request!.history[1]).toMatchObject({ call_id: "t1", name: "add", arguments: `{"a":1,"b":2}` })
      expect(request!.history[2]).toMatchObject({ call_id: "t1", output: "3", status: "completed" })
    }).pipe(Effect.provide(onMock([MockLanguageModel.textTurn("3")]))))

  it.effect("a file in the prompt is refused, and errors keep their kind", () =>
    Effect.gen(function*() {
      const file = yield* AiLanguageModel.generateText({
        prompt: [{ role: "user", content: [{ type: "file", mediaType: "image/png", data: new Uint8Array([1]) }] }]
      }).pipe(Effect.flip)
      expect(file.reason._tag).toBe("InvalidRequestError")
      const limited = yield* AiLanguageModel.generateText({ prompt: "hi" }).pipe(Effect.flip)
      expect(limited.reason._tag).toBe("RateLimitError")
      expect(limited.reason._tag === "RateLimitError" && limited.reason.retryAfter).toEqual(Duration.seconds(3))
    }).pipe(
      Effect.provide(
        EffectAi.toEffectAiLanguageModel.pipe(
          Layer.provide(
            MockLanguageModel.layer([
              new AiError.RateLimited({ provider: "mock", message: "slow down", retryAfter: Duration.seconds(3) })
            ])
          )
        )
      )
    ))
})

/** An effect/ai model answering each request with the next list of parts, and recording the prompts. */
const scripted = (turns: ReadonlyArray<ReadonlyArray<Response.StreamPartEncoded> | EffectAiError.AiError>) =>
  Effect.gen(function*() {
    const prompts = yield* Ref.make<ReadonlyArray<unknown>>([])
    let index = 0
    const model = yield* AiLanguageModel.make({
      generateText: () => Effect.succeed([]),
      streamText: (options) =>
        Stream.unwrap(Effect.gen(function*() {
          yield* Ref.update(prompts, (all) => [...all, options.prompt.content])
          const turn = turns[index++]
          if (turn === undefined) return Stream.die(new Error("no more scripted turns"))
          return EffectAiError.isAiError(turn) ? Stream.fail(turn) : Stream.fromIterable(turn)
        }))
    })
    return { model, prompts }
  })

const finish = (reason: Response.FinishReason): Response.StreamPartEncoded => ({
  type: "finish",
  reason,
  usage: { inputTokens: { total: 20, cacheRead: 5 }, outputTokens: { total: 7 } }
})

describe("EffectAi.fromEffectAiLanguageModel", () => {
  const agentOn = (model: AiLanguageModel.LanguageModel) =>
    AgentLoop.layer.pipe(
      Layer.provide(EffectAi.fromEffectAiLanguageModel({ provider: "test-ai" })),
      Layer.provide(Layer.succeed(AiLanguageModel.LanguageModel, model))
    )

  it.effect("runs an agentloop agent, with its tools, on an effect/ai model", () =>
    Effect.gen(function*() {
      const { model, prompts } = yield* scripted([
        [
          { type: "response-metadata", id: "resp_1", modelId: "effect-model" },
          { type: "tool-params-start", id: "call_1", name: "add" },
          { type: "tool-params-delta", id: "call_1", delta: `{"a":2,` },
          { type: "tool-params-delta", id: "call_1", delta: `"b":3}` },
          { type: "tool-params-end", id: "call_1" },
          { type: "tool-call", id: "call_1", name: "add", params: { a: 2, b: 3 } },
          finish("tool-calls")
        ],
        [{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "It is 5" }, {
          type: "text-end",
          id: "t"
        }, finish("stop")]
      ])
      const result = yield* Effect.flatMap(AgentLoop.AgentLoop, (agent) =>
        agent.run({ input: "2 + 3?", instructions: "Use tools.", toolkit: Toolkit.make(add) })).pipe(
          Effect.provide(agentOn(model))
        )
      expect(result._tag === "Stopped" && result.output).toBe("It is 5")
      expect(result.termination.accounting.usage).toEqual(TokenUsage.make(40, 14, { cachedInput: 10 }))
      const second = (yield* Ref.get(prompts))[1] as ReadonlyArray<{ readonly role: string; readonly content: unknown }>
      expect(second.map((message) =>
        message.role
      )).toEqual(["system", "user", "assistant", "tool"])
      expect(second[3]!.content).toMatchObject([{ type: "tool-result", id: "call_1", name: "add", result: 5 }])
    }))

  it.effect("maps errors to agentloop's, and a stream without a finish to IncompleteTurn", () =>
    Effect.gen(function*() {
      const { model } = yield* scripted([
        EffectAiError.make({
          module: "x",
          method: "y",
          reason: new EffectAiError.AuthenticationError({ kind: "InvalidKey" })
        }),
        [{ type: "text-delta", id: "t", delta: "cut" }]
      ])
      const layer = EffectAi.fromEffectAiLanguageModel({ provider: "test-ai" }).pipe(
        Layer.provide(Layer.succeed(AiLanguageModel.LanguageModel, model))
      )
      const turn = Effect.flatMap(
        LanguageModel.LanguageModel,
        (lm) => lm.streamTurn([], {}).pipe(Stream.runCollect, Effect.flip)
      ).pipe(Effect.provide(layer))
      const auth = yield* turn
      expect(auth._tag).toBe("AuthFailed")
      expect(auth._tag === "AuthFailed" && auth.provider).toBe("test-ai")
      expect((yield* turn)._tag).toBe("IncompleteTurn")
      const output = yield* Effect.flatMap(
        LanguageModel.LanguageModel,
        (lm) =>
          lm.streamTurn([], { output: { name: "x", schema: { type: "object" } } }).pipe(Stream.runCollect, Effect.flip)
      ).pipe(
        Effect.provide(layer)
      )
      expect(output._tag).toBe("InvalidRequest")
    }))
})
