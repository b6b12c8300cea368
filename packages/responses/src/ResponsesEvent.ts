/**
 * The streaming events of the OpenAI Responses API, as `Schema`s.
 *
 * Only the fields the provider reads are declared; other fields are ignored, so
 * additions to the API do not break decoding. An event whose `type` is not one
 * of these decodes as {@link UnknownEvent} and is skipped.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

const Index = Schema.Number

/** Token usage as the API reports it. */
export const Usage = Schema.Struct({
  input_tokens: Schema.Number,
  output_tokens: Schema.Number,
  total_tokens: Schema.optionalKey(Schema.Number),
  input_tokens_details: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    cached_tokens: Schema.optionalKey(Schema.Number)
  }))),
  output_tokens_details: Schema.optionalKey(Schema.NullOr(Schema.Struct({
    reasoning_tokens: Schema.optionalKey(Schema.Number)
  })))
})
export type Usage = typeof Usage.Type

/** The error of a failed response, or of an `error` event; `type` is the error's class (`server_error`, ...). */
export const ErrorObject = Schema.Struct({
  type: Schema.optionalKey(Schema.NullOr(Schema.String)),
  code: Schema.optionalKey(Schema.NullOr(Schema.String)),
  message: Schema.String
})
export type ErrorObject = typeof ErrorObject.Type

/** The response object carried by the lifecycle events. */
export const Response = Schema.Struct({
  id: Schema.String,
  model: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(Schema.String),
  usage: Schema.optionalKey(Schema.NullOr(Usage)),
  incomplete_details: Schema.optionalKey(Schema.NullOr(Schema.Struct({ reason: Schema.optionalKey(Schema.String) }))),
  error: Schema.optionalKey(Schema.NullOr(ErrorObject))
})
export type Response = typeof Response.Type

const knownPartTypes = ["output_text", "refusal"] as const

/** Text the model wrote. */
export const OutputTextPart = Schema.Struct({ type: Schema.Literal("output_text"), text: Schema.String })
/** The model's refusal. */
export const RefusalPart = Schema.Struct({ type: Schema.Literal("refusal"), refusal: Schema.String })
/** A content part of a kind the provider does not map (audio, ...). */
export const OtherPart = Schema.Struct({
  type: Schema.String.check(Schema.makeFilter((type) => !(knownPartTypes as ReadonlyArray<string>).includes(type)))
})
/** A content part of an output message. */
export const ContentPart = Schema.Union([OutputTextPart, RefusalPart, OtherPart])
export type ContentPart = typeof ContentPart.Type

const ItemStatus = Schema.optionalKey(Schema.Literals(["in_progress", "completed", "incomplete"]))

/** An assistant message. */
export const MessageItem = Schema.Struct({
  type: Schema.Literal("message"),
  id: Schema.String,
  status: ItemStatus,
  content: Schema.Array(ContentPart)
})
export type MessageItem = typeof MessageItem.Type

/** A function call; `arguments` is the complete JSON text once the item is done. */
export const FunctionCallItem = Schema.Struct({
  type: Schema.Literal("function_call"),
  id: Schema.String,
  status: ItemStatus,
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String
})
export type FunctionCallItem = typeof FunctionCallItem.Type

const TextPart = Schema.Struct({ type: Schema.String, text: Schema.String })

/** Reasoning: readable summaries, raw reasoning text (some models) and encrypted content to send back. */
export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: Schema.String,
  status: ItemStatus,
  summary: Schema.optionalKey(Schema.Array(TextPart)),
  content: Schema.optionalKey(Schema.NullOr(Schema.Array(TextPart))),
  encrypted_content: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type ReasoningItem = typeof ReasoningItem.Type

const knownItemTypes = ["message", "function_call", "reasoning"] as const

/** An output item of a kind the provider does not map (built-in tool calls, ...). */
export const OtherItem = Schema.Struct({
  type: Schema.String.check(Schema.makeFilter((type) => !(knownItemTypes as ReadonlyArray<string>).includes(type))),
  id: Schema.optionalKey(Schema.String)
})

/** Any output item. */
export const OutputItem = Schema.Union([MessageItem, FunctionCallItem, ReasoningItem, OtherItem])
export type OutputItem = typeof OutputItem.Type

/** Narrows a decoded item (an {@link OtherItem} never has a known `type`). */
export const isMessageItem = (item: OutputItem): item is MessageItem => item.type === "message"
/** Narrows a decoded item. */
export const isFunctionCallItem = (item: OutputItem): item is FunctionCallItem => item.type === "function_call"
/** Narrows a decoded item. */
export const isReasoningItem = (item: OutputItem): item is ReasoningItem => item.type === "reasoning"

const lifecycle = <T extends string>(type: T) =>
  Schema.Struct({ type: Schema.Literal(type), response: Response })

/** `response.created`: the response exists; carries its id and model. */
export const ResponseCreated = lifecycle("response.created")
/** `response.in_progress`. */
export const ResponseInProgress = lifecycle("response.in_progress")
/** `response.completed`: the turn is over; carries the usage. */
export const ResponseCompleted = lifecycle("response.completed")
/** `response.incomplete`: the turn stopped early; `incomplete_details.reason` says why. */
export const ResponseIncomplete = lifecycle("response.incomplete")
/** `response.failed`: the model failed; `error` says why. */
export const ResponseFailed = lifecycle("response.failed")

