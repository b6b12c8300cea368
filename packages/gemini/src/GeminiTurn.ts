/**
 * Turns Gemini's streamed `GenerateContentResponse` chunks into agentloop's
 * `TurnDelta`s and assembles the `Turn`.
 *
 * Gemini streams whole parts, not events: text and thought parts arrive as
 * pieces, a function call arrives complete in one part (so its arguments are one
 * delta), usage is a running total repeated on chunks, and the last chunk carries
 * `finishReason`. There is no end-of-stream event: the turn completes when the
 * HTTP body ends after a finish reason (or a prompt block), and a body that ends
 * before one fails with `AiError.IncompleteTurn`.
 *
 * Thought signatures (opaque context Gemini wants back on the same part in the
 * next request) are kept in the history as `reasoning` items whose
 * `encrypted_content` is the signature: a thought part keeps its signature on its
 * own reasoning item; a signature on a text or function-call part becomes a
 * reasoning item with no readable content placed just before the item made from
 * that part. `GeminiRequest` reverses this. A reasoning item is the one item kind
 * meant for provider-opaque content, and it survives a history's JSON round trip.
 *
 * @since 0.1.0
 */
import { AiError, ProviderHttp, TokenUsage } from "@agentloop/core"
import type { Item, Turn, TurnDelta } from "@agentloop/core"
import { Array as Arr, Cause, Effect, Pull, Result, Stream } from "effect"
import type { Sse } from "effect/encoding"
import * as GeminiWire from "./GeminiWire.ts"

const provider = "gemini"

/** Prefix of the ids of items this provider makes; `GeminiRequest` sends back only reasoning items that carry it. */
export const itemIdPrefix = "gemini_"

/** Prefix of call ids synthesised when the wire has none; such ids are never sent to Gemini. */
export const synthesizedCallIdPrefix = "gemini_call_"

/** Whether a call id was made up by this provider rather than sent by Gemini. */
export const isSynthesizedCallId = (callId: string): boolean => callId.startsWith(synthesizedCallIdPrefix)

/**
 * Maps a Gemini `finishReason` to a `Turn.StopReason`. A `STOP` with function
 * calls is `tool_calls`; unknown reasons are `other`.
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

/** Maps `usageMetadata` to `TokenUsage`: output counts thoughts, input counts cached and tool-use prompt tokens. */
export const usage = (metadata: GeminiWire.UsageMetadata): TokenUsage.TokenUsage =>
  TokenUsage.make(
    (metadata.promptTokenCount ?? 0) + (metadata.toolUsePromptTokenCount ?? 0),
    (metadata.candidatesTokenCount ?? 0) + (metadata.thoughtsTokenCount ?? 0),
    { cachedInput: metadata.cachedContentTokenCount, reasoning: metadata.thoughtsTokenCount }
  )

interface OpenItem {
  readonly kind: "message" | "reasoning"
  text: string
  signature: string | undefined
}

/**
 * The mutable state of one turn. `push` appends the deltas a chunk produces to
 * `out`; `finish` returns the closing deltas, or the error if the turn is incomplete.
 */
export class Assembler {
  private readonly items: Array<Item.Item> = []
  private open: OpenItem | undefined = undefined
  private key: string | undefined = undefined
  private itemCount = 0
  private callCount = 0
  private hasFunctionCalls = false
  private finishReason: string | undefined = undefined
  private blockReason: string | undefined = undefined
  private usageMetadata: GeminiWire.UsageMetadata | undefined = undefined
  private modelVersion: string | undefined = undefined
  private responseId: string | undefined = undefined

  private readonly model: string
  private readonly fallbackKey: string

  /** `fallbackKey` names the turn's items when the chunks carry no `responseId`. */
  constructor(model: string, fallbackKey: string) {
    this.model = model
    this.fallbackKey = fallbackKey
  }

  /** Reads one chunk of candidate 0, appending the deltas it produces to `out`. */
  push(chunk: GeminiWire.GenerateContentResponse, out: Array<TurnDelta.TurnDelta>): void {
    if (this.key === undefined) this.key = chunk.responseId ?? this.fallbackKey
    if (chunk.responseId !== undefined) this.responseId = chunk.responseId
    if (chunk.modelVersion !== undefined) this.modelVersion = chunk.modelVersion
    if (chunk.usageMetadata !== undefined) this.usageMetadata = chunk.usageMetadata
    if (chunk.promptFeedback?.blockReason !== undefined) this.blockReason = chunk.promptFeedback.blockReason
    const candidate = chunk.candidates?.[0]
    if (candidate === undefined) return
    const parts = candidate.content?.parts
    if (parts !== undefined) {
      for (const part of parts) this.part(part, out)
    }
    if (candidate.finishReason !== undefined) this.finishReason = candidate.finishReason
  }

  /** Closes the turn: its `usage` and `turn_complete`, or `IncompleteTurn` when no chunk said why it finished. */
  finish(): Result.Result<readonly [TurnDelta.Usage, TurnDelta.TurnComplete], AiError.IncompleteTurn> {
    const reason = this.finishReason !== undefined
      ? { stop: stopReason(this.finishReason, this.hasFunctionCalls), raw: this.finishReason }
      : this.blockReason !== undefined
      ? { stop: "content_filter" as const, raw: `blockReason:${this.blockReason}` }
      : undefined
    if (reason === undefined) {
      return Result.fail(
        new AiError.IncompleteTurn({ message: "gemini: the stream ended before a chunk with a finishReason" })
      )
    }
    this.close(reason.stop === "stop" || reason.stop === "tool_calls" ? "completed" : "incomplete")
    const turnUsage = this.usageMetadata === undefined ? TokenUsage.empty : usage(this.usageMetadata)
    const turn: Turn.Turn = {
      items: this.items,
      usage: turnUsage,
      stopReason: reason.stop,
      model: this.modelVersion ?? this.model,
      providerStopReason: reason.raw,
      ...(this.responseId === undefined ? {} : { responseId: this.responseId })
    }
    return Result.succeed([{ type: "usage", usage: turnUsage }, { type: "turn_complete", turn }])
  }

