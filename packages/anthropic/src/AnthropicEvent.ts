/**
 * The streaming events of the Anthropic Messages API, as `Schema`s.
 *
 * Every event is a JSON object whose `type` says what it is (`message_start`,
 * `content_block_delta`, …): the decoder reads that field, never the SSE
 * `event:` line, which proxies and recorders drop. An event is decoded in two
 * steps, by its `type` first and then with the schema of that type; content
 * blocks and deltas likewise, so a malformed text delta is an error rather than
 * an unknown delta. Only the fields the provider reads are declared: fields
 * added to the API do not break decoding.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A content block's position in the message (`index`): a non-negative
 * integer. Positions key maps, never arrays, so an index near 2^32 costs what
 * index 0 costs.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Index = Schema.Number.check(
  Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= 0, { expected: "a non-negative integer" })
)

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Token counts. `input_tokens` are the input tokens read neither from nor into
 * the prompt cache; the cache's own counts are apart. `output_tokens` counts
 * thinking too, and `output_tokens_details.thinking_tokens` (sent by newer
 * models) how much of it was thinking. In `message_delta` every count is
 * cumulative, and the input counts may be missing.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Usage = Schema.Struct({
  input_tokens: Schema.optionalKey(Schema.NullOr(Count)),
  output_tokens: Schema.optionalKey(Schema.NullOr(Count)),
  cache_creation_input_tokens: Schema.optionalKey(Schema.NullOr(Count)),
  cache_read_input_tokens: Schema.optionalKey(Schema.NullOr(Count)),
  output_tokens_details: Schema.optionalKey(
    Schema.NullOr(Schema.Struct({ thinking_tokens: Schema.optionalKey(Schema.NullOr(Count)) }))
  )
})
export type Usage = typeof Usage.Type

/**
 * An error: what an HTTP error body and an in-stream `error` event carry. `type` is its class (`overloaded_error`, …).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorObject = Schema.Struct({ type: Schema.String, message: Schema.String })
export type ErrorObject = typeof ErrorObject.Type

/**
 * The body of an HTTP error response (`{"type": "error", "error": {…}, "request_id": …}`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorBody = Schema.Struct({ error: ErrorObject })

/**
 * Anything with a `type`: an event, a content block or a delta before its type picks its schema.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Typed = Schema.Struct({ type: Schema.String })

/**
 * A JSON object: a content block this layer does not model, kept as it came.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonObject = Schema.Record(Schema.String, Schema.Unknown)
export type JsonObject = typeof JsonObject.Type

/**
 * `message_start`: the message's id and model, and the usage so far (the input counts, one output token).
 *
 * @since 0.1.0
 * @category schemas
 */
export const MessageStart = Schema.Struct({
  message: Schema.Struct({
    id: Schema.optionalKey(Schema.String),
    model: Schema.optionalKey(Schema.String),
    usage: Schema.optionalKey(Schema.NullOr(Usage))
  })
})

/**
 * `content_block_start`: a block opens at `index`; its `type` then picks its schema.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentBlockStart = Schema.Struct({ index: Index, content_block: Typed })

/**
 * A piece of a content block: its `type` says which field carries it
 * (`text_delta` its `text`, `thinking_delta` its `thinking`, `signature_delta`
 * its `signature`, `input_json_delta` its `partial_json`, `citations_delta`
 * its `citation`, read by `AnthropicCitation`; see {@link TextDelta}
 * and the others). One struct rather than a union: a long answer is a run of
 * text deltas, and each should cost one check.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Delta = Schema.Struct({
  type: Schema.String,
  text: Schema.optionalKey(Schema.String),
  thinking: Schema.optionalKey(Schema.String),
  signature: Schema.optionalKey(Schema.String),
  partial_json: Schema.optionalKey(Schema.String),
  citation: Schema.optionalKey(Schema.Unknown)
})
export type Delta = typeof Delta.Type

/**
 * `content_block_delta`: a piece of the block at `index`.
 *
 * @example
 * ```ts
 * import { AnthropicEvent } from "@agentloop/anthropic"
 * import { Schema } from "effect"
 *
 * // The `data` of a `content_block_delta` event, as the Messages API streams it.
 * const event = Schema.decodeUnknownSync(AnthropicEvent.ContentBlockDelta)({
 *   type: "content_block_delta",
 *   index: 0,
 *   delta: { type: "text_delta", text: "Hello" }
 * })
 * console.log(event.index, event.delta.type) // 0 text_delta
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentBlockDelta = Schema.Struct({ index: Index, delta: Delta })

/**
 * `content_block_stop`: the block at `index` is complete.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentBlockStop = Schema.Struct({ index: Index })

/**
 * `message_delta`: the stop reason (`end_turn`, `tool_use`, `max_tokens`, …;
 * a string, so that a reason added later does not fail the turn) and the
 * cumulative usage.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MessageDelta = Schema.Struct({
  delta: Schema.Struct({
    stop_reason: Schema.optionalKey(Schema.NullOr(Schema.String)),
    stop_sequence: Schema.optionalKey(Schema.NullOr(Schema.String))
  }),
  usage: Schema.optionalKey(Schema.NullOr(Usage))
})

/**
 * `error`: the stream failed after its `200` (`overloaded_error` when the API is overloaded).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorEvent = Schema.Struct({ error: ErrorObject })

/**
 * The most citations read from one text block: the rest are skipped.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxCitations = 4096

/**
 * A text block; its text usually starts empty and grows by `text_delta`s, its
 * `citations` (when the request enabled them) by `citations_delta`s.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TextBlock = Schema.Struct({
  type: Schema.Literal("text"),
  text: Schema.String,
  citations: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Unknown)))
})

/**
 * A thinking block; its signature, which the API wants back with it, comes by `signature_delta`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ThinkingBlock = Schema.Struct({
  type: Schema.Literal("thinking"),
  thinking: Schema.String,
  signature: Schema.optionalKey(Schema.NullOr(Schema.String))
})

/**
 * Thinking the safety systems encrypted: nothing to read, `data` to send back as it came.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RedactedThinkingBlock = Schema.Struct({ type: Schema.Literal("redacted_thinking"), data: Schema.String })

/**
 * A call of a client tool; its `input` is `{}` here and streams as `input_json_delta`s.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ToolUseBlock = Schema.Struct({
  type: Schema.Literal("tool_use"),
  id: Schema.String,
  name: Schema.String,
  input: Schema.optionalKey(Schema.Unknown)
})

/**
 * `text_delta`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TextDelta = Schema.Struct({ text: Schema.String })

/**
 * `thinking_delta`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ThinkingDelta = Schema.Struct({ thinking: Schema.String })

/**
 * `signature_delta`: the thinking block's signature.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SignatureDelta = Schema.Struct({ signature: Schema.String })

/**
 * `input_json_delta`: a piece of a tool call's input, JSON text that is whole only once the block stops.
 *
 * @since 0.1.0
 * @category schemas
 */
export const InputJsonDelta = Schema.Struct({ partial_json: Schema.String })
