/**
 * Turns Gemini's streamed `GenerateContentResponse` chunks into agentloop's
 * `TurnDelta`s and assembles the `Turn` (a `ProviderStream.Decoder`).
 *
 * Gemini streams whole parts, not events: text and thought parts arrive as
 * pieces, a function call arrives complete in one part (so its arguments are one
 * delta) or, with Vertex AI's `streamFunctionCallArguments`, in pieces (see
 * `GeminiArguments`), usage is a running total repeated on chunks, and the last
 * chunk carries `finishReason`. There is no end-of-stream event: the turn
 * completes when the body ends after a finish reason (or a prompt block), and a
 * body that ends before one fails with `AiError.IncompleteTurn`.
 *
 * Thought signatures (opaque context Gemini wants back on the same part in the
 * next request) are kept in the history as `reasoning` items whose
 * `encrypted_content` is the signature: a thought part keeps its signature on its
 * own reasoning item; a signature on a text or function-call part becomes a
 * reasoning item with no readable content placed just before the item made from
 * that part. `GeminiRequest` reverses this.
 *
 * A candidate's grounding (see `GeminiGrounding`; the last `groundingMetadata`
 * counts, as Gemini sends it whole) becomes the annotations of the turn's last
 * message, its spans counted from that message's start (a span in an earlier
 * message loses its indices), and `citation` deltas just before the usage.
 *
 * @since 0.1.0
 */
import { AiError, ProviderStream, TokenUsage } from "@agentloop/core"
import type { Item, Turn, TurnDelta } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as GeminiArguments from "./GeminiArguments.ts"
import * as GeminiError from "./GeminiError.ts"
import * as GeminiEvent from "./GeminiEvent.ts"
import * as GeminiGrounding from "./GeminiGrounding.ts"

/**
 * The provider's name in errors.
 *
 * @since 0.1.0
 * @category constants
 */
export const provider = GeminiError.provider

/**
 * Prefix of the ids of items this provider makes; `GeminiRequest` sends back only reasoning items that carry it.
 *
 * @since 0.1.0
 * @category constants
 */
export const itemIdPrefix = "gemini_"

/**
 * Prefix of call ids synthesised when the wire has none; such ids are never sent to Gemini.
 *
 * @since 0.1.0
 * @category constants
 */
export const synthesizedCallIdPrefix = "gemini_call_"

/**
 * Whether a call id was made up by this provider rather than sent by Gemini.
 *
 * @since 0.1.0
 * @category guards
 */
export const isSynthesizedCallId = (callId: string): boolean => callId.startsWith(synthesizedCallIdPrefix)

/**
 * Maps a Gemini `finishReason` to a `Turn.StopReason`. A `STOP` with function
 * calls is `tool_calls`; unknown reasons are `other`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const stopReason = (finishReason: string, hasFunctionCalls: boolean): Turn.StopReason => {
  switch (finishReason) {
    case "STOP":
      return hasFunctionCalls ? "tool_calls" : "stop"
    case "MAX_TOKENS":
      return "max_tokens"
    case "SAFETY":
    case "RECITATION":
    case "BLOCKLIST":
    case "PROHIBITED_CONTENT":
    case "SPII":
    case "IMAGE_SAFETY":
    case "IMAGE_PROHIBITED_CONTENT":
    case "IMAGE_RECITATION":
    case "MODEL_ARMOR":
      return "content_filter"
    case "MALFORMED_FUNCTION_CALL":
    case "UNEXPECTED_TOOL_CALL":
      return "malformed_tool_call"
    default:
      return "other"
  }
}

/**
 * Maps `usageMetadata` to `TokenUsage`: output counts thoughts, input counts cached and tool-use prompt tokens.
 *
 * @since 0.1.0
 * @category decoding
 */
export const usage = (metadata: GeminiEvent.UsageMetadata): TokenUsage.TokenUsage =>
  TokenUsage.make(
    (metadata.promptTokenCount ?? 0) + (metadata.toolUsePromptTokenCount ?? 0),
    (metadata.candidatesTokenCount ?? 0) + (metadata.thoughtsTokenCount ?? 0),
    { cachedInput: metadata.cachedContentTokenCount, reasoning: metadata.thoughtsTokenCount }
  )

