/**
 * The streaming events of the OpenAI Responses API, as `Schema`s.
 *
 * Only the fields the provider reads are declared; other fields are ignored, so
 * additions to the API do not break decoding. Each event is decoded with the
 * schema of its own type (found by its `event:` name, else its JSON `type`);
 * events of other types are skipped. Output items and content parts are decoded
 * in two steps for the same reason: by their `type` first, then with the schema
 * of that type, so a malformed message is an error rather than an unknown item.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A position in the output (`output_index`, `content_index`, `summary_index`):
 * a non-negative integer. Positions key maps, never arrays, so a position near
 * 2^32 costs what position 0 costs.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Index = Schema.Number.check(
  Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= 0, { expected: "a non-negative integer" })
)

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Token usage as the API reports it, and what the request cost when the
 * server says: `cost` in USD (OpenRouter), `cost_in_usd_ticks` in ticks (xAI;
 * see `Cost.ticksPerUsd`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Usage = Schema.Struct({
  input_tokens: Count,
  output_tokens: Count,
  total_tokens: Schema.optionalKey(Count),
  cost: Schema.optionalKey(Schema.NullOr(Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0)))),
  cost_in_usd_ticks: Schema.optionalKey(Schema.NullOr(Count)),
  input_tokens_details: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    cached_tokens: Schema.optionalKey(Count)
  }))),
  output_tokens_details: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    reasoning_tokens: Schema.optionalKey(Count)
  })))
})
export type Usage = typeof Usage.Type

/**
 * The error of a failed response, of an `error` event or of an HTTP error body; `type` is its class (`server_error`, ...).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorObject = Schema.Struct({
  type: Schema.optionalKey(Schema.NullOr(Schema.String)),
  code: Schema.optionalKey(Schema.NullOr(Schema.String)),
  message: Schema.String
})
export type ErrorObject = typeof ErrorObject.Type

/**
 * The body of an HTTP error response.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorBody = Schema.Struct({ error: ErrorObject })

/**
 * A JSON object: an output item or a content part before its `type` picks its schema.
 *
 * @since 0.1.0
 * @category schemas
 */
export const JsonObject = Schema.Record(Schema.String, Schema.Unknown)
export type JsonObject = typeof JsonObject.Type

/**
 * The response object of the lifecycle events. `id` may be missing: servers
 * other than OpenAI's that speak this API leave it off the terminal event.
 * `output` lists the response's items as they are when it is sent: on a
 * terminal event, as they ended.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Response = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.String),
  usage: Schema.optionalKey(Schema.NullOr(Usage)),
  incomplete_details: Schema.optionalKey(Schema.NullOr(Schema.Struct({ reason: Schema.optionalKey(Schema.String) }))),
  error: Schema.optionalKey(Schema.NullOr(ErrorObject)),
  output: Schema.optionalKey(Schema.NullOr(Schema.Array(JsonObject)))
})
export type Response = typeof Response.Type

/**
 * The `type` of an output item or a content part.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Typed = Schema.Struct({ type: Schema.String })

/**
 * The most annotations read from one text part: the rest are skipped.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxAnnotations = 4096

/**
 * Text the model wrote; its `annotations` (citations and file paths) are
 * JSON objects until `ResponsesCitation` reads each with the schema of its
 * type, skipping a kind it does not know or one that does not decode.
 *
 * @since 0.1.0
 * @category schemas
 */
export const OutputTextPart = Schema.Struct({
  type: Schema.Literal("output_text"),
  text: Schema.String,
  annotations: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Unknown)))
})
/**
 * The model's refusal.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RefusalPart = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })

const ItemStatus = Schema.optionalKey(Schema.NullOr(Schema.String))

/**
 * An assistant message. `phase` says whether it is `commentary` or the
 * `final_answer`; it is a string here so that a phase added later does not fail the turn.
 *
 * @since 0.1.0
 * @category schemas
 */
export const MessageItem = Schema.Struct({
  type: Schema.Literal("message"),
  id: Schema.String,
  status: ItemStatus,
  phase: Schema.optionalKey(Schema.NullOr(Schema.String)),
  content: Schema.Array(JsonObject)
})
export type MessageItem = typeof MessageItem.Type

