/**
 * Turns the Server-Sent Events of a streaming Messages API call into
 * `TurnDelta`s, assembling the `Turn` on the way (a `ProviderStream.Decoder`).
 *
 * Each event's kind is its JSON `type`, never its SSE `event:` line. Content
 * blocks open with `content_block_start`, grow by `content_block_delta`s and
 * close with `content_block_stop`, each at its `index`: text blocks stream as
 * `text_delta`s, thinking blocks as `reasoning_delta`s (their signature kept),
 * `tool_use` blocks as a call whose `input_json_delta`s are its argument deltas.
 * The turn completes at `message_stop`, with a `usage` delta then
 * `turn_complete`; an `error` event fails it with its `AiError` (see
 * `AnthropicError`); a body that ends first fails with
 * `AiError.IncompleteTurn`. Events and deltas of unknown types (`ping`,
 * types added later) are skipped. A text block's citations (on its start, and
 * by `citations_delta`) go out as `citation` deltas and stay on its
 * `output_text` part (see `AnthropicCitation`); a citation of an unknown type,
 * or one that does not decode, is skipped.
 *
 * In the `Turn`, consecutive text blocks are one assistant message (a part
 * each); a thinking block is a `reasoning` item with the thinking as its
 * content and the signature as its `encrypted_content`, and a
 * `redacted_thinking` block a `reasoning` item with no content and the block's
 * `data` as its `encrypted_content`: `AnthropicRequest` sends both back as they
 * came. Other blocks (server tools' calls and results such as `server_tool_use`
 * and `web_search_tool_result`) stay in the turn, in their place, as extension
 * items (see {@link extensionPrefix}): they are the API's to run, not calls for
 * the application.
 *
 * @since 0.1.0
 */
import { AiError, EventHandlers, ProviderStream, TokenUsage } from "@agentloop/core"
import type { Item, Turn, TurnDelta } from "@agentloop/core"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as AnthropicCitation from "./AnthropicCitation.ts"
import * as AnthropicError from "./AnthropicError.ts"
import * as AnthropicEvent from "./AnthropicEvent.ts"

const provider = AnthropicError.provider

/**
 * Prefix of the ids of items this provider makes; `AnthropicRequest` sends back only reasoning items that carry it.
 *
 * @since 0.1.0
 * @category constants
 */
export const itemIdPrefix = "anthropic_"

/**
 * The `type` prefix of the extension items that keep content blocks this layer
 * does not model (`x-anthropic.server_tool_use`, `x-anthropic.web_search_tool_result`, …):
 * their `data` is the block as the API sent it, its streamed `input` assembled.
 *
 * @since 0.1.0
 * @category constants
 */
export const extensionPrefix = "x-anthropic."

/**
 * Whether an item is a content block kept as an extension by this layer.
 *
 * @since 0.1.0
 * @category guards
 */
export const isContentBlockExtension = (item: Item.Item): item is Item.Extension =>
  item.type.startsWith(extensionPrefix)

/**
 * Maps a `stop_reason`: `end_turn` and `stop_sequence` are `stop`, `tool_use`
 * is `tool_calls` (or `stop` when the only call was a structured output's),
 * `max_tokens` and `model_context_window_exceeded` (the answer filled the
 * context window: cut like a token limit cuts it) are `max_tokens`, `refusal`
 * is `content_filter`; `pause_turn` and reasons added later are `other`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const stopReason = (reason: string, hasCalls: boolean): Turn.StopReason => {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "stop"
    case "tool_use":
      return hasCalls ? "tool_calls" : "stop"
    case "max_tokens":
    case "model_context_window_exceeded":
      return "max_tokens"
    case "refusal":
      return "content_filter"
    default:
      return "other"
  }
}

type Count = "input_tokens" | "output_tokens" | "cache_creation_input_tokens" | "cache_read_input_tokens"

/**
 * The usage of a turn: each count from `message_delta` when it carries it,
 * else from `message_start`. `input` counts every input token (uncached,
 * written to the cache, read from it), `cachedInput` those read from the
 * cache and `cacheWrite` those written to it, which Anthropic bills at their
 * own rates; thinking tokens are part of `output`, and `reasoning` is their
 * count when the API reports one (`output_tokens_details.thinking_tokens`).
 *
 * @since 0.1.0
 * @category decoding
 */