/**
 * Maps an error Gemini sent inside a stream (an event with an `error` body) to its `AiError`; see `GeminiError.fromObject`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const streamError = (error: GeminiEvent.ErrorDetail): AiError.AiError => GeminiError.fromObject(error)

interface OpenText {
  readonly kind: "message" | "reasoning"
  text: string
  signature: string | undefined
}

/** A call whose arguments Vertex AI is still streaming. */
interface OpenCall {
  readonly callId: string
  readonly name: string
  readonly writer: GeminiArguments.Writer
  arguments: string
}

const decodeChunk = ProviderStream.valueDecoder(provider, GeminiEvent.Chunk)
const decodeGrounding = Schema.decodeUnknownResult(GeminiGrounding.GroundingMetadata)

const eventName = (index: number): string => `GenerateContentResponse #${index}`

/**
 * A decoder of one streamed response. `fallbackKey` names items and synthesised call ids when the wire has no `responseId`.
 *
 * @example
 * ```ts
 * import { GeminiDecoder } from "@agentloop/gemini"
 * import { GeminiWire } from "@agentloop/gemini/testing"
 * import { ProviderStream, Turn } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Stream } from "effect"
 *
 * // The frames the API would stream for a turn (written by the wire of the package's testing entry)...
 * const frames = GeminiWire.wire.turn(MockLanguageModel.textTurn("Hello, world"), { chunkSize: 4 })
 * const body = Stream.fromIterable(frames).pipe(Stream.encodeText)
 *
 * // ...decoded back into deltas, the last one carrying the whole turn.
 * const decoder = GeminiDecoder.make({ model: "gemini-2.5-flash", fallbackKey: "turn-1" })
 * const program = body.pipe(ProviderStream.decode(decoder, { provider: "gemini" }), Stream.runLast)
 *
 * Effect.runPromise(program).then((last) => {
 *   if (last._tag === "Some" && last.value.type === "turn_complete") console.log(Turn.text(last.value.turn)) // Hello, world
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: { readonly model: string; readonly fallbackKey: string }): ProviderStream.Decoder =>
  new Decoder(options.model, options.fallbackKey)

class Decoder implements ProviderStream.Decoder {
  readonly complete = false
  private readonly items: Array<Item.Item> = []
  private open: OpenText | undefined = undefined
  private call: OpenCall | undefined = undefined
  private key: string | undefined = undefined
  private index = 0
  private itemCount = 0
  private callCount = 0
  private hasFunctionCalls = false
  private finishReason: string | undefined = undefined
  private blockReason: string | undefined = undefined
  private usageMetadata: GeminiEvent.UsageMetadata | undefined = undefined
  private modelVersion: string | undefined = undefined
  private responseId: string | undefined = undefined
  /** The candidate's last `groundingMetadata`, and the text of its messages so far, which its spans count in. */
  private grounding: GeminiGrounding.GroundingMetadata | undefined = undefined
  private readonly answer: Array<string> = []
  private readonly model: string
  private readonly fallbackKey: string

  constructor(model: string, fallbackKey: string) {
    this.model = model
    this.fallbackKey = fallbackKey
  }

  event(_name: string, data: string, out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    const index = this.index++
    // Gemini's events have no name or type: the position is what tells them apart.
    const json = ProviderStream.parseJson(provider, "", data)
    const decoded = Result.isSuccess(json) ? decodeChunk("", json.success) : json
    if (Result.isFailure(decoded)) {
      return new AiError.MalformedEvent({ provider, event: eventName(index), message: decoded.failure.message })
    }
    const chunk = decoded.success
    if (chunk.error !== undefined) return streamError(chunk.error)
    if (this.key === undefined) this.key = chunk.responseId ?? this.fallbackKey
    if (chunk.responseId !== undefined) this.responseId = chunk.responseId
    if (chunk.modelVersion !== undefined) this.modelVersion = chunk.modelVersion
    if (chunk.usageMetadata !== undefined) this.usageMetadata = chunk.usageMetadata
    if (chunk.promptFeedback?.blockReason !== undefined) this.blockReason = chunk.promptFeedback.blockReason
    const candidate = chunk.candidates?.[0]
    if (candidate === undefined) return undefined
    for (const part of candidate.content?.parts ?? []) {
      const error = this.part(part, index, out)
      if (error !== undefined) return error
    }
    if (candidate.groundingMetadata !== undefined) {
      const grounding = decodeGrounding(candidate.groundingMetadata)
      if (Result.isSuccess(grounding)) this.grounding = grounding.success
    }
    if (candidate.finishReason !== undefined) {
      this.finishReason = candidate.finishReason
      this.endCall(out)
    }
    return undefined
  }

  end(out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    const reason = this.finishReason !== undefined
      ? { stop: stopReason(this.finishReason, this.hasFunctionCalls), raw: this.finishReason }
      : this.blockReason !== undefined
      ? { stop: "content_filter" as const, raw: `blockReason:${this.blockReason}` }
      : undefined
    if (reason === undefined) {
      return new AiError.IncompleteTurn({ message: `${provider}: the stream ended before a chunk with a finishReason` })
    }
    this.close(reason.stop === "stop" || reason.stop === "tool_calls" ? "completed" : "incomplete")
    this.cite(out)
    // The usage delta always goes out, empty when no chunk carried usageMetadata.
    ProviderStream.complete(out, {
      items: this.items,
      usage: this.usageMetadata === undefined ? TokenUsage.empty : usage(this.usageMetadata),
      stopReason: reason.stop,
      model: this.modelVersion ?? this.model,
      responseId: this.responseId,
      providerStopReason: reason.raw
    })
    return undefined
  }

  /** Puts the grounding's citations on the last message, and sends them. */
  private cite(out: Array<TurnDelta.TurnDelta>): void {
    const at = this.items.findLastIndex((item) => item.type === "message")
    const message = this.items[at]
    const part = message?.type === "message" ? message.content[0] : undefined
    if (this.grounding === undefined || message?.type !== "message" || part?.type !== "output_text") return
    const text = this.answer.join("")
    const offset = text.length - part.text.length
    const annotations = GeminiGrounding.citations(text, this.grounding).map((citation): Item.Citation => {
      if (citation.start_index === undefined || citation.end_index === undefined) return citation
      const { end_index, start_index, ...source } = citation
      return start_index < offset
        ? source
        : { ...source, start_index: start_index - offset, end_index: end_index - offset }
    })
    if (annotations.length === 0) return
    for (const citation of annotations) out.push({ type: "citation", citation })
    this.items[at] = { ...message, content: [{ ...part, annotations }] }
  }

  private part(part: GeminiEvent.Part, index: number, out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    const call = part.functionCall
    if (call !== undefined) {
      this.close("completed")
      if (part.thoughtSignature !== undefined) this.pushSignature(part.thoughtSignature)
      return this.functionCall(call, index, out)
    }
    this.endCall(out)
    if (part.text === undefined) {
      if (part.thoughtSignature !== undefined) {
        this.close("completed")
        this.pushSignature(part.thoughtSignature)
      }
      return undefined
    }
    // An empty part with no signature (Gemini 3 ends a turn with one) holds nothing: it opens no message.
    if (part.text === "" && part.thoughtSignature === undefined) return undefined
    const kind = part.thought === true ? "reasoning" : "message"
    // A signature ends a thought; a message's text may stream on after its signature, but a
    // second signature needs an item of its own, or the first would be lost.
    if (
      this.open !== undefined &&
      (this.open.kind !== kind ||
        (this.open.signature !== undefined && (kind === "reasoning" || part.thoughtSignature !== undefined)))
    ) {
      this.close("completed")
    }
    let open = this.open
    if (open === undefined) {
      if (kind === "message" && part.text === "" && part.thoughtSignature !== undefined) {
        this.pushSignature(part.thoughtSignature)
        return undefined
      }
      open = { kind, text: "", signature: undefined }
      this.open = open
    }
    if (part.text !== "") {
      open.text += part.text
      if (kind === "message") this.answer.push(part.text)
      out.push({ type: kind === "message" ? "text_delta" : "reasoning_delta", delta: part.text })
    }
    if (part.thoughtSignature !== undefined) open.signature = part.thoughtSignature
    return undefined
  }

  private functionCall(
    call: GeminiEvent.FunctionCall,
    index: number,
    out: Array<TurnDelta.TurnDelta>
  ): AiError.AiError | undefined {
    const open = this.call
    if (call.name === undefined) {
      if (open === undefined) {
        return new AiError.MalformedEvent({
          provider,
          event: eventName(index),
          message: "functionCall: a part without a name continues no streamed call"
        })
      }
      return this.streamArguments(open, call, index, out)
    }
    this.endCall(out)
    const callId = call.id ?? `${synthesizedCallIdPrefix}${this.key}_${this.callCount++}`
    this.hasFunctionCalls = true
    out.push({ type: "function_call_start", call_id: callId, name: call.name })
    if (call.willContinue === true || call.partialArgs !== undefined) {
      const started: OpenCall = { callId, name: call.name, writer: GeminiArguments.make(), arguments: "" }
      this.call = started
      return this.streamArguments(started, call, index, out)
    }
    // Arguments that are not an object are the model's mistake: the call goes to the tool, which says so.
    const args = JSON.stringify(call.args ?? {})
    out.push({ type: "function_call_arguments_delta", call_id: callId, delta: args })
    this.pushCall(callId, call.name, args, out)
    return undefined
  }

  private streamArguments(
    open: OpenCall,
    call: GeminiEvent.FunctionCall,
    index: number,
    out: Array<TurnDelta.TurnDelta>
  ): AiError.AiError | undefined {
    for (const arg of call.partialArgs ?? []) {
      const piece = open.writer.push(arg)
      if (Result.isFailure(piece)) {
        return new AiError.MalformedEvent({
          provider,
          event: eventName(index),
          message: `functionCall.partialArgs: ${piece.failure}`
        })
      }
      this.argumentsDelta(open, piece.success, out)
    }
    if (call.willContinue !== true) this.endCall(out)
    return undefined
  }

  private argumentsDelta(open: OpenCall, delta: string, out: Array<TurnDelta.TurnDelta>): void {
    if (delta.length === 0) return
    open.arguments += delta
    out.push({ type: "function_call_arguments_delta", call_id: open.callId, delta })
  }

  /** Ends the call whose arguments are streaming, if one is. */
  private endCall(out: Array<TurnDelta.TurnDelta>): void {
    const open = this.call
    if (open === undefined) return
    this.call = undefined
    this.argumentsDelta(open, open.writer.end(), out)
    this.pushCall(open.callId, open.name, open.arguments, out)
  }

  private pushCall(callId: string, name: string, args: string, out: Array<TurnDelta.TurnDelta>): void {
    out.push({ type: "function_call_done", call_id: callId, name, arguments: args })
    this.items.push({
      type: "function_call",
      id: this.nextId(),
      status: "completed",
      call_id: callId,
      name,
      arguments: args
    })
  }

  private pushSignature(signature: string): void {
    this.items.push({
      type: "reasoning",
      id: this.nextId(),
      status: "completed",
      content: [],
      encrypted_content: signature
    })
  }

  private close(status: Item.Status): void {
    const open = this.open
    if (open === undefined) return
    this.open = undefined
    if (open.kind === "reasoning") {
      this.items.push({
        type: "reasoning",
        id: this.nextId(),
        status,
        content: [{ type: "output_text", text: open.text }],
        ...(open.signature === undefined ? {} : { encrypted_content: open.signature })
      })
      return
    }
    if (open.signature !== undefined) this.pushSignature(open.signature)
    this.items.push({
      type: "message",
      id: this.nextId(),
      status,
      role: "assistant",
      content: [{ type: "output_text", text: open.text }]
    })
  }

  private nextId(): string {
    return `${itemIdPrefix}${this.key ?? this.fallbackKey}_${this.itemCount++}`
  }
}