const itemEvent = <T extends string>(type: T) =>
  Schema.Struct({ type: Schema.Literal(type), output_index: Index, item: OutputItem })

/** `response.output_item.added`. */
export const OutputItemAdded = itemEvent("response.output_item.added")
/** `response.output_item.done`: the finished item. */
export const OutputItemDone = itemEvent("response.output_item.done")

const partEvent = <T extends string>(type: T) =>
  Schema.Struct({
    type: Schema.Literal(type),
    item_id: Schema.String,
    output_index: Index,
    content_index: Index,
    part: ContentPart
  })

/** `response.content_part.added`. */
export const ContentPartAdded = partEvent("response.content_part.added")
/** `response.content_part.done`. */
export const ContentPartDone = partEvent("response.content_part.done")

const contentDelta = <T extends string>(type: T) =>
  Schema.Struct({
    type: Schema.Literal(type),
    item_id: Schema.String,
    output_index: Index,
    content_index: Index,
    delta: Schema.String
  })

/** `response.output_text.delta`. */
export const OutputTextDelta = contentDelta("response.output_text.delta")
/** `response.output_text.done`: the part's whole text. */
export const OutputTextDone = Schema.Struct({
  type: Schema.Literal("response.output_text.done"),
  item_id: Schema.String,
  output_index: Index,
  content_index: Index,
  text: Schema.String
})
/** `response.refusal.delta`. */
export const RefusalDelta = contentDelta("response.refusal.delta")
/** `response.refusal.done`: the part's whole refusal. */
export const RefusalDone = Schema.Struct({
  type: Schema.Literal("response.refusal.done"),
  item_id: Schema.String,
  output_index: Index,
  content_index: Index,
  refusal: Schema.String
})
/** `response.reasoning_text.delta`: raw reasoning, for models that expose it. */
export const ReasoningTextDelta = contentDelta("response.reasoning_text.delta")
/** `response.reasoning_text.done`. */
export const ReasoningTextDone = Schema.Struct({
  type: Schema.Literal("response.reasoning_text.done"),
  item_id: Schema.String,
  output_index: Index,
  content_index: Index,
  text: Schema.String
})

/** `response.function_call_arguments.delta`. */
export const FunctionCallArgumentsDelta = Schema.Struct({
  type: Schema.Literal("response.function_call_arguments.delta"),
  item_id: Schema.String,
  output_index: Index,
  delta: Schema.String
})
/** `response.function_call_arguments.done`: the whole arguments text. */
export const FunctionCallArgumentsDone = Schema.Struct({
  type: Schema.Literal("response.function_call_arguments.done"),
  item_id: Schema.String,
  output_index: Index,
  arguments: Schema.String
})

/** `response.reasoning_summary_text.delta`. */
export const ReasoningSummaryTextDelta = Schema.Struct({
  type: Schema.Literal("response.reasoning_summary_text.delta"),
  item_id: Schema.String,
  output_index: Index,
  summary_index: Index,
  delta: Schema.String
})
/** `response.reasoning_summary_text.done`: the summary part's whole text. */
export const ReasoningSummaryTextDone = Schema.Struct({
  type: Schema.Literal("response.reasoning_summary_text.done"),
  item_id: Schema.String,
  output_index: Index,
  summary_index: Index,
  text: Schema.String
})

/**
 * `error`: the stream failed. The API reference puts `code` and `message` on
 * the event itself, while the live API sends them nested in `error`; both
 * shapes decode, and an event with neither still fails the turn.
 */
export const ErrorEvent = Schema.Struct({
  type: Schema.Literal("error"),
  code: Schema.optionalKey(Schema.NullOr(Schema.String)),
  message: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(Schema.NullOr(ErrorObject))
})

/** The schema of every event type this module knows. */
export const known = [
  ResponseCreated,
  ResponseInProgress,
  ResponseCompleted,
  ResponseIncomplete,
  ResponseFailed,
  OutputItemAdded,
  OutputItemDone,
  ContentPartAdded,
  ContentPartDone,
  OutputTextDelta,
  OutputTextDone,
  RefusalDelta,
  RefusalDone,
  ReasoningTextDelta,
  ReasoningTextDone,
  FunctionCallArgumentsDelta,
  FunctionCallArgumentsDone,
  ReasoningSummaryTextDelta,
  ReasoningSummaryTextDone,
  ErrorEvent
] as const

/** The `type`s this module knows; a known event that does not decode is an error, never skipped. */
export const knownTypes: ReadonlySet<string> = new Set(known.map((schema) => schema.fields.type.literal))

/** An event of a known type. */
export type KnownEvent = typeof known[number]["Type"]

/** An event of a type this module does not know (`response.output_text.annotation.added`, ...); skipped. */
export const UnknownEvent = Schema.Struct({
  type: Schema.String.check(Schema.makeFilter((type) => !knownTypes.has(type)))
})

/** Any streaming event. */
export const Event = Schema.Union([...known, UnknownEvent])
export type Event = typeof Event.Type

/** Narrows a decoded event (an {@link UnknownEvent} never has a known `type`). */
export const isKnown = (event: Event): event is KnownEvent => knownTypes.has(event.type)