export const usage = (
  start: AnthropicEvent.Usage | undefined,
  last: AnthropicEvent.Usage | undefined
): TokenUsage.TokenUsage => {
  const count = (key: Count): number | undefined => last?.[key] ?? start?.[key] ?? undefined
  const cacheRead = count("cache_read_input_tokens")
  const cacheWrite = count("cache_creation_input_tokens")
  const input = (count("input_tokens") ?? 0) + (cacheWrite ?? 0) + (cacheRead ?? 0)
  const reasoning = last?.output_tokens_details?.thinking_tokens ?? start?.output_tokens_details?.thinking_tokens ??
    undefined
  return TokenUsage.make(input, count("output_tokens") ?? 0, { cachedInput: cacheRead, cacheWrite, reasoning })
}

/** A content block being streamed; `stopped` once its `content_block_stop` came. */
type Block =
  & { stopped: boolean }
  & (
    | { readonly kind: "text"; readonly pieces: Array<string>; readonly citations: Array<Item.Citation> }
    | { readonly kind: "thinking"; readonly pieces: Array<string>; signature: string | undefined }
    | { readonly kind: "redacted"; readonly data: string }
    | {
      readonly kind: "call"
      readonly id: string
      readonly name: string
      readonly pieces: Array<string>
      readonly input: unknown
    }
    /** The call of the tool that carries a structured output: its input is the answer's text. */
    | { readonly kind: "output"; readonly pieces: Array<string>; readonly input: unknown }
    | { readonly kind: "other"; readonly data: AnthropicEvent.JsonObject; readonly pieces: Array<string> }
  )

/**
 * What a decoder needs to know about the request it reads the answer of.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The requested model, reported when the stream names none. */
  readonly model?: string | undefined
  /** Names the turn's items when the stream carries no message id. */
  readonly fallbackKey: string
  /** The tool that carries a structured output, if the request asked for one through a tool. */
  readonly outputTool?: string | undefined
}