  private part(part: GeminiWire.Part, out: Array<TurnDelta.TurnDelta>): void {
    if (part.functionCall !== undefined) {
      this.close("completed")
      if (part.thoughtSignature !== undefined) this.pushSignature(part.thoughtSignature)
      this.functionCall(part.functionCall, out)
      return
    }
    if (part.text === undefined) {
      if (part.thoughtSignature !== undefined) {
        this.close("completed")
        this.pushSignature(part.thoughtSignature)
      }
      return
    }
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
        return
      }
      open = { kind, text: "", signature: undefined }
      this.open = open
    }
    if (part.text !== "") {
      open.text += part.text
      out.push({ type: kind === "message" ? "text_delta" : "reasoning_delta", delta: part.text })
    }
    if (part.thoughtSignature !== undefined) open.signature = part.thoughtSignature
  }

  private functionCall(call: GeminiWire.FunctionCall, out: Array<TurnDelta.TurnDelta>): void {
    const callId = call.id ?? `${synthesizedCallIdPrefix}${this.key}_${this.callCount++}`
    const args = JSON.stringify(call.args ?? {})
    this.hasFunctionCalls = true
    out.push(
      { type: "function_call_start", call_id: callId, name: call.name },
      { type: "function_call_arguments_delta", call_id: callId, delta: args },
      { type: "function_call_done", call_id: callId, name: call.name, arguments: args }
    )
    this.items.push({
      type: "function_call",
      id: this.nextId(),
      status: "completed",
      call_id: callId,
      name: call.name,
      arguments: args
    })
  }

  private pushSignature(signature: string): void {
    this.items.push({ type: "reasoning", id: this.nextId(), status: "completed", content: [], encrypted_content: signature })
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

const decodeEvent = ProviderHttp.decodeEvent(provider, GeminiWire.StreamEvent)

/** Maps an error Gemini sent inside a stream (an SSE event with an `error` body) to its `AiError`. */
export const streamError = (error: GeminiWire.ErrorDetail): AiError.AiError => {
  const message = error.message ?? error.status ?? "unknown error"
  const status = error.code ?? 500
  return AiError.fromHttpStatus({
    provider,
    status,
    message,
    contextLengthExceeded: ProviderHttp.isContextLengthMessage(message)
  })
}

/**
 * Decodes one SSE event into the assembler, appending its deltas to `out`.
 * Returns the error that ends the stream, if the event is undecodable or an error body.
 */
export const pushEvent = (
  assembler: Assembler,
  event: Sse.Event,
  index: number,
  out: Array<TurnDelta.TurnDelta>
): AiError.AiError | undefined => {
  const decoded = decodeEvent(event)
  if (Result.isFailure(decoded)) {
    // Gemini's events have no name or type: the position is what tells them apart.
    return new AiError.MalformedEvent({
      provider,
      event: `GenerateContentResponse #${index}`,
      message: decoded.failure.message
    })
  }
  if (decoded.success.error !== undefined) return streamError(decoded.success.error)
  assembler.push(decoded.success, out)
  return undefined
}

/**
 * Turns a stream of SSE events from `streamGenerateContent?alt=sse` into the
 * turn's deltas, ending with exactly one `turn_complete`. `fallbackKey` names
 * items and synthesised call ids when the wire has no `responseId`.
 */
export const fromEvents = <E, R>(
  events: Stream.Stream<Sse.Event, E, R>,
  options: { readonly model: string; readonly fallbackKey: string }
): Stream.Stream<TurnDelta.TurnDelta, E | AiError.AiError, R> =>
  Stream.transformPull(events, (pull) =>
    Effect.sync(() => {
      const assembler = new Assembler(options.model, options.fallbackKey)
      let index = 0
      let pending: AiError.AiError | undefined = undefined
      let finished = false
      const onDone = Effect.suspend(() => {
        finished = true
        const closing = assembler.finish()
        return Result.isFailure(closing) ? Effect.fail(closing.failure) : Effect.succeed(closing.success)
      })
      type Next = Pull.Pull<Arr.NonEmptyReadonlyArray<TurnDelta.TurnDelta>, E | AiError.AiError>
      const upstreamOrEnd = Pull.catchDone(pull, () => Effect.succeed(undefined))
      // The recursive `next` is the last step of a flatMap with no handler around it, so a run of
      // chunks that yield no delta costs no stack and no memory.
      const next: Next = Effect.suspend((): Next => {
        if (pending !== undefined) return Effect.fail(pending)
        if (finished) return Cause.done()
        return Effect.flatMap(upstreamOrEnd, (events): Next => {
          if (events === undefined) return onDone
          const out: Array<TurnDelta.TurnDelta> = []
          for (const event of events) {
            const error = pushEvent(assembler, event, index++, out)
            if (error !== undefined) {
              if (out.length === 0) return Effect.fail(error)
              pending = error
              break
            }
          }
          return Arr.isArrayNonEmpty(out) ? Effect.succeed(out) : next
        })
      })
      return next
    }))
