/**
 * The Messages API's streaming format written out (a `ProviderWire`): the
 * Server-Sent Events in which Anthropic streams a `Turn`, and the answers with
 * which it reports an `AiError`, so that a loopback server in a test answers
 * as Anthropic does and `Anthropic`'s layer decodes them back.
 *
 * ```ts
 * yield* server.reply(ProviderServer.sse(AnthropicWire.wire.turn(turn, { chunkSize: 4 })))
 * ```
 *
 * A turn streams as `message_start`, a `ping`, one content block per item (per
 * part for a message), `message_delta` with the stop reason and the usage, and
 * `message_stop`; it decodes back to the same items, usage and stop reason.
 * What comes back different is what the decoder makes: item ids
 * (`anthropic_<responseId>_<n>`) and statuses (`completed`, the last item
 * `incomplete` when the turn hit `max_tokens`), the usage's `total` (input plus
 * output), and `providerStopReason`, the reason written. A turn's `cost` is
 * not written: the API reports none.
 *
 * @since 0.1.0
 */
import { ProviderHttp } from "@agentloop/core"
import type { AiError, Item, TokenUsage, Turn } from "@agentloop/core"
import * as ProviderWire from "@agentloop/core/provider/ProviderWire"
import * as Duration from "effect/Duration"
import * as Anthropic from "../Anthropic.ts"
import * as AnthropicCitation from "../AnthropicCitation.ts"
import * as AnthropicDecoder from "../AnthropicDecoder.ts"
import * as AnthropicError from "../AnthropicError.ts"

/**
 * The message id `message_start` carries for a turn without a `responseId`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultResponseId = "msg_agentloop_wire"

/**
 * The model `message_start` names for a turn without a `model`: the layer's default.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultModel = Anthropic.defaultModel

/**
 * A wire usage: the counts of `message_start` and `message_delta`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Usage {
  readonly input_tokens: number
  readonly cache_creation_input_tokens?: number
  readonly cache_read_input_tokens?: number
  readonly output_tokens: number
  readonly output_tokens_details?: { readonly thinking_tokens: number }
}

/**
 * A usage in the API's terms: `input_tokens` are the input tokens neither
 * read from the cache nor written to it, `cache_read_input_tokens` (written
 * only when the usage has a `cachedInput`) those read from it and
 * `cache_creation_input_tokens` (only when it has a `cacheWrite`) those
 * written to it. Reasoning tokens are part of `output_tokens`, and their count
 * (only when the usage has a `reasoning`) is `output_tokens_details.thinking_tokens`.
 * Throws when the cache's counts together are more than `input`.
 *
 * @since 0.1.0
 * @category wire
 */
export const usage = (usage: TokenUsage.TokenUsage): Usage => {
  const cached = (usage.cachedInput ?? 0) + (usage.cacheWrite ?? 0)
  if (cached > usage.input) {
    throw new Error(
      `AnthropicWire: a usage with more cache reads and writes (${cached}) than input (${usage.input}) has no wire form`
    )
  }
  return {
    input_tokens: usage.input - cached,
    ...(usage.cacheWrite === undefined ? {} : { cache_creation_input_tokens: usage.cacheWrite }),
    ...(usage.cachedInput === undefined ? {} : { cache_read_input_tokens: usage.cachedInput }),
    output_tokens: usage.output,
    ...(usage.reasoning === undefined ? {} : { output_tokens_details: { thinking_tokens: usage.reasoning } })
  }
}