/**
 * A decoder of one streaming response.
 *
 * @example
 * ```ts
 * import { AnthropicDecoder } from "@agentloop/anthropic"
 * import { AnthropicWire } from "@agentloop/anthropic/testing"
 * import { ProviderStream, Turn } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Stream } from "effect"
 *
 * // The frames the API would stream for a turn (written by the wire of the package's testing entry)...
 * const frames = AnthropicWire.wire.turn(MockLanguageModel.textTurn("Hello, world"), { chunkSize: 4 })
 * const body = Stream.fromIterable(frames).pipe(Stream.encodeText)
 *
 * // ...decoded back into deltas, the last one carrying the whole turn.
 * const decoder = AnthropicDecoder.make({ model: "claude-haiku-4-5", fallbackKey: "turn-1" })
 * const program = body.pipe(ProviderStream.decode(decoder, { provider: "anthropic" }), Stream.runLast)
 *
 * Effect.runPromise(program).then((last) => {
 *   if (last._tag === "Some" && last.value.type === "turn_complete") console.log(Turn.text(last.value.turn)) // Hello, world
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): ProviderStream.Decoder => new Decoder(options)

class Decoder implements ProviderStream.Decoder {
  complete = false
  model: string | undefined
  messageId: string | undefined
  startUsage: AnthropicEvent.Usage | undefined
  lastUsage: AnthropicEvent.Usage | undefined
  stopReason: string | undefined
  /** Blocks by index: the index comes from the wire, so it keys a map. */
  readonly blocks = new Map<number, Block>()
  readonly options: Options

  constructor(options: Options) {
    this.options = options
    this.model = options.model
  }

  event(name: string, data: string, out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    return dispatch(this, name, data, out)
  }

  end(): AiError.AiError {
    return new AiError.IncompleteTurn({ message: `${provider}: the stream ended before message_stop` })
  }

  /** The error of an event that names a block that is not open. */
  notOpen(event: string, index: number): AiError.MalformedEvent {
    const state = this.blocks.has(index) ? "has stopped" : "was never started"
    return new AiError.MalformedEvent({ provider, event, message: `index: content block ${index} ${state}` })
  }

  start(event: string, index: number, raw: unknown, out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    if (this.blocks.has(index)) {
      return new AiError.MalformedEvent({ provider, event, message: `index: content block ${index} started twice` })
    }
    const typed = decodeTyped(event, raw, "content_block")
    if (Result.isFailure(typed)) return typed.failure
    const block = blockOf(this.options, event, typed.success.type, raw)
    if (Result.isFailure(block)) return block.failure
    this.blocks.set(index, block.success)
    const opened = block.success
    if (opened.kind === "call") out.push({ type: "function_call_start", call_id: opened.id, name: opened.name })
    const text = opened.kind === "text" || opened.kind === "thinking" ? opened.pieces[0] ?? "" : ""
    if (text !== "") out.push({ type: opened.kind === "text" ? "text_delta" : "reasoning_delta", delta: text })
    if (opened.kind === "text") { for (const citation of opened.citations) out.push({ type: "citation", citation }) }
    return undefined
  }

  delta(event: string, index: number, delta: AnthropicEvent.Delta, out: Array<TurnDelta.TurnDelta>) {
    const block = this.blocks.get(index)
    if (block === undefined || block.stopped) return this.notOpen(event, index)
    switch (delta.type) {
      case "text_delta": {
        if (block.kind !== "text") return mismatch(event, delta, block)
        if (delta.text === undefined) return missing(event, delta, decodeTextDelta)
        block.pieces.push(delta.text)
        out.push({ type: "text_delta", delta: delta.text })
        return undefined
      }
      case "thinking_delta": {
        if (block.kind !== "thinking") return mismatch(event, delta, block)
        if (delta.thinking === undefined) return missing(event, delta, decodeThinkingDelta)
        block.pieces.push(delta.thinking)
        out.push({ type: "reasoning_delta", delta: delta.thinking })
        return undefined
      }
      case "citations_delta": {
        const citation = AnthropicCitation.fromWire(delta.citation)
        if (block.kind !== "text" || citation === undefined || block.citations.length >= AnthropicEvent.maxCitations) {
          return undefined
        }
        block.citations.push(citation)
        out.push({ type: "citation", citation })
        return undefined
      }
      case "signature_delta": {
        if (block.kind !== "thinking") return mismatch(event, delta, block)
        if (delta.signature === undefined) return missing(event, delta, decodeSignatureDelta)
        block.signature = (block.signature ?? "") + delta.signature
        return undefined
      }
      case "input_json_delta": {
        if (block.kind !== "call" && block.kind !== "output" && block.kind !== "other") {
          return mismatch(event, delta, block)
        }
        const piece = delta.partial_json
        if (piece === undefined) return missing(event, delta, decodeInputJsonDelta)
        block.pieces.push(piece)
        if (piece === "") return undefined
        if (block.kind === "call") out.push({ type: "function_call_arguments_delta", call_id: block.id, delta: piece })
        else if (block.kind === "output") out.push({ type: "text_delta", delta: piece })
        return undefined
      }
      default:
        return undefined
    }
  }

  stop(event: string, index: number, out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    const block = this.blocks.get(index)
    if (block === undefined || block.stopped) return this.notOpen(event, index)
    block.stopped = true
    if (block.kind === "call" || block.kind === "output") {
      // A call whose input did not stream still gets it, as one delta.
      if (block.pieces.join("") === "") {
        const input = JSON.stringify(block.input ?? {})
        block.pieces.push(input)
        out.push(
          block.kind === "call"
            ? { type: "function_call_arguments_delta", call_id: block.id, delta: input }
            : { type: "text_delta", delta: input }
        )
      }
      if (block.kind === "call") {
        out.push({ type: "function_call_done", call_id: block.id, name: block.name, arguments: block.pieces.join("") })
      }
    } else if (block.kind === "other" && block.pieces.length > 0) {
      // A tool without input streams it as one empty piece: the input is an empty object.
      const streamed = block.pieces.join("")
      const input = streamed === "" ? Result.succeed({}) : ProviderStream.parseJson(provider, event, streamed)
      if (Result.isFailure(input)) return input.failure
      this.blocks.set(index, { ...block, data: { ...block.data, input: input.success } })
    }
    return undefined
  }

  finish(out: Array<TurnDelta.TurnDelta>): void {
    this.complete = true
    const key = this.messageId ?? this.options.fallbackKey
    let count = 0
    const nextId = () => `${itemIdPrefix}${key}_${count++}`
    const items: Array<Item.Item> = []
    let message: { id: string; parts: Array<Item.ContentPart>; stopped: boolean } | undefined
    const flush = () => {
      if (message === undefined) return
      items.push({
        type: "message",
        id: message.id,
        status: message.stopped ? "completed" : "incomplete",
        role: "assistant",
        content: message.parts
      })
      message = undefined
    }
    for (const [, block] of [...this.blocks.entries()].sort(([a], [b]) => a - b)) {
      const status = block.stopped ? "completed" : "incomplete"
      if (block.kind === "text") {
        message ??= { id: nextId(), parts: [], stopped: true }
        message.parts.push({
          type: "output_text",
          text: block.pieces.join(""),
          ...(block.citations.length === 0 ? {} : { annotations: block.citations })
        })
        message.stopped &&= block.stopped
        continue
      }
      flush()
      const id = nextId()
      switch (block.kind) {
        case "thinking":
          items.push({
            type: "reasoning",
            id,
            status,
            content: [{ type: "output_text", text: block.pieces.join("") }],
            ...(block.signature === undefined ? {} : { encrypted_content: block.signature })
          })
          break
        case "redacted":
          items.push({ type: "reasoning", id, status, content: [], encrypted_content: block.data })
          break
        case "call":
          items.push({
            type: "function_call",
            id,
            status,
            call_id: block.id,
            name: block.name,
            arguments: block.pieces.join("")
          })
          break
        case "output":
          items.push({
            type: "message",
            id,
            status,
            role: "assistant",
            content: [{ type: "output_text", text: block.pieces.join("") }]
          })
          break
        case "other":
          items.push({ type: `${extensionPrefix}${String(block.data.type)}`, id, status, data: block.data })
          break
      }
    }
    flush()
    const hasCalls = items.some((item) => item.type === "function_call")
    const reason = this.stopReason === undefined
      ? (hasCalls ? "tool_calls" : "stop")
      : stopReason(this.stopReason, hasCalls)
    const last = items[items.length - 1]
    // A turn cut by max_tokens ends in the middle of its last item.
    if (reason === "max_tokens" && last !== undefined) items[items.length - 1] = { ...last, status: "incomplete" }
    const reported = this.startUsage !== undefined || this.lastUsage !== undefined
    ProviderStream.complete(out, {
      items,
      usage: reported ? usage(this.startUsage, this.lastUsage) : undefined,
      stopReason: reason,
      model: this.model,
      responseId: this.messageId,
      providerStopReason: this.stopReason
    })
  }
}

