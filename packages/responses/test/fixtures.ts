/**
 * Builders of Responses API event streams in the documented wire format
 * (every event with `type` and `sequence_number`, each sent as
 * `event: <type>` + `data: <json>`), for the loopback server.
 */
import { type Item, type LanguageModel, ProviderRetry, type Turn, type TurnDelta } from "@agentloop/core"
import { type ProviderHarness, ProviderServer } from "@agentloop/testing"
import { expect } from "@effect/vitest"
import { Effect, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { Responses } from "../src/index.ts"

export const model = "gpt-5-mini-2025-08-07"

export interface UsageWire {
  readonly input_tokens: number
  readonly input_tokens_details: { readonly cached_tokens: number }
  readonly output_tokens: number
  readonly output_tokens_details: { readonly reasoning_tokens: number }
  readonly total_tokens: number
}

export const usage = (input: number, output: number, cached = 0, reasoning = 0): UsageWire => ({
  input_tokens: input,
  input_tokens_details: { cached_tokens: cached },
  output_tokens: output,
  output_tokens_details: { reasoning_tokens: reasoning },
  total_tokens: input + output
})

const responseObject = (id: string, status: string, extra: Record<string, unknown> = {}) => ({
  id,
  object: "response",
  created_at: 1750705330,
  status,
  background: false,
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: null,
  model,
  output: [],
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: null, summary: null },
  store: true,
  temperature: 1,
  text: { format: { type: "text" } },
  tool_choice: "auto",
  tools: [],
  top_p: 1,
  truncation: "disabled",
  usage: null,
  metadata: {},
  ...extra
})

/** A script of events; `frames` is what the server sends. */
export class Script {
  readonly frames: Array<string> = []
  private sequence = 0
  readonly id: string

  constructor(id = "resp_68af0001") {
    this.id = id
  }

  event(type: string, fields: Record<string, unknown>): this {
    this.frames.push(ProviderServer.sseEvent({ type, sequence_number: this.sequence++, ...fields }, type))
    return this
  }

  created(): this {
    return this.event("response.created", { response: responseObject(this.id, "in_progress") })
      .event("response.in_progress", { response: responseObject(this.id, "in_progress") })
  }

  messageStart(itemId: string, outputIndex: number, part: "output_text" | "refusal" = "output_text"): this {
    return this.event("response.output_item.added", {
      output_index: outputIndex,
      item: { id: itemId, type: "message", status: "in_progress", role: "assistant", content: [] }
    }).event("response.content_part.added", {
      item_id: itemId,
      output_index: outputIndex,
      content_index: 0,
      part: part === "output_text"
        ? { type: "output_text", text: "", annotations: [] }
        : { type: "refusal", refusal: "" }
    })
  }

  textDeltas(itemId: string, outputIndex: number, deltas: ReadonlyArray<string>): this {
    for (const delta of deltas) {
      this.event("response.output_text.delta", {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        delta,
        logprobs: []
      })
    }
    return this
  }

  messageDone(itemId: string, outputIndex: number, text: string, status = "completed"): this {
    const part = { type: "output_text", text, annotations: [] }
    return this.event("response.output_text.done", {
      item_id: itemId,
      output_index: outputIndex,
      content_index: 0,
      text,
      logprobs: []
    }).event("response.content_part.done", { item_id: itemId, output_index: outputIndex, content_index: 0, part })
      .event("response.output_item.done", {
        output_index: outputIndex,
        item: { id: itemId, type: "message", status, role: "assistant", content: [part] }
      })
  }

  /** A whole assistant message written in `deltas`. */
  message(itemId: string, outputIndex: number, deltas: ReadonlyArray<string>): this {
    return this.messageStart(itemId, outputIndex).textDeltas(itemId, outputIndex, deltas)
      .messageDone(itemId, outputIndex, deltas.join(""))
  }

  refusal(itemId: string, outputIndex: number, deltas: ReadonlyArray<string>): this {
    this.messageStart(itemId, outputIndex, "refusal")
    for (const delta of deltas) {
      this.event("response.refusal.delta", { item_id: itemId, output_index: outputIndex, content_index: 0, delta })
    }
    const refusal = deltas.join("")
    const part = { type: "refusal", refusal }
    return this.event("response.refusal.done", {
      item_id: itemId,
      output_index: outputIndex,
      content_index: 0,
      refusal
    })
      .event("response.content_part.done", { item_id: itemId, output_index: outputIndex, content_index: 0, part })
      .event("response.output_item.done", {
        output_index: outputIndex,
        item: { id: itemId, type: "message", status: "completed", role: "assistant", content: [part] }
      })
  }

  callStart(itemId: string, outputIndex: number, callId: string, name: string): this {
    return this.event("response.output_item.added", {
      output_index: outputIndex,
      item: { id: itemId, type: "function_call", status: "in_progress", arguments: "", call_id: callId, name }
    })
  }

  argumentsDelta(itemId: string, outputIndex: number, delta: string): this {
    return this.event("response.function_call_arguments.delta", { item_id: itemId, output_index: outputIndex, delta })
  }

  callDone(itemId: string, outputIndex: number, callId: string, name: string, args: string): this {
    return this.event("response.function_call_arguments.done", {
      item_id: itemId,
      output_index: outputIndex,
      arguments: args
    }).event("response.output_item.done", {
      output_index: outputIndex,
      item: { id: itemId, type: "function_call", status: "completed", arguments: args, call_id: callId, name }
    })
  }