/** One SSE frame of an event: its `type` as the `event:` line and in the JSON. */
const frame = (type: string, fields: Record<string, unknown> = {}): string =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`

/** The frames of the content block at `index`: its start, its deltas, its stop. */
const block = (
  index: number,
  start: Record<string, unknown>,
  deltas: ReadonlyArray<Record<string, unknown>>
): Array<string> => [
  frame("content_block_start", { index, content_block: start }),
  ...deltas.map((delta) => frame("content_block_delta", { index, delta })),
  frame("content_block_stop", { index })
]

/** The block types the decoder reads into items of their own: an extension item of one of these would come back as that item. */
const modelledBlocks: ReadonlySet<string> = new Set(["text", "thinking", "redacted_thinking", "tool_use"])

const unsupported = (position: number, item: Item.Item, why: string): Error =>
  new Error(`AnthropicWire: item ${position} (${item.type} ${JSON.stringify(item.id)}) has no wire form: ${why}`)

/** The content blocks of `item`, the first at `index`, each with its frames; throws on an item the API cannot stream. */
const blocksOf = (
  item: Item.Item,
  position: number,
  previous: Item.Item | undefined,
  index: number,
  size: number
): Array<Array<string>> => {
  switch (item.type) {
    case "message": {
      if (item.role !== "assistant") {
        throw unsupported(position, item, `the model streams only assistant content, not a ${item.role} message`)
      }
      if (item.phase !== undefined) {
        throw unsupported(position, item, `the Messages API has no phase ("${item.phase}")`)
      }
      if (item.content.length === 0) {
        throw unsupported(position, item, "a message streams as text blocks, one per part, and this one has no part")
      }
      if (previous?.type === "message") {
        throw unsupported(
          position,
          item,
          "it follows another message, and consecutive text blocks decode as one message: put the parts in one message"
        )
      }
      return item.content.map((part, i) => {
        if (part.type === "refusal") {
          throw unsupported(
            position,
            item,
            "a refusal part: Anthropic refuses with stop_reason \"refusal\" (stopReason \"content_filter\"), not with content"
          )
        }
        if (part.type !== "output_text") {
          throw unsupported(position, item, `an ${part.type} part: the model writes output_text`)
        }
        // The API streams a block's citations before its text.
        const citations = (part.annotations ?? []).map((citation) => {
          const written = AnthropicCitation.toWire(citation)
          if (written !== undefined) return written
          throw unsupported(position, item, `a citation the API did not send (${citation.type}, no x-anthropic.* data)`)
        })
        return block(
          index + i,
          citations.length === 0 ? { type: "text", text: "" } : { type: "text", text: "", citations: [] },
          [
            ...citations.map((citation) => ({ type: "citations_delta", citation })),
            ...ProviderWire.pieces(part.text, size).map((text) => ({ type: "text_delta", text }))
          ]
        )
      })
    }
    case "reasoning": {
      if (item.summary !== undefined) {
        throw unsupported(position, item, "a reasoning summary: Anthropic streams thinking, which has none")
      }
      const [part, ...rest] = item.content
      if (part === undefined) {
        if (item.encrypted_content === undefined) {
          throw unsupported(
            position,
            item,
            "a reasoning item with no content is a redacted_thinking block, whose data it lacks"
          )
        }
        return [block(index, { type: "redacted_thinking", data: item.encrypted_content }, [])]
      }
      if (rest.length > 0 || part.type !== "output_text") {
        throw unsupported(position, item, "a thinking block is one output_text part, and this reasoning is not")
      }
      const signature = item.encrypted_content === undefined
        ? []
        : [{ type: "signature_delta", signature: item.encrypted_content }]
      return [block(index, { type: "thinking", thinking: "" }, [
        ...ProviderWire.pieces(part.text, size).map((thinking) => ({ type: "thinking_delta", thinking })),
        ...signature
      ])]
    }
    case "function_call": {
      if (item.arguments === "") {
        throw unsupported(
          position,
          item,
          "empty arguments: a tool_use block's input is JSON, and the decoder reads none as \"{}\""
        )
      }
      return [block(
        index,
        { type: "tool_use", id: item.call_id, name: item.name, input: {} },
        ProviderWire.pieces(item.arguments, size).map((partial_json) => ({ type: "input_json_delta", partial_json }))
      )]
    }
    case "function_call_output":
      throw unsupported(
        position,
        item,
        "a call's output is the application's, sent in the next request, never streamed"
      )
    default: {
      if (!AnthropicDecoder.isContentBlockExtension(item)) {
        throw unsupported(
          position,
          item,
          `only the content blocks the decoder keeps (${AnthropicDecoder.extensionPrefix}…) are streamed`
        )
      }
      const type = item.type.slice(AnthropicDecoder.extensionPrefix.length)
      if (item.data.type !== type || modelledBlocks.has(type)) {
        throw unsupported(
          position,
          item,
          `its data must be a ${type} block (type "${type}"), not one the decoder reads into another item`
        )
      }
      // A block with an input (a server tool's call) streams it, as the API does, and the decoder assembles it.
      const input = "input" in item.data ? JSON.stringify(item.data.input) : undefined
      return input === undefined
        ? [block(index, item.data, [])]
        : [
          block(
            index,
            { ...item.data, input: {} },
            ProviderWire.pieces(input, size).map((partial_json) => ({ type: "input_json_delta", partial_json }))
          )
        ]
    }
  }
}

/**
 * The `stop_reason` the decoder reads back as the turn's `stopReason`: its
 * `providerStopReason` when it maps there, else `end_turn`, `tool_use`,
 * `max_tokens`, `refusal` or `pause_turn` (`other`). Throws for
 * `malformed_tool_call`, which no reason maps to, and for `tool_calls` without
 * a call, which the decoder reads as `stop`.
 *
 * @since 0.1.0
 * @category wire
 */
export const stopReason = (turn: Turn.Turn): string => {
  const hasCalls = turn.items.some((item) => item.type === "function_call")
  const provider = turn.providerStopReason
  if (provider !== undefined && AnthropicDecoder.stopReason(provider, hasCalls) === turn.stopReason) return provider
  switch (turn.stopReason) {
    case "stop":
      return "end_turn"
    case "tool_calls":
      if (!hasCalls) throw new Error("AnthropicWire: a turn that stopped for tool_calls has no function_call item")
      return "tool_use"
    case "max_tokens":
      return "max_tokens"
    case "content_filter":
      return "refusal"
    case "other":
      return "pause_turn"
    case "malformed_tool_call":
      throw new Error("AnthropicWire: the Messages API has no stop_reason for a malformed_tool_call turn")
  }
}

/**
 * The frames of `turn`, its text, thinking and arguments in pieces of
 * `chunkSize` characters (code points). Throws on what the API does not
 * stream: a user, system or developer message, a call's output, a refusal
 * part, a phase, a reasoning summary, an application's own `x-` item, two
 * messages in a row (they would decode as one), a call with empty arguments.
 */
const turnFrames = (turn: Turn.Turn, options: ProviderWire.TurnOptions = {}): ReadonlyArray<string> => {
  const size = options.chunkSize ?? 16
  if (!Number.isSafeInteger(size) || size < 1) {
    throw new Error(`AnthropicWire: chunkSize must be a positive integer, not ${size}`)
  }
  const counts = usage(turn.usage)
  const reason = stopReason(turn)
  const blocks: Array<Array<string>> = []
  turn.items.forEach((item, position) => {
    blocks.push(...blocksOf(item, position, turn.items[position - 1], blocks.length, size))
  })
  const start = [
    frame("message_start", {
      message: {
        id: turn.responseId ?? defaultResponseId,
        type: "message",
        role: "assistant",
        content: [],
        model: turn.model ?? defaultModel,
        stop_reason: null,
        stop_sequence: null,
        usage: { ...counts, output_tokens: 0 }
      }
    }),
    frame("ping")
  ]
  if (options.complete === false) return [...start, ...blocks.flat()]
  const end = [
    frame("message_delta", { delta: { stop_reason: reason, stop_sequence: null }, usage: counts }),
    frame("message_stop")
  ]
  return [...start, ...blocks.flat(), ...end]
}

/** The turn of the error streams: nothing before the break. */
const empty: Turn.Turn = { items: [], usage: { input: 0, output: 0, total: 0 }, stopReason: "stop" }

const eventStream = { "content-type": "text/event-stream", "cache-control": "no-cache" }

/** An error response: Anthropic's body (`{"type": "error", "error": {type, message}}`) with `status`. */
const errorAnswer = (
  status: number,
  type: string,
  message: string,
  retryAfter?: Duration.Duration | undefined
): ProviderWire.HttpAnswer => ({
  status,
  headers: {
    "content-type": "application/json",
    // Whole seconds, as Anthropic sends them: a wait of a second and a half asks for two.
    ...(retryAfter === undefined || !Duration.isFinite(retryAfter)
      ? {}
      : { "retry-after": String(Math.ceil(Duration.toSeconds(retryAfter))) })
  },
  body: JSON.stringify({ type: "error", error: { type, message } })
})

/** Statuses `fromHttpStatus` reads as another error than `InvalidRequest`. */
const notInvalidRequest: ReadonlySet<number> = new Set([401, 403, 408, 413, 429])

/**
 * The answer with which Anthropic reports `error`. Errors that HTTP reports
 * are an error body with the status and type the layer maps back:
 * `authentication_error` (401) or `permission_error` (403), `rate_limit_error`
 * (429), `timeout_error` (504), a prompt too long (`invalid_request_error`,
 * 400, the message prefixed with "prompt is too long: " unless it already says
 * so), `invalid_request_error` (its 4xx status, else 400) or `not_found_error`
 * (404), `overloaded_error` (529) or `api_error` (its 5xx status, else 500),
 * `billing_error` (402); a `retry-after` in whole seconds, rounded up. Errors
 * inside a stream are a `200` event stream: an event whose data is not JSON,
 * named by the `MalformedEvent`'s `event`, or a stream that stops before
 * `message_stop`.
 *
 * The layer's messages are its own for those two, and for `Unavailable` (529),
 * `ContextLengthExceeded` and `QuotaExceeded` it appends the error type
 * (`"Overloaded (overloaded_error)"`); an `InvalidRequest` saying the prompt is
 * too long or the credit balance too low comes back as what it says.
 */
const errorAnswerOf = (error: AiError.AiError): ProviderWire.HttpAnswer => {
  const { message } = error
  switch (error._tag) {
    case "AuthFailed":
      return error.status === 403
        ? errorAnswer(403, "permission_error", message)
        : errorAnswer(401, "authentication_error", message)
    case "RateLimited":
      return errorAnswer(429, "rate_limit_error", message, error.retryAfter)
    case "Timeout":
      return errorAnswer(504, "timeout_error", message)
    case "ContextLengthExceeded":
      return errorAnswer(
        400,
        "invalid_request_error",
        ProviderHttp.isContextLengthMessage(message) ? message : `prompt is too long: ${message}`
      )
    case "InvalidRequest": {
      const status = error.status
      if (status === 404) return errorAnswer(404, "not_found_error", message)
      return status !== undefined && status >= 400 && status < 500 && !notInvalidRequest.has(status)
        ? errorAnswer(status, "invalid_request_error", message)
        : errorAnswer(400, "invalid_request_error", message)
    }
    case "Unavailable": {
      const status = error.status
      if (status === AnthropicError.overloadedStatus) {
        return errorAnswer(status, "overloaded_error", message, error.retryAfter)
      }
      // A 504 would be a Timeout.
      return errorAnswer(
        status !== undefined && status >= 500 && status !== 504 ? status : 500,
        "api_error",
        message,
        error.retryAfter
      )
    }
    case "QuotaExceeded":
      return errorAnswer(
        error.status !== undefined && error.status >= 400 ? error.status : 402,
        "billing_error",
        message
      )
    case "MalformedEvent": {
      // An event cut short: its data is not JSON. The decoder names it by its `event:` line.
      const name = error.event.replace(/[\r\n]/g, " ")
      const data = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":${
        JSON.stringify(message)
      }`
      return {
        status: 200,
        headers: eventStream,
        body: [...turnFrames(empty, { complete: false }), `event: ${name}\ndata: ${data}\n\n`].join("")
      }
    }
    case "IncompleteTurn":
      return { status: 200, headers: eventStream, body: turnFrames(empty, { complete: false }).join("") }
  }
}

/**
 * The Messages API's wire format, for `ProviderServer`: `turn` writes a turn's
 * frames (and throws on an item the API does not stream), `error` the answer
 * that reports an error; see the module's documentation for what comes back.
 *
 * @example
 * ```ts
 * import { AnthropicWire } from "@agentloop/anthropic/testing"
 * import { AiError } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 *
 * // A turn as the API streams it, in pieces of 4 characters...
 * const frames = AnthropicWire.wire.turn(MockLanguageModel.textTurn("Hello, world"), { chunkSize: 4 })
 * console.log(frames.length) // 9
 * // ...and an error as the API answers it.
 * const answer = AnthropicWire.wire.error(new AiError.RateLimited({ provider: "anthropic", message: "slow down" }))
 * console.log(answer.status) // 429
 * ```
 *
 * @since 0.1.0
 * @category wire
 */
export const wire: ProviderWire.ProviderWire = {
  provider: AnthropicError.provider,
  turn: turnFrames,
  error: errorAnswerOf
}