const decoder = <A>(schema: Schema.Decoder<A>) => ProviderStream.valueDecoder(provider, schema)
const decodeTyped = decoder(AnthropicEvent.Typed)
const decodeTextBlock = decoder(AnthropicEvent.TextBlock)
const decodeThinkingBlock = decoder(AnthropicEvent.ThinkingBlock)
const decodeRedactedBlock = decoder(AnthropicEvent.RedactedThinkingBlock)
const decodeToolUseBlock = decoder(AnthropicEvent.ToolUseBlock)
const decodeJsonObject = decoder(AnthropicEvent.JsonObject)
const decodeTextDelta = decoder(AnthropicEvent.TextDelta)
const decodeThinkingDelta = decoder(AnthropicEvent.ThinkingDelta)
const decodeSignatureDelta = decoder(AnthropicEvent.SignatureDelta)
const decodeInputJsonDelta = decoder(AnthropicEvent.InputJsonDelta)

const mismatch = (event: string, delta: AnthropicEvent.Delta, block: Block) =>
  new AiError.MalformedEvent({ provider, event, message: `delta: a ${delta.type} for a ${block.kind} block` })

/** The error of a delta without the field its type carries its piece in: `decode` is that type's schema. */
const missing = (
  event: string,
  delta: AnthropicEvent.Delta,
  decode: (event: string, value: unknown, at: string) => Result.Result<unknown, AiError.MalformedEvent>
): AiError.MalformedEvent => {
  const decoded = decode(event, delta, "delta")
  return Result.isFailure(decoded)
    ? decoded.failure
    : new AiError.MalformedEvent({ provider, event, message: `delta: a ${delta.type} without its piece` })
}