  reasoning(
    itemId: string,
    outputIndex: number,
    summaries: ReadonlyArray<ReadonlyArray<string>>,
    encrypted?: string
  ): this {
    this.event("response.output_item.added", {
      output_index: outputIndex,
      item: { id: itemId, type: "reasoning", summary: [] }
    })
    summaries.forEach((deltas, summaryIndex) => {
      const at = { item_id: itemId, output_index: outputIndex, summary_index: summaryIndex }
      this.event("response.reasoning_summary_part.added", { ...at, part: { type: "summary_text", text: "" } })
      for (const delta of deltas) this.event("response.reasoning_summary_text.delta", { ...at, delta })
      const text = deltas.join("")
      this.event("response.reasoning_summary_text.done", { ...at, text })
      this.event("response.reasoning_summary_part.done", { ...at, part: { type: "summary_text", text } })
    })
    return this.event("response.output_item.done", {
      output_index: outputIndex,
      item: {
        id: itemId,
        type: "reasoning",
        summary: summaries.map((deltas) => ({ type: "summary_text", text: deltas.join("") })),
        ...(encrypted === undefined ? {} : { encrypted_content: encrypted })
      }
    })
  }

  /** The terminal event, listing `output` as the response's items (none by default). */
  completed(used: UsageWire, output: ReadonlyArray<Record<string, unknown>> = []): this {
    return this.event("response.completed", {
      response: responseObject(this.id, "completed", { usage: used, output })
    })
  }

  incomplete(reason: string, used: UsageWire): this {
    return this.event("response.incomplete", {
      response: responseObject(this.id, "incomplete", { incomplete_details: { reason }, usage: used })
    })
  }

  failed(code: string | null, message: string): this {
    return this.event("response.failed", {
      response: responseObject(this.id, "failed", { error: { code, message } })
    })
  }

  error(code: string | null, message: string): this {
    return this.event("error", { code, message, param: null })
  }
}

/** The Responses wire format for the provider conformance suite. */
export const conformance: ProviderHarness.Fixture = {
  provider: "openai",
  credentialHeader: "authorization",
  layer: Responses.layerWithoutHttpClient,
  frames: (turn, options) => {
    const script = new Script(turn.id).created()
    let index = 0
    if (turn.reasoning !== undefined) script.reasoning("rs_conformance", index++, [turn.reasoning])
    if (turn.text !== undefined) script.message("msg_conformance", index++, turn.text)
    for (const call of turn.calls ?? []) {
      const at = index++
      const half = Math.ceil(call.arguments.length / 2)
      script.callStart(`fc_${call.id}`, at, call.id, call.name)
        .argumentsDelta(`fc_${call.id}`, at, call.arguments.slice(0, half))
        .argumentsDelta(`fc_${call.id}`, at, call.arguments.slice(half))
        .callDone(`fc_${call.id}`, at, call.id, call.name, call.arguments)
    }
    if (options?.complete !== false) {
      script.completed(usage(turn.usage.input, turn.usage.output, turn.usage.cachedInput, turn.usage.reasoning))
    }
    return script.frames
  },
  serverError: (message) =>
    new Script().created().event("error", {
      error: { type: "server_error", code: "server_error", message, param: null }
    })
      .frames
}

export const canary = "sk-canary-5f1e9c2a-DO-NOT-LEAK"
export const TestLayer = Layer.mergeAll(ProviderServer.layer, FetchHttpClient.layer)
export const hello: ReadonlyArray<Item.Item> = [{
  type: "message",
  id: "user",
  status: "completed",
  role: "user",
  content: [{ type: "input_text", text: "Hello" }]
}]

/** The provider pointed at the loopback server; no retries unless a test asks. */
export const provider = (config?: Partial<Responses.Config>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    return yield* Responses.make({
      apiKey: Redacted.make(canary),
      baseUrl: server.url,
      retryPolicy: ProviderRetry.none,
      ...config
    })
  })

export const run = (
  replies: ReadonlyArray<ProviderServer.Reply>,
  options: LanguageModel.TurnOptions = {},
  config?: Partial<Responses.Config>,
  history: ReadonlyArray<Item.Item> = hello
) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(...replies)
    const model = yield* provider(config)
    return yield* Stream.runCollect(model.streamTurn(history, options))
  })

/** Runs a turn that must fail; returns the error and the deltas that came before it. */
export const runFailing = (replies: ReadonlyArray<ProviderServer.Reply>, config?: Partial<Responses.Config>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(...replies)
    const model = yield* provider(config)
    const deltas: Array<TurnDelta.TurnDelta> = []
    const error = yield* model.streamTurn(hello, {}).pipe(
      Stream.runForEach((delta) => Effect.sync(() => deltas.push(delta))),
      Effect.flip
    )
    return { error, deltas }
  })

export const completeTurn = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): Turn.Turn => {
  const last = deltas.at(-1)
  if (last?.type !== "turn_complete") throw new Error(`the stream did not end with turn_complete: ${last?.type}`)
  expect(deltas.filter((d) => d.type === "turn_complete")).toHaveLength(1)
  return last.turn
}

export const textOf = (
  deltas: ReadonlyArray<TurnDelta.TurnDelta>,
  type: "text_delta" | "refusal_delta" | "reasoning_delta"
) => deltas.flatMap((d) => d.type === type ? [d.delta] : []).join("")
