/**
 * Turns the Server-Sent Events of a streaming Chat Completions request into
 * `TurnDelta`s, assembling the `Turn` on the way (a `ProviderStream.Decoder`),
 * for what servers really send as well as for what OpenAI documents.
 *
 * Each `data:` event is a chunk (see `ChatCompletionsChunk`); only the first
 * choice is read. `content` is `text_delta`s (an array `content` too: its
 * `text` parts, while its `thinking` and `reasoning` parts are reasoning);
 * `reasoning_content`, else `reasoning`, else the text of OpenRouter's
 * `reasoning_details`, is `reasoning_delta`s; `refusal` is `refusal_delta`s;
 * tool calls stream as `function_call_start`, argument deltas and, when the
 * turn completes, `function_call_done` (see `ChatCompletionsToolCalls`); a
 * call's `extra_content` is kept in a reasoning item before it (see
 * `ChatCompletionsExtraContent`). Cited sources (a delta's `annotations`,
 * Perplexity's `search_results` and `citations`) are `citation` deltas and the
 * annotations of the answer's text (see `ChatCompletionsCitations`). The
 * first non-empty `id` and `model` are the turn's (Azure's first chunk has
 * empty ones), the first `finish_reason` its stop (a second one is a
 * trailer), and the usage is merged from every chunk that reports one (see
 * `ChatCompletionsUsage`).
 *
 * The turn completes at `data: [DONE]`, or when the body ends after a
 * `finish_reason` (servers that send no `[DONE]`, or no blank line after it):
 * the usage chunk comes after the `finish_reason`, so the turn waits for it.
 * A body that ends before any `finish_reason` fails with `IncompleteTurn`. A
 * `[DONE]` with no `finish_reason` before it (Snowflake) completes a turn that
 * has an answer (text, reasoning, a refusal or calls), its stop reason read
 * from what it holds; a `[DONE]` with neither fails with `IncompleteTurn`: the
 * server said it was done without saying anything, which no caller should take
 * for an empty answer.
 *
 * An error fails the turn with its `AiError` (see `ChatCompletionsError`)
 * wherever a server puts it: an `error` field on a chunk (OpenAI; OpenRouter
 * sends it next to `choices`, even after a `finish_reason`), a chunk that is an
 * error object (`"object": "error"`, vLLM), an `event: error` (Groq), an
 * `error:` line (llama.cpp), or `finish_reason: "error"` with no error object.
 * SSE comments (`: OPENROUTER PROCESSING`) and empty `data:` lines are skipped.
 *
 * @since 0.2.0
 */
import { AiError, type Item, ProviderStream, type Turn, type TurnDelta } from "@agentloop/core"
import type { SseParser } from "@agentloop/core"
import * as Result from "effect/Result"
import * as ChatCompletionsChunk from "./ChatCompletionsChunk.ts"
import * as ChatCompletionsCitations from "./ChatCompletionsCitations.ts"
import * as ChatCompletionsError from "./ChatCompletionsError.ts"
import * as ChatCompletionsExtraContent from "./ChatCompletionsExtraContent.ts"
import * as ChatCompletionsReasoningDetails from "./ChatCompletionsReasoningDetails.ts"
import * as ChatCompletionsToolCalls from "./ChatCompletionsToolCalls.ts"
import * as ChatCompletionsUsage from "./ChatCompletionsUsage.ts"

const provider = ChatCompletionsError.provider

/**
 * Prefix of the ids of items this provider makes; `ChatCompletionsRequest`
 * sends back only reasoning items that carry it.
 *
 * @since 0.2.0
 * @category constants
 */
export const itemIdPrefix = "chatcmpl_item_"

const isDone = (data: string): boolean => data === "[DONE]" || (data.length < 16 && data.trim() === "[DONE]")

/**
 * How servers of this wire bend the event-stream rules: llama.cpp reported
 * errors on an `error:` line, and servers end the body with a `data: [DONE]`
 * that no blank line follows (read; any other event the body ends inside of
 * is cut, and dropped).
 *
 * @since 0.2.0
 * @category constants
 */