/** The block a `content_block_start` opens, decoded with the schema of its `type`. */
const blockOf = (
  options: Options,
  event: string,
  type: string,
  raw: unknown
): Result.Result<Block, AiError.MalformedEvent> => {
  const at = "content_block"
  switch (type) {
    case "text":
      return Result.map(decodeTextBlock(event, raw, at), ({ citations, text }): Block => ({
        kind: "text",
        pieces: [text],
        citations: (citations ?? []).slice(0, AnthropicEvent.maxCitations).flatMap((raw) => {
          const citation = AnthropicCitation.fromWire(raw)
          return citation === undefined ? [] : [citation]
        }),
        stopped: false
      }))
    case "thinking":
      return Result.map(decodeThinkingBlock(event, raw, at), ({ signature, thinking }): Block => ({
        kind: "thinking",
        pieces: [thinking],
        signature: signature ?? undefined,
        stopped: false
      }))
    case "redacted_thinking":
      return Result.map(
        decodeRedactedBlock(event, raw, at),
        ({ data }): Block => ({ kind: "redacted", data, stopped: false })
      )
    case "tool_use":
      return Result.map(decodeToolUseBlock(event, raw, at), ({ id, input, name }): Block =>
        name === options.outputTool
          ? { kind: "output", pieces: [], input, stopped: false }
          : { kind: "call", id, name, pieces: [], input, stopped: false })
    default:
      return Result.map(
        decodeJsonObject(event, raw, at),
        (data): Block => ({ kind: "other", data, pieces: [], stopped: false })
      )
  }
}

const on = EventHandlers.on<Decoder>(provider)

/** The events this layer reads, by type. */
const handlers: EventHandlers.Handlers<Decoder> = new Map([
  [
    "message_start",
    on(AnthropicEvent.MessageStart, (self, { message }) => {
      if (message.id !== undefined) self.messageId = message.id
      if (message.model !== undefined) self.model = message.model
      if (message.usage != null) self.startUsage = message.usage
    })
  ],
  [
    "content_block_start",
    on(AnthropicEvent.ContentBlockStart, (self, e, out, event) => self.start(event, e.index, e.content_block, out))
  ],
  [
    "content_block_delta",
    on(AnthropicEvent.ContentBlockDelta, (self, e, out, event) => self.delta(event, e.index, e.delta, out))
  ],
  ["content_block_stop", on(AnthropicEvent.ContentBlockStop, (self, e, out, event) => self.stop(event, e.index, out))],
  [
    "message_delta",
    on(AnthropicEvent.MessageDelta, (self, e) => {
      if (e.delta.stop_reason != null) self.stopReason = e.delta.stop_reason
      // Counts are cumulative; a later delta may leave out what an earlier one said.
      if (e.usage != null) self.lastUsage = { ...self.lastUsage, ...e.usage }
    })
  ],
  ["message_stop", (self, _event, _json, out) => {
    self.finish(out)
    return undefined
  }],
  ["error", on(AnthropicEvent.ErrorEvent, (_, e) => AnthropicError.fromObject(e.error))]
])

const dispatch = EventHandlers.dispatch(provider, handlers)
