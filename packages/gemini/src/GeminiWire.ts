/**
 * The Gemini `generateContent` wire format, as `Schema`s: the request body sent to
 * `models/{model}:streamGenerateContent?alt=sse` and the `GenerateContentResponse`
 * chunks it streams back, one per SSE event.
 *
 * Only the fields agentloop reads or writes are described; decoding ignores the
 * rest (safety ratings, citations, grounding), so new fields on the wire do not
 * break a stream. Enum-like fields (`finishReason`, `blockReason`) decode as
 * strings for the same reason: a value added by Google maps to `"other"` instead
 * of failing the turn.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** A JSON object: what Gemini accepts as function-call arguments and as a function response. */
export const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

const Count = Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))

/** A call the model asks for. `id` is present only on some models and API versions. */
export const FunctionCall = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  name: Schema.String,
  args: Schema.optionalKey(JsonObject)
})
export type FunctionCall = typeof FunctionCall.Type

/** The result of a call. `response` must be a JSON object: Gemini rejects primitives and arrays. */
export const FunctionResponse = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  name: Schema.String,
  response: JsonObject
})
export type FunctionResponse = typeof FunctionResponse.Type

/**
 * One part of a content: text (a thought when `thought` is true), a function call or
 * a function response. `thoughtSignature` is opaque and must be sent back on the
 * same part in the next request.
 */
export const Part = Schema.Struct({
  text: Schema.optionalKey(Schema.String),
  thought: Schema.optionalKey(Schema.Boolean),
  thoughtSignature: Schema.optionalKey(Schema.String),
  functionCall: Schema.optionalKey(FunctionCall),
  functionResponse: Schema.optionalKey(FunctionResponse)
})
export type Part = typeof Part.Type

/** The author of a content in a request. */
export const Role = Schema.Literals(["user", "model"])
export type Role = typeof Role.Type

/** A turn of the conversation as Gemini sees it. */
export const Content = Schema.Struct({
  role: Schema.optionalKey(Role),
  parts: Schema.Array(Part)
})
export type Content = typeof Content.Type

/** A tool the model may call; the parameters are plain JSON Schema. */
export const FunctionDeclaration = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parametersJsonSchema: Schema.optionalKey(Schema.Unknown)
})
export type FunctionDeclaration = typeof FunctionDeclaration.Type

/** Gemini's thinking switches: a level (Gemini 3), a token budget (Gemini 2.5), and whether to stream thoughts. */
export const ThinkingConfig = Schema.Struct({
  includeThoughts: Schema.optionalKey(Schema.Boolean),
  thinkingBudget: Schema.optionalKey(Schema.Number),
  thinkingLevel: Schema.optionalKey(Schema.Literals(["minimal", "low", "medium", "high"]))
})
export type ThinkingConfig = typeof ThinkingConfig.Type

/** Sampling, length, structured output and thinking parameters. */
export const GenerationConfig = Schema.Struct({
  temperature: Schema.optionalKey(Schema.Number),
  topP: Schema.optionalKey(Schema.Number),
  maxOutputTokens: Schema.optionalKey(Schema.Number),
  stopSequences: Schema.optionalKey(Schema.Array(Schema.String)),
  responseMimeType: Schema.optionalKey(Schema.String),
  responseJsonSchema: Schema.optionalKey(Schema.Unknown),
  thinkingConfig: Schema.optionalKey(ThinkingConfig)
})
export type GenerationConfig = typeof GenerationConfig.Type

/** Which functions the model may or must call. */
export const ToolConfig = Schema.Struct({
  functionCallingConfig: Schema.Struct({
    mode: Schema.Literals(["AUTO", "ANY", "NONE"]),
    allowedFunctionNames: Schema.optionalKey(Schema.Array(Schema.String))
  })
})
export type ToolConfig = typeof ToolConfig.Type

/** The body of a `streamGenerateContent` request. */
export const GenerateContentRequest = Schema.Struct({
  contents: Schema.Array(Content),
  systemInstruction: Schema.optionalKey(Content),
  tools: Schema.optionalKey(Schema.Array(Schema.Struct({ functionDeclarations: Schema.Array(FunctionDeclaration) }))),
  toolConfig: Schema.optionalKey(ToolConfig),
  generationConfig: Schema.optionalKey(GenerationConfig)
})
export type GenerateContentRequest = typeof GenerateContentRequest.Type

/** A candidate's content as streamed: a SAFETY stop may send it without parts, or not at all. */
export const CandidateContent = Schema.Struct({
  role: Schema.optionalKey(Schema.String),
  parts: Schema.optionalKey(Schema.Array(Part))
})
export type CandidateContent = typeof CandidateContent.Type

/** One response candidate. `finishReason` appears on the candidate's last chunk only. */
export const Candidate = Schema.Struct({
  index: Schema.optionalKey(Schema.Number),
  content: Schema.optionalKey(CandidateContent),
  finishReason: Schema.optionalKey(Schema.String),
  finishMessage: Schema.optionalKey(Schema.String)
})
export type Candidate = typeof Candidate.Type

/**
 * Token counts. `candidatesTokenCount` excludes `thoughtsTokenCount`;
 * `promptTokenCount` includes `cachedContentTokenCount`.
 */
export const UsageMetadata = Schema.Struct({
  promptTokenCount: Schema.optionalKey(Count),
  candidatesTokenCount: Schema.optionalKey(Count),
  cachedContentTokenCount: Schema.optionalKey(Count),
  thoughtsTokenCount: Schema.optionalKey(Count),
  toolUsePromptTokenCount: Schema.optionalKey(Count),
  totalTokenCount: Schema.optionalKey(Count)
})
export type UsageMetadata = typeof UsageMetadata.Type

/** Why the prompt itself was refused; sent only when no candidate was generated. */
export const PromptFeedback = Schema.Struct({
  blockReason: Schema.optionalKey(Schema.String)
})
export type PromptFeedback = typeof PromptFeedback.Type

/** One streamed chunk: the SSE `data` of `streamGenerateContent?alt=sse`. */
export const GenerateContentResponse = Schema.Struct({
  candidates: Schema.optionalKey(Schema.Array(Candidate)),
  promptFeedback: Schema.optionalKey(PromptFeedback),
  usageMetadata: Schema.optionalKey(UsageMetadata),
  modelVersion: Schema.optionalKey(Schema.String),
  responseId: Schema.optionalKey(Schema.String)
})
export type GenerateContentResponse = typeof GenerateContentResponse.Type

/** Google's error: the body of a failed HTTP response, and what a stream that fails midway sends as an event. */
export const ErrorDetail = Schema.Struct({
  code: Schema.optionalKey(Schema.Number),
  message: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(Schema.String)
})
export type ErrorDetail = typeof ErrorDetail.Type

/**
 * A streamed SSE event: a response chunk or, when `error` is present, the error
 * that ends the stream. One struct rather than a union: every chunk is decoded,
 * and a union would try the error shape first on each of them.
 */
export const StreamEvent = Schema.Struct({
  ...GenerateContentResponse.fields,
  error: Schema.optionalKey(ErrorDetail)
})
export type StreamEvent = typeof StreamEvent.Type