export const dialect: SseParser.Dialect = { fieldEvents: ["error"], dispatchAtEnd: isDone }

/**
 * Maps a `finish_reason` (any case): `stop`, `tool_calls`, `function_call`,
 * `eos`, `eos_token` and `stop_sequence` (text-generation-inference),
 * `end_turn` and none at all are `tool_calls` when the turn has calls
 * and `stop` when not (servers send `stop` with calls, and `tool_calls`
 * without); `length`, `max_tokens` and Mistral's `model_length` (the context
 * window filled) are `max_tokens`; `content_filter` and
 * `safety` are `content_filter`; any other reason is `other`.
 *
 * @since 0.2.0
 * @category mapping
 */
export const stopReason = (reason: string | undefined, hasCalls: boolean): Turn.StopReason => {
  switch (reason?.toLowerCase()) {
    case undefined:
    case "stop":
    case "tool_calls":
    case "function_call":
    case "eos":
    case "eos_token":
    case "stop_sequence":
    case "end_turn":
      return hasCalls ? "tool_calls" : "stop"
    case "length":
    case "max_tokens":
    case "model_length":
      return "max_tokens"
    case "content_filter":
    case "safety":
      return "content_filter"
    default:
      return "other"
  }
}

/**
 * What a decoder needs to know about the request it reads the answer of.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /** The requested model, reported when the stream names none. */
  readonly model?: string | undefined
  /** Names the turn's items and made-up call ids when the stream carries no id. */
  readonly fallbackKey: string
  /** Per tool name, the normalizer of its arguments (see `StrictSchema.Strict.normalize`). */
  readonly tools?: ReadonlyMap<string, (text: string) => string> | undefined
  /** The normalizer of a structured output, applied to the answer's text. */
  readonly output?: ((text: string) => string) | undefined
}

