import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, Ref, Schema, Stream } from "effect"
import {
  AiError as EffectAiError,
  IdGenerator,
  LanguageModel as AiLanguageModel,
  Prompt,
  Response,
  Tool as AiTool,
  Toolkit as AiToolkit
} from "effect/ai"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as Approval from "../src/Approval.ts"
import * as EffectAi from "../src/effect-ai/EffectAi.ts"
import * as Item from "../src/Item.ts"
import * as LanguageModel from "../src/LanguageModel.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import type * as Turn from "../src/Turn.ts"
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

  const cited = (url: string): MockLanguageModel.Reply => ({
    ...MockLanguageModel.textTurn("Cited."),
    items: [{
      ...Item.assistantMessage("Cited."),
      content: [{
        type: "output_text",
        text: "Cited.",
        annotations: [
          { type: "url_citation", url, title: "Page" },
          { type: "file_citation", filename: "atlas.pdf", media_type: "application/pdf" },
          { type: "url_citation", url, title: "Page", start_index: 0, end_index: 5 }
        ]
      }]
    }]
  })
  const sourcesOf = (parts: ReadonlyArray<Response.StreamPart<{}>>) =>
    parts.flatMap((part) =>
      part.type === "source"
        ? [part.sourceType === "url" ? [part.id, part.url.href, part.title] : [part.id, part.mediaType, part.title]]
        : []
    )

  it.effect("streams each cited source once, as a source part whose id names the turn", () =>
    Effect.gen(function*() {
      const parts = yield* AiLanguageModel.streamText({ prompt: "hi" }).pipe(Stream.runCollect)
      expect(sourcesOf(parts)).toEqual([
        ["source_turn1_0", "https://example.com/paris", "Page"],
        ["source_turn1_1", "application/pdf", "atlas.pdf"]
      ])
    }).pipe(
      Effect.provide(onMock([cited("https://example.com/paris")])),
      Effect.provideService(IdGenerator.IdGenerator, { generateId: () => Effect.succeed("turn1") })
    ))

  it.effect("the sources of two turns have different ids", () =>
    Effect.gen(function*() {
      const ids = yield* Effect.forEach([1, 2], () =>
        AiLanguageModel.streamText({ prompt: "hi" }).pipe(
          Stream.runCollect,
          Effect.map((parts) => sourcesOf(parts).map(([id]) => id))
        ))
      expect(ids.flat()).toHaveLength(4)
      expect(new Set(ids.flat()).size).toBe(4)
    }).pipe(Effect.provide(onMock([cited("https://example.com/paris"), cited("https://example.com/rome")]))))

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

  it.effect("errors keep their kind", () =>
    Effect.gen(function*() {
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

describe("EffectAi: images and files", () => {
  const png = new Uint8Array([137, 80, 78, 71])
  const pngData = "data:image/png;base64,iVBORw=="
  const pdf = new TextEncoder().encode("%PDF-1.7")
  const pdfData = `data:application/pdf;base64,${Buffer.from(pdf).toString("base64")}`

  const onMock = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
    EffectAi.toEffectAiLanguageModel.pipe(Layer.provideMerge(MockLanguageModel.layer(script)))

  const requests = Effect.flatMap(MockLanguageModel.MockLanguageModel, (mock) => mock.requests)

  it.effect("a prompt's file parts are images and files of the history: user, assistant and tool results", () =>
    Effect.gen(function*() {
      yield* AiLanguageModel.generateText({
        prompt: [
          {
            role: "user",
            content: [
              { type: "text", text: "Compare" },
              { type: "file", mediaType: "image/png", data: png, options: { openai: { imageDetail: "high" } } },
              { type: "file", mediaType: "image/*", data: new URL("https://example.com/cat") },
              {
                type: "file",
                mediaType: "application/pdf",
                fileName: "report.pdf",
                data: Buffer.from(pdf).toString("base64")
              },
              { type: "file", mediaType: "application/pdf", data: new URL("https://example.com/spec.pdf") },
              { type: "file", mediaType: "image/jpeg", data: "data:image/jpeg;base64,/9j/" }
            ]
          },
          {
            role: "assistant",
            content: [
              { type: "file", mediaType: "image/png", data: png },
              { type: "tool-call", id: "t1", name: "shoot", params: {} },
              { type: "tool-call", id: "t2", name: "shoot", params: {} }
            ]
          },
          {
            role: "tool",
            content: [
              {
                type: "tool-result",
                id: "t1",
                name: "shoot",
                isFailure: false,
                result: { ok: true },
                modelOutput: [{ type: "text", text: "Shot taken:" }, {
                  type: "file",
                  mediaType: "image/png",
                  data: png
                }]
              },
              {
                type: "tool-result",
                id: "t2",
                name: "shoot",
                isFailure: false,
                result: { ok: true },
                modelOutput: [{ type: "file", mediaType: "application/pdf", fileName: "page.pdf", data: pdf }]
              }
            ]
          }
        ]
      })
      const [request] = yield* requests
      expect(request!.history).toStrictEqual([
        Item.userMessage([
          { type: "input_text", text: "Compare" },
          { type: "input_image", image_url: pngData, detail: "high" },
          { type: "input_image", image_url: "https://example.com/cat" },
          { type: "input_file", file_data: pdfData, filename: "report.pdf" },
          { type: "input_file", file_url: "https://example.com/spec.pdf" },
          { type: "input_image", image_url: "data:image/jpeg;base64,/9j/" }
        ], "msg_0"),
        { ...Item.assistantMessage("", "msg_1_0"), content: [{ type: "input_image", image_url: pngData }] },
        expect.objectContaining({ type: "function_call", call_id: "t1" }),
        expect.objectContaining({ type: "function_call", call_id: "t2" }),
        {
          type: "function_call_output",
          id: "fco_2_0",
          status: "completed",
          call_id: "t1",
          // The model is shown modelOutput in place of the result: its text first, the rest attached.
          output: "Shot taken:",
          content: [{ type: "input_image", image_url: pngData }]
        },
        {
          type: "function_call_output",
          id: "fco_2_1",
          status: "completed",
          call_id: "t2",
          output: `{"ok":true}`,
          content: [{ type: "input_file", file_data: pdfData, filename: "page.pdf" }]
        }
      ])
    }).pipe(Effect.provide(onMock([MockLanguageModel.textTurn("Seen")]))))

  it.effect("a file part that cannot be carried fails the request typed, before the model is asked", () =>
    Effect.gen(function*() {
      const failures: Array<string> = []
      for (
        const content of [
          [{ type: "file" as const, mediaType: "image/png", data: "not base64!" }],
          [{ type: "file" as const, mediaType: "image/*", data: png }],
          [{ type: "file" as const, mediaType: "image/png", data: "data:image/png;base64,***" }]
        ]
      ) {
        const error = yield* AiLanguageModel.generateText({ prompt: [{ role: "user", content }] }).pipe(Effect.flip)
        expect(error.reason._tag).toBe("InvalidRequestError")
        failures.push(error.message)
      }
      expect(failures[0]).toContain(
        "prompt[0] (user) content[0] (file image/png): its data is a string that is neither base64 nor a data: URL"
      )
      expect(failures[1]).toContain("inline bytes need their media type, not image/*")
      expect(failures[2]).toContain("its data URL's content is not base64")
      expect(yield* requests).toHaveLength(0)
    }).pipe(Effect.provide(onMock([]))))

  /** A turn whose answer is an assistant message of `content`. */
  const answer = (content: ReadonlyArray<Item.ContentPart>): Turn.Turn => ({
    items: [{ ...Item.assistantMessage("", "msg_a"), content }],
    usage: TokenUsage.make(3, 2),
    stopReason: "stop"
  })
  const drawn = answer([{ type: "output_text", text: "Here:" }, Item.imageFromBytes(png, "image/png")])

  it.effect("an answer's images and files are effect/ai file parts; one at a URL cannot be, and fails typed", () =>
    Effect.gen(function*() {
      const model = yield* AiLanguageModel.LanguageModel
      const whole = yield* model.generateText({ prompt: "Draw" })
      expect(whole.content.flatMap((part) =>
        part.type === "file"
          ? [[part.type, part.mediaType, Array.from(part.data)]]
          : part.type === "text"
          ? [[part.type, part.text]]
          : []
      )).toEqual([["text", "Here:"], ["file", "image/png", Array.from(png)]])
      const streamed = yield* model.streamText({ prompt: "Draw" }).pipe(Stream.runCollect)
      expect(streamed.map((part) => part.type)).toEqual([
        "text-start",
        "text-delta",
        "text-end",
        "file",
        "response-metadata",
        "finish"
      ])
      const atUrl = yield* model.generateText({ prompt: "Draw" }).pipe(Effect.flip)
      expect(atUrl.reason._tag).toBe("InvalidRequestError")
      expect(atUrl.message).toContain(
        "turn.items[0] (message \"msg_a\") content[0] (input_image): an effect/ai response file part holds bytes, not a URL"
      )
      const inReasoning = yield* model.generateText({ prompt: "Draw" }).pipe(Effect.flip)
      expect(inReasoning.message).toContain(
        "turn.items[0] (reasoning \"rs\") content[0] (input_image): an effect/ai reasoning part is text only"
      )
    }).pipe(Effect.provide(onMock([drawn, drawn, answer([Item.imageUrl("https://example.com/drawn.png")]), {
      items: [{ type: "reasoning", id: "rs", status: "completed", content: [Item.imageFromBytes(png, "image/png")] }],
      usage: TokenUsage.make(3, 2),
      stopReason: "stop"
    }]))))

  const streamOf = (layer: Layer.Layer<LanguageModel.LanguageModel>, history: ReadonlyArray<Item.Item>) =>
    Effect.flatMap(LanguageModel.LanguageModel, (lm) => lm.streamTurn(history, {}).pipe(Stream.runCollect)).pipe(
      Effect.provide(layer)
    )

  const on = (model: AiLanguageModel.LanguageModel) =>
    EffectAi.fromEffectAiLanguageModel({ provider: "test-ai" }).pipe(
      Layer.provide(Layer.succeed(AiLanguageModel.LanguageModel, model))
    )

  it.effect("a history's images and files reach an effect/ai model as file parts, a tool's as modelOutput", () =>
    Effect.gen(function*() {
      const { model, prompts } = yield* scripted([[
        { type: "text-delta", id: "t", delta: "A cat, and " },
        { type: "file", mediaType: "image/png", data: "iVBORw==" },
        { type: "file", mediaType: "application/pdf", data: Buffer.from(pdf).toString("base64") },
        finish("stop")
      ]])
      const deltas = yield* streamOf(on(model), [
        Item.userMessage([
          { type: "input_text", text: "What is " },
          { type: "input_text", text: "this?" },
          Item.imageFromBytes(png, "image/png", { detail: "low" }),
          Item.imageUrl("https://example.com/cat"),
          Item.fileFromBytes(pdf, "application/pdf", { filename: "report.pdf" }),
          Item.fileUrl("https://example.com/spec.pdf")
        ]),
        { ...Item.assistantMessage("", "a"), content: [Item.imageFromBytes(png, "image/png")] },
        call("shoot", "{}"),
        {
          type: "function_call_output",
          id: "fo",
          status: "completed",
          call_id: "c1",
          output: `{"ok":true}`,
          content: [{ type: "input_text", text: "The page:" }, Item.imageFromBytes(png, "image/png")]
        }
      ])
      const [prompt] = (yield* Ref.get(prompts)) as ReadonlyArray<ReadonlyArray<Record<string, unknown>>>
      expect(prompt!.map((message) => message.role)).toEqual(["user", "assistant", "assistant", "tool"])
      expect(prompt![0]!.content).toMatchObject([
        { type: "text", text: "What is this?" },
        { type: "file", mediaType: "image/png", data: png, options: { openai: { imageDetail: "low" } } },
        { type: "file", mediaType: "image/*", data: new URL("https://example.com/cat") },
        { type: "file", mediaType: "application/pdf", fileName: "report.pdf", data: pdf },
        { type: "file", mediaType: "application/pdf", data: new URL("https://example.com/spec.pdf") }
      ])
      expect(prompt![1]!.content).toMatchObject([{ type: "file", mediaType: "image/png", data: png }])
      expect(prompt![3]!.content).toMatchObject([{
        type: "tool-result",
        id: "c1",
        result: { ok: true },
        modelOutput: [
          { type: "text", text: `{"ok":true}` },
          { type: "text", text: "The page:" },
          { type: "file", mediaType: "image/png", data: png }
        ]
      }])
      // The model's own files are the answer's, after its text.
      const last = deltas.at(-1)
      expect(last?.type === "turn_complete" && last.turn.items).toEqual([{
        ...Item.assistantMessage("", "msg_0"),
        content: [
          { type: "output_text", text: "A cat, and " },
          { type: "input_image", image_url: pngData },
          { type: "input_file", file_data: pdfData }
        ]
      }])
    }))

  it.effect("what an effect/ai prompt has no room for fails the turn typed, naming it, before the model is asked", () =>
    Effect.gen(function*() {
      const { model, prompts } = yield* scripted([])
      const cases: ReadonlyArray<readonly [Item.Item, string]> = [
        [
          { ...Item.userMessage([Item.imageFromBytes(png, "image/png")], "sys"), role: "system" },
          `history[0] (message "sys") content[0] (input_image): an effect/ai system message is text only`
        ],
        [
          { ...Item.userMessage([Item.fileUrl("https://example.com/a.pdf")], "dev"), role: "developer" },
          "an effect/ai developer message is text only"
        ],
        [
          {
            type: "reasoning",
            id: "rs",
            status: "completed",
            content: [{ type: "output_text", text: "look" }, Item.imageFromBytes(png, "image/png")]
          },
          `history[0] (reasoning "rs") content[1] (input_image): an effect/ai reasoning part is text only`
        ],
        [Item.userMessage([Item.imageUrl("data:image/png;base64,***")]), "its data URL's content is not base64"],
        [Item.userMessage([Item.imageUrl("nowhere")]), "its URL is neither an http(s) URL nor a data: URL"]
      ]
      for (const [item, message] of cases) {
        const error = yield* streamOf(on(model), [item]).pipe(Effect.flip)
        expect(error._tag).toBe("InvalidRequest")
        expect(error.message).toContain(message)
      }
      expect(yield* Ref.get(prompts)).toEqual([])
    }))

  it.effect("an effect/ai tool's modelOutput is the agentloop output's content; one that cannot be carried is a mistake", () =>
    Effect.gen(function*() {
      const Shoot = AiTool.make("Shoot", {
        description: "Takes a screenshot",
        parameters: Schema.Struct({ data: Schema.String }),
        success: Schema.Struct({ page: Schema.String, data: Schema.String }),
        toModelOutput: (result: { readonly page: string; readonly data: string }) => [
          Prompt.textPart({ text: `Page ${result.page}:` }),
          Prompt.filePart({ mediaType: "image/png", data: result.data })
        ]
      })
      const Shots = AiToolkit.make(Shoot)
      const handled = yield* Shots.pipe(
        Effect.provide(Shots.toLayer({ Shoot: ({ data }) => Effect.succeed({ page: "home", data }) }))
      )
      const toolkit = EffectAi.fromEffectAiToolkit(handled)
      const [shot, bad] = yield* Toolkit.executeAllSafe(toolkit, [
        call("Shoot", `{"data":"iVBORw=="}`, "s1"),
        call("Shoot", `{"data":"not base64!"}`, "s2")
      ])
      expect(shot!.outcome).toBe("success")
      expect(JSON.parse(shot!.output.output)).toEqual({ page: "home", data: "iVBORw==" })
      expect(shot!.output.content).toEqual([
        { type: "input_text", text: "Page home:" },
        { type: "input_image", image_url: pngData }
      ])
      expect(bad!.outcome).toBe("failure")
      expect(errorOf(bad!)).toContain(
        "Shoot's modelOutput[1] (file image/png): its data is a string that is neither base64 nor a data: URL"
      )
    }))

  it.effect("an agentloop tool's content is the effect/ai result's modelOutput; a tool without any has none", () =>
    Effect.gen(function*() {
      const shoot = Tool.make({
        name: "shoot",
        description: "Takes a screenshot",
        input: Schema.Struct({ url: Schema.String }),
        output: Schema.Struct({ ok: Schema.Boolean, image: Schema.String }),
        content: ({ image }) => [{ type: "input_text", text: "The page:" }, Item.imageUrl(image)],
        execute: ({ url }) => Effect.succeed({ ok: true, image: url })
      })
      const toolkit = yield* EffectAi.toEffectAiToolkit(Toolkit.make(add, shoot))
      const results = (name: string, params: unknown, id?: string) =>
        toolkit.handle(name, params, id).pipe(Stream.unwrap, Stream.runCollect)
      const [shot] = yield* results("shoot", { url: pngData }, "call_7")
      expect(shot).toMatchObject({ isFailure: false, result: { ok: true, image: pngData } })
      expect(shot!.modelOutput).toMatchObject([
        { type: "text", text: JSON.stringify({ ok: true, image: pngData }) },
        { type: "text", text: "The page:" },
        { type: "file", mediaType: "image/png", data: png }
      ])
      // Without a call id from effect/ai, one is made for the call.
      const [anonymous] = yield* results("shoot", { url: "https://example.com/a.webp" })
      expect(anonymous!.modelOutput).toMatchObject([{}, {}, {
        type: "file",
        mediaType: "image/webp",
        data: new URL("https://example.com/a.webp")
      }])
      const [sum] = yield* results("add", { a: 1, b: 2 })
      expect(sum).toMatchObject({ isFailure: false, result: 3 })
      expect(sum!.modelOutput).toBeUndefined()
      const [broken] = yield* results("shoot", { url: "data:image/png;base64,***" })
      expect(broken!.isFailure).toBe(true)
      expect(JSON.stringify(broken!.result)).toContain(
        `tool \\"shoot\\" output content[1] (input_image): its data URL's content is not base64`
      )
    }))
})
