/**
 * The chunks Gemini's `streamGenerateContent?alt=sse` streams back, as
 * `Schema`s: one `GenerateContentResponse` per SSE event, or an error.
 *
 * Only the fields agentloop reads are described; decoding ignores the rest
 * (safety ratings, citation metadata), so new fields on the wire do not
 * break a stream. Enum-like fields (`finishReason`, `blockReason`) decode as
 * strings for the same reason: a value added by Google maps to `"other"` instead
 * of failing the turn.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * One piece of a call's arguments streamed by Vertex AI
 * (`streamFunctionCallArguments`): the value at `jsonPath` (RFC 9535, e.g.
 * `$.city` or `$.stops[0].name`), a string continued by the next piece of the
 * same path while `willContinue` is true.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PartialArg = Schema.Struct({
  jsonPath: Schema.String,
  stringValue: Schema.optionalKey(Schema.String),
  numberValue: Schema.optionalKey(Schema.Number),
  boolValue: Schema.optionalKey(Schema.Boolean),
  nullValue: Schema.optionalKey(Schema.Unknown),
  willContinue: Schema.optionalKey(Schema.Boolean)
})
export type PartialArg = typeof PartialArg.Type

/**
 * A call the model asks for. `args` should be a JSON object, but is any JSON
 * here: arguments of another shape are the model's mistake, for the tool to
 * reject, not a broken stream. Streamed arguments (Vertex AI) come as a part
 * with `name` and `willContinue: true`, then parts with `partialArgs` and no
 * `name`, until one without `willContinue`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const FunctionCall = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  args: Schema.optionalKey(Schema.Unknown),
  partialArgs: Schema.optionalKey(Schema.Array(PartialArg)),
  willContinue: Schema.optionalKey(Schema.Boolean)
})
export type FunctionCall = typeof FunctionCall.Type

/**
 * One part of a candidate's content: text (a thought when `thought` is true)
 * or a function call. `thoughtSignature` is opaque and must be sent back on the
 * same part in the next request.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Part = Schema.Struct({
  text: Schema.optionalKey(Schema.String),
  thought: Schema.optionalKey(Schema.Boolean),
  thoughtSignature: Schema.optionalKey(Schema.String),
  functionCall: Schema.optionalKey(FunctionCall)
})
export type Part = typeof Part.Type

/**
 * One response candidate. `finishReason` appears on the candidate's last chunk
 * only; a SAFETY stop may send no content. `groundingMetadata` is any JSON
 * here: `GeminiGrounding` reads what it can of it, and a shape it does not
 * know costs the citations, never the turn.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Candidate = Schema.Struct({
  content: Schema.optionalKey(Schema.Struct({ parts: Schema.optionalKey(Schema.Array(Part)) })),
  finishReason: Schema.optionalKey(Schema.String),
  groundingMetadata: Schema.optionalKey(Schema.Unknown)
})
export type Candidate = typeof Candidate.Type

/**
 * Token counts. `candidatesTokenCount` excludes `thoughtsTokenCount`;
 * `promptTokenCount` includes `cachedContentTokenCount`.
 *
 * @since 0.1.0
 * @category schemas
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

/**
 * Google's error (a `google.rpc.Status`): the body of a failed HTTP response,
 * and what a stream that fails midway sends as an event. `details` is any JSON
 * here, so that details of a shape not known here (or not an array at all)
 * never cost the code and message; `GeminiError` reads the ones it knows, each
 * on its own, with {@link StatusDetail}.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorDetail = Schema.Struct({
  code: Schema.optionalKey(Schema.Number),
  message: Schema.optionalKey(Schema.String),
  status: Schema.optionalKey(Schema.String),
  details: Schema.optionalKey(Schema.Unknown)
})
export type ErrorDetail = typeof ErrorDetail.Type

/**
 * The body of a failed HTTP response: `{ error }`, or, as Google's streaming
 * methods answer, `[{ error }]`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorBody = Schema.Union([
  Schema.Struct({ error: ErrorDetail }),
  Schema.Array(Schema.Struct({ error: ErrorDetail }))
])
export type ErrorBody = typeof ErrorBody.Type

/**
 * `google.rpc.ErrorInfo`: why a request failed, as a `reason` unique within its `domain` (`API_KEY_INVALID` in `googleapis.com`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const ErrorInfo = Schema.Struct({
  "@type": Schema.Literal("type.googleapis.com/google.rpc.ErrorInfo"),
  reason: Schema.String,
  domain: Schema.String
})
export type ErrorInfo = typeof ErrorInfo.Type

/**
 * `google.rpc.RetryInfo`: how long to wait before a retry, a protobuf `Duration` in its JSON form (`"38s"`, `"1.5s"`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const RetryInfo = Schema.Struct({
  "@type": Schema.Literal("type.googleapis.com/google.rpc.RetryInfo"),
  retryDelay: Schema.String
})
export type RetryInfo = typeof RetryInfo.Type

/**
 * `google.rpc.QuotaFailure`: the quotas a request exceeded, each named by its
 * metric and its limit's id (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`).
 *
 * @since 0.1.0
 * @category schemas
 */
export const QuotaFailure = Schema.Struct({
  "@type": Schema.Literal("type.googleapis.com/google.rpc.QuotaFailure"),
  violations: Schema.Array(Schema.Struct({
    quotaMetric: Schema.optionalKey(Schema.String),
    quotaId: Schema.optionalKey(Schema.String)
  }))
})
export type QuotaFailure = typeof QuotaFailure.Type

/**
 * The entries of an error's `details` that agentloop reads; the others (`Help`, `LocalizedMessage`, …) are skipped.
 *
 * @since 0.1.0
 * @category schemas
 */
export const StatusDetail = Schema.Union([ErrorInfo, RetryInfo, QuotaFailure])
export type StatusDetail = typeof StatusDetail.Type

/**
 * A streamed SSE event: a response chunk or, when `error` is present, the error
 * that ends the stream. One struct rather than a union: every chunk is decoded,
 * and a union would try the error shape first on each of them. `usageMetadata`
 * is a running total repeated on every chunk; the last one counts.
 *
 * @example
 * ```ts
 * import { GeminiEvent } from "@agentloop/gemini"
 * import { Schema } from "effect"
 *
 * // One `GenerateContentResponse` of a `streamGenerateContent?alt=sse` stream.
 * const chunk = Schema.decodeUnknownSync(GeminiEvent.Chunk)({
 *   candidates: [{ content: { role: "model", parts: [{ text: "Hello" }] }, index: 0 }],
 *   usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1, totalTokenCount: 6 }
 * })
 * console.log(chunk.candidates?.[0]?.content?.parts?.[0]?.text) // Hello
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const Chunk = Schema.Struct({
  candidates: Schema.optionalKey(Schema.Array(Candidate)),
  promptFeedback: Schema.optionalKey(Schema.Struct({ blockReason: Schema.optionalKey(Schema.String) })),
  usageMetadata: Schema.optionalKey(UsageMetadata),
  modelVersion: Schema.optionalKey(Schema.String),
  responseId: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(ErrorDetail)
})
export type Chunk = typeof Chunk.Type