/**
 * A decoder of one streaming response.
 *
 * @example
 * ```ts
 * import { ChatCompletionsDecoder } from "@agentloop/chat-completions"
 * import { ChatCompletionsWire } from "@agentloop/chat-completions/testing"
 * import { ProviderStream, Turn } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Stream } from "effect"
 *
 * // The frames the API would stream for a turn (written by the wire of the package's testing entry)...
 * const frames = ChatCompletionsWire.wire.turn(MockLanguageModel.textTurn("Hello, world"), { chunkSize: 4 })
 * const body = Stream.fromIterable(frames).pipe(Stream.encodeText)
 *
 * // ...decoded back into deltas, the last one carrying the whole turn.
 * const decoder = ChatCompletionsDecoder.make({ model: "gpt-4o-mini", fallbackKey: "turn-1" })
 * const program = body.pipe(ProviderStream.decode(decoder, { provider: "chat-completions" }), Stream.runLast)
 *
 * Effect.runPromise(program).then((last) => {
 *   if (last._tag === "Some" && last.value.type === "turn_complete") console.log(Turn.text(last.value.turn)) // Hello, world
 * })
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (options: Options): ProviderStream.Decoder => new Decoder(options)

const nonEmpty = (text: string | null | undefined): string | undefined =>
  text === undefined || text === null || text === "" ? undefined : text

const decodeChunk = ProviderStream.valueDecoder(provider, ChatCompletionsChunk.Chunk)
const decodeErrorObject = ProviderStream.valueDecoder(provider, ChatCompletionsChunk.ErrorObject)

class Decoder implements ProviderStream.Decoder {
  complete = false
  readonly dialect = dialect
  model: string | undefined
  modelFromStream = false
  id: string | undefined
  finishReason: string | undefined
  counts: ChatCompletionsUsage.Counts = {}
  readonly reasoning: Array<string> = []
  readonly text: Array<string> = []
  readonly refusal: Array<string> = []
  readonly details = ChatCompletionsReasoningDetails.merger()
  readonly citations = ChatCompletionsCitations.make()
  readonly toolCalls: ChatCompletionsToolCalls.ToolCalls
  readonly options: Options

  constructor(options: Options) {
    this.options = options
    this.model = options.model === "" ? undefined : options.model
    this.toolCalls = ChatCompletionsToolCalls.make({
      normalizers: options.tools,
      key: () => this.id ?? options.fallbackKey
    })
  }

  event(name: string, data: string, out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    if (name === "error") return errorEvent(data)
    if (data === "") return undefined
    if (isDone(data)) return this.done(out)
    const json = ProviderStream.parseJson(provider, name, data)
    if (Result.isFailure(json)) return json.failure
    const decoded = decodeChunk(name, json.success)
    if (Result.isFailure(decoded)) return decoded.failure
    const chunk = decoded.success
    if (chunk.error != null) return ChatCompletionsError.fromObject(chunk.error)
    if (chunk.object === "error") {
      const error = decodeErrorObject(name, json.success)
      return Result.isFailure(error) ? error.failure : ChatCompletionsError.fromObject(error.success)
    }
    this.id ??= nonEmpty(chunk.id)
    const model = nonEmpty(chunk.model)
    if (!this.modelFromStream && model !== undefined) {
      this.model = model
      this.modelFromStream = true
    }
    if (chunk.usage != null) this.counts = ChatCompletionsUsage.merge(this.counts, chunk.usage)
    if (chunk.x_groq?.usage != null) this.counts = ChatCompletionsUsage.merge(this.counts, chunk.x_groq.usage)
    this.citations.sources(chunk.search_results, chunk.citations, out)
    const choice = chunk.choices?.[0]
    if (choice === undefined) return undefined
    if (choice.delta != null) this.delta(choice.delta, out)
    this.finishReason ??= nonEmpty(choice.finish_reason)
    return undefined
  }

  end(out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    if (this.finishReason === undefined) {
      return new AiError.IncompleteTurn({ message: `${provider}: the stream ended before a finish_reason` })
    }
    return this.finish(out)
  }

  /** `data: [DONE]`: the server says the answer is over. */
  done(out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    if (this.finishReason === undefined && !this.answered()) {
      return new AiError.IncompleteTurn({
        message: `${provider}: the stream ended with [DONE] before any answer or finish_reason`
      })
    }
    return this.finish(out)
  }

  answered(): boolean {
    return this.text.length > 0 || this.reasoning.length > 0 || this.refusal.length > 0 ||
      this.toolCalls.calls.length > 0 || this.details.details().length > 0
  }

  think(text: string | null | undefined, out: Array<TurnDelta.TurnDelta>): void {
    if (text === undefined || text === null || text === "") return
    this.reasoning.push(text)
    out.push({ type: "reasoning_delta", delta: text })
  }

  say(text: string | null | undefined, out: Array<TurnDelta.TurnDelta>): void {
    if (text === undefined || text === null || text === "") return
    this.text.push(text)
    out.push({ type: "text_delta", delta: text })
  }

  delta(delta: ChatCompletionsChunk.Delta, out: Array<TurnDelta.TurnDelta>): void {
    const details = delta.reasoning_details
    if (details != null) this.details.add(details)
    const reasoning = nonEmpty(delta.reasoning_content) ?? nonEmpty(delta.reasoning)
    // OpenRouter sends the same reasoning as `reasoning` and in `reasoning_details`: it is read once.
    if (reasoning !== undefined) this.think(reasoning, out)
    else if (details != null) { for (const detail of details) this.think(detail.text ?? detail.summary, out) }
    const content = delta.content
    if (typeof content === "string") this.say(content, out)
    else if (content != null) { for (const part of content) this.part(part, out) }
    const refusal = nonEmpty(delta.refusal)
    if (refusal !== undefined) {
      this.refusal.push(refusal)
      out.push({ type: "refusal_delta", delta: refusal })
    }
    this.citations.annotations(delta.annotations, out)
    for (const piece of delta.tool_calls ?? []) this.toolCalls.add(piece, out)
    if (delta.function_call != null) this.toolCalls.add({ function: delta.function_call }, out)
  }

  /** A part of an array `content`: text, or reasoning (Mistral's `thinking`, Databricks' `reasoning` summaries). */
  part(part: ChatCompletionsChunk.ContentPart, out: Array<TurnDelta.TurnDelta>): void {
    switch (part.type) {
      case "text":
        return this.say(part.text, out)
      case "thinking": {
        const thinking = part.thinking
        if (typeof thinking === "string") return this.think(thinking, out)
        for (const chunk of thinking ?? []) this.think(chunk.text, out)
        return
      }
      case "reasoning":
        for (const summary of part.summary ?? []) this.think(summary.text, out)
        return this.think(part.text, out)
    }
  }

  /** The answer's text part, with the sources it cites. */
  outputText(text: string): Item.OutputText {
    const annotations = this.citations.all()
    return annotations.length === 0 ? { type: "output_text", text } : { type: "output_text", text, annotations }
  }

  finish(out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    this.complete = true
    if (this.finishReason?.toLowerCase() === "error") {
      return new AiError.Unavailable({ provider, message: "the server ended the answer with finish_reason \"error\"" })
    }
    const calls = this.toolCalls.finish(out)
    if (Result.isFailure(calls)) return calls.failure
    const key = this.id ?? this.options.fallbackKey
    let count = 0
    const nextId = () => `${itemIdPrefix}${key}_${count++}`
    const items: Array<Item.Item> = []
    const reasoning = this.reasoning.join("")
    const details = this.details.details()
    if (reasoning !== "" || details.length > 0) {
      items.push({
        type: "reasoning",
        id: nextId(),
        status: "completed",
        content: reasoning === "" ? [] : [{ type: "output_text", text: reasoning }],
        ...(details.length === 0 ? {} : { encrypted_content: ChatCompletionsReasoningDetails.toEncrypted(details) })
      })
    }
    const text = this.text.join("")
    const refusal = this.refusal.join("")
    if (text !== "" || refusal !== "") {
      const output = this.options.output
      items.push({
        type: "message",
        id: nextId(),
        status: "completed",
        role: "assistant",
        content: [
          ...(text === "" ? [] : [this.outputText(output === undefined ? text : output(text))]),
          ...(refusal === "" ? [] : [{ type: "refusal" as const, refusal }])
        ]
      })
    }
    for (const call of calls.success) {
      // Gemini's thought signature rides in a call's extra_content: kept just before the call.
      if (call.extra !== undefined) {
        items.push({
          type: "reasoning",
          id: nextId(),
          status: "completed",
          content: [],
          encrypted_content: ChatCompletionsExtraContent.toEncrypted(call.callId, call.extra)
        })
      }
      items.push({
        type: "function_call",
        id: nextId(),
        status: "completed",
        call_id: call.callId,
        name: call.name,
        arguments: call.arguments
      })
    }
    const reason = stopReason(this.finishReason, calls.success.length > 0)
    const last = items[items.length - 1]
    // A turn cut by the token limit ends in the middle of its last item.
    if (reason === "max_tokens" && last !== undefined) items[items.length - 1] = { ...last, status: "incomplete" }
    ProviderStream.complete(out, {
      items,
      usage: ChatCompletionsUsage.isReported(this.counts) ? ChatCompletionsUsage.toTokenUsage(this.counts) : undefined,
      stopReason: reason,
      model: this.model,
      responseId: this.id,
      providerStopReason: this.finishReason,
      cost: this.counts.cost
    })
    return undefined
  }
}

/** The error of an `error` event (Groq's `event: error`, llama.cpp's `error:` line), whatever its data holds. */
const errorEvent = (data: string): AiError.AiError => {
  const error = ChatCompletionsError.errorOf(data)
  return error === undefined
    ? new AiError.Unavailable({ provider, message: data })
    : ChatCompletionsError.fromObject(error)
}