/**
 * A function call; `arguments` is the complete JSON text once the item is done.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FunctionCallItem = Schema.Struct({
  type: Schema.Literal("function_call"),
  id: Schema.String,
  status: ItemStatus,
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export type FunctionCallItem = typeof FunctionCallItem.Type

const TextPart = Schema.Struct({ text: Schema.String })

/**
 * Reasoning: readable summaries, raw reasoning text (some models) and encrypted content to send back.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: Schema.String,
  status: ItemStatus,
  summary: Schema.optionalKey(Schema.Array(TextPart)),
  content: Schema.optionalKey(Schema.NullOr(Schema.Array(TextPart))),
  encrypted_content: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type ReasoningItem = typeof ReasoningItem.Type

/**
 * The response exists (`response.created`, `response.in_progress`): its id and model.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Lifecycle = Schema.Struct({ response: Response })

/**
 * `response.output_item.added` and `.done`: an item, whose `type` then picks its schema.
 *
 * @since 0.1.0
 * @category schemas
 */
export const OutputItemEvent = Schema.Struct({ output_index: Index, item: JsonObject })

/**
 * `response.content_part.added` and `.done`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentPartEvent = Schema.Struct({
  item_id: Schema.String,
  output_index: Index,
  content_index: Index,
  part: JsonObject
})

/**
 * `response.output_text.delta`, `response.refusal.delta`, `response.reasoning_text.delta`.
 *
 * @example
 * ```ts
 * import { ResponsesEvent } from "@agentloop/responses"
 * import { Schema } from "effect"
 *
 * // A `response.output_text.delta` event, as the Responses API streams it.
 * const event = Schema.decodeUnknownSync(ResponsesEvent.ContentDelta)({
 *   type: "response.output_text.delta",
 *   item_id: "msg_1",
 *   output_index: 0,
 *   content_index: 0,
 *   delta: "Hello"
 * })
 * console.log(event.delta) // Hello
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentDelta = Schema.Struct({
  item_id: Schema.String,
  output_index: Index,
  content_index: Index,
  delta: Schema.String
})

/**
 * `response.output_text.annotation.added`: an annotation of a text part, at
 * `annotation_index` in the part's `annotations`.
 *
 * @since 0.2.0
 * @category schemas
 */
export const AnnotationAdded = Schema.Struct({
  item_id: Schema.String,
  output_index: Schema.optionalKey(Index),
  content_index: Index,
  annotation_index: Index,
  annotation: Schema.Unknown
})

/**
 * The output index of the events below, which find their item by it when its
 * id is not one they know (GitHub Copilot gives every event another id).
 */
const OutputIndex = Schema.optionalKey(Index)

/**
 * `response.output_text.done`, `response.reasoning_text.done`: the part's whole text.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentTextDone = Schema.Struct({
  item_id: Schema.String,
  output_index: OutputIndex,
  content_index: Index,
  text: Schema.String
})

/**
 * `response.refusal.done`: the part's whole refusal.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RefusalDone = Schema.Struct({
  item_id: Schema.String,
  output_index: OutputIndex,
  content_index: Index,
  refusal: Schema.String
})

/**
 * `response.reasoning_summary_text.delta`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SummaryDelta = Schema.Struct({
  item_id: Schema.String,
  output_index: OutputIndex,
  summary_index: Index,
  delta: Schema.String
})

/**
 * `response.reasoning_summary_text.done`: the summary part's whole text.
 *
 * @since 0.1.0
 * @category schemas
 */
export const SummaryDone = Schema.Struct({
  item_id: Schema.String,
  output_index: OutputIndex,
  summary_index: Index,
  text: Schema.String
})

/**
 * `response.function_call_arguments.delta`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ArgumentsDelta = Schema.Struct({ item_id: Schema.String, output_index: OutputIndex, delta: Schema.String })

/**
 * `response.function_call_arguments.done`: the whole arguments text.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ArgumentsDone = Schema.Struct({
  item_id: Schema.String,
  output_index: OutputIndex,
  arguments: Schema.String
})

/**
 * `error`: the stream failed. The API reference puts `code` and `message` on
 * the event itself, while the live API sends them nested in `error`; both
 * shapes decode, and an event with neither still fails the turn.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorEvent = Schema.Struct({
  code: Schema.optionalKey(Schema.NullOr(Schema.String)),
  message: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(Schema.NullOr(ErrorObject))
})
