/**
 * The errors of Chat Completions servers as `AiError`s. Servers agree on
 * little here: OpenAI names an error by its `code` and `type`, OpenRouter by a
 * numeric `code` (its HTTP status), Google by an upper-case `status`,
 * llama.cpp by a numeric `code` and a `type`; so every name an error carries
 * is read, case aside, and a numeric code maps as its HTTP status would.
 *
 * @since 0.2.0
 */
import { AiError, ProviderHttp } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ChatCompletionsChunk from "./ChatCompletionsChunk.ts"

/**
 * The provider's name in errors and on `LanguageModel.provider`.
 *
 * @since 0.2.0
 * @category constants
 */
export const provider = "chat-completions"

type Kind = "quota" | "rate" | "context" | "auth" | "forbidden" | "timeout" | "unavailable" | "invalid"

/** What an error's name says, for the names servers use (lower-cased). */
const kinds: ReadonlyMap<string, Kind> = new Map<string, Kind>([
  ["insufficient_quota", "quota"],
  ["quota_exceeded", "quota"],
  ["insufficient_balance", "quota"],
  ["billing_hard_limit_reached", "quota"],
  ["billing_error", "quota"],
  ["payment_required", "quota"],
  ["rate_limit_exceeded", "rate"],
  ["rate_limit_error", "rate"],
  ["rate_limited", "rate"],
  ["too_many_requests", "rate"],
  ["resource_exhausted", "rate"],
  ["tokens", "rate"],
  ["requests", "rate"],
  ["context_length_exceeded", "context"],
  ["exceed_context_size_error", "context"],
  ["request_too_large", "context"],
  ["invalid_api_key", "auth"],
  ["authentication_error", "auth"],
  ["invalid_authentication", "auth"],
  ["unauthenticated", "auth"],
  ["unauthorized", "auth"],
  ["permission_denied", "forbidden"],
  ["permission_error", "forbidden"],
  ["forbidden", "forbidden"],
  ["timeout", "timeout"],
  ["timeout_error", "timeout"],
  ["request_timeout", "timeout"],
  ["deadline_exceeded", "timeout"],
  ["server_error", "unavailable"],
  ["internal_error", "unavailable"],
  ["internal_server_error", "unavailable"],
  ["internal", "unavailable"],
  ["api_error", "unavailable"],
  ["service_unavailable", "unavailable"],
  ["service_unavailable_error", "unavailable"],
  ["unavailable", "unavailable"],
  ["overloaded", "unavailable"],
  ["overloaded_error", "unavailable"],
  ["model_overloaded", "unavailable"],
  ["upstream_error", "unavailable"],
  ["bad_gateway", "unavailable"],
  ["invalid_request_error", "invalid"],
  ["invalid_request", "invalid"],
  ["invalid_argument", "invalid"],
  ["bad_request", "invalid"],
  ["badrequesterror", "invalid"],
  ["not_found", "invalid"],
  ["not_found_error", "invalid"],
  ["model_not_found", "invalid"],
  ["tool_use_failed", "invalid"],
  ["content_filter", "invalid"],
  ["validation", "invalid"]
])

/** The text of a message a server may send as anything (a string, an object, nothing). */
const textOf = (message: unknown): string =>
  typeof message === "string" ? message : message === undefined || message === null ? "" : JSON.stringify(message)

/** A numeric code that reads as an HTTP status (`429`, `"503"`). */
const statusOf = (code: string | number | null | undefined): number | undefined => {
  const status = typeof code === "number" ? code : typeof code === "string" && /^\d{3}$/.test(code) ? Number(code) : NaN
  return Number.isInteger(status) && status >= 400 && status <= 599 ? status : undefined
}

/**
 * Whether an error message says the prompt does not fit: the usual wordings,
 * and llama.cpp's "the request exceeds the available context size".
 *
 * @since 0.2.0
 * @category predicates
 */
export const isContextLengthMessage = (message: string): boolean =>
  ProviderHttp.isContextLengthMessage(message) || /context size|context limit/i.test(message)

/**
 * The error an error object stands for: the first of its `code`, `type` and
 * `status` that names a known kind (`insufficient_quota` → `QuotaExceeded`,
 * `rate_limit_exceeded` → `RateLimited`, `context_length_exceeded` →
 * `ContextLengthExceeded`, `invalid_api_key` → `AuthFailed`, `server_error` →
 * `Unavailable`, `invalid_request_error` → `InvalidRequest`, …), else its numeric
 * code read as an HTTP status, else a message about the context window, else
 * the server's failure (`Unavailable`). `status` is the HTTP status it came
 * with, if any.
 *
 * @since 0.2.0
 * @category mapping
 */
export const fromObject = (error: ChatCompletionsChunk.ErrorValue, status?: number): AiError.AiError => {
  const object = typeof error === "string" ? { message: error } : error
  const text = textOf(object.message)
  const names = [object.code, object.type, object.status].flatMap((name) =>
    typeof name === "string" && statusOf(name) === undefined ? [name] : []
  )
  const named = names.find((name) => kinds.has(name.toLowerCase()))
  const message = named === undefined ? text : `${text} (${named})`
  const code = statusOf(object.code) ?? statusOf(object.status) ?? status
  const withStatus = code === undefined ? {} : { status: code }
  switch (named === undefined ? undefined : kinds.get(named.toLowerCase())) {
    case "quota":
      return new AiError.QuotaExceeded({ provider, message, ...withStatus })
    case "rate":
      return new AiError.RateLimited({ provider, message })
    case "context":
      return new AiError.ContextLengthExceeded({ provider, message })
    case "auth":
      return new AiError.AuthFailed({ provider, status: code ?? 401, message })
    case "forbidden":
      return new AiError.AuthFailed({ provider, status: code ?? 403, message })
    case "timeout":
      return new AiError.Timeout({ provider, message })
    case "unavailable":
      return new AiError.Unavailable({ provider, message, ...withStatus })
    case "invalid":
      return isContextLengthMessage(text)
        ? new AiError.ContextLengthExceeded({ provider, message })
        : new AiError.InvalidRequest({ provider, message, ...withStatus })
    case undefined:
      if (code === 402) return new AiError.QuotaExceeded({ provider, status: code, message })
      if (code !== undefined) {
        return AiError.fromHttpStatus({
          provider,
          status: code,
          message,
          contextLengthExceeded: isContextLengthMessage(text)
        })
      }
      return isContextLengthMessage(text)
        ? new AiError.ContextLengthExceeded({ provider, message })
        : new AiError.Unavailable({ provider, message: message === "" ? "the server reported an error" : message })
  }
}

const decodeEnvelope = Schema.decodeUnknownResult(ChatCompletionsChunk.ErrorEnvelope)
const decodeObject = Schema.decodeUnknownResult(ChatCompletionsChunk.ErrorObject)
const decodeJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))

/**
 * The error a JSON text holds, in the shapes servers write one:
 * `{ error: {...} }` (OpenAI and most), an array of those (Google), or the
 * error object itself (vLLM, Mistral, llama.cpp's `error:` line);
 * `undefined` when it is not JSON or none of these.
 *
 * @since 0.2.0
 * @category decoding
 */
export const errorOf = (text: string): ChatCompletionsChunk.ErrorValue | undefined => {
  const json = decodeJson(text)
  if (Result.isFailure(json)) return undefined
  const value = Array.isArray(json.success) ? json.success[0] : json.success
  const envelope = decodeEnvelope(value)
  if (Result.isSuccess(envelope)) return envelope.success.error
  const object = decodeObject(value)
  return Result.isSuccess(object) ? object.success : undefined
}

/**
 * Reads an HTTP error response where the status alone says too little: a
 * quota or credit error (`insufficient_quota` on a 429, OpenRouter's and
 * DeepSeek's 402) is `QuotaExceeded`, a 400 whose error says the prompt does
 * not fit (`context_length_exceeded`, llama.cpp's `exceed_context_size_error`)
 * `ContextLengthExceeded`. Everything else is read by its status.
 *
 * @example
 * ```ts
 * import { ChatCompletionsError } from "@agentloop/chat-completions"
 *
 * const error = ChatCompletionsError.classify({
 *   provider: "chat-completions",
 *   status: 400,
 *   body: JSON.stringify({ error: { message: "This model's maximum context length is 8192 tokens", code: "context_length_exceeded" } }),
 *   message: "This model's maximum context length is 8192 tokens",
 *   retryAfter: undefined
 * })
 * console.log(error?._tag) // ContextLengthExceeded
 * ```
 *
 * @since 0.2.0
 * @category mapping
 */
export const classify = (failure: ProviderHttp.ErrorResponse): AiError.AiError | undefined => {
  const value = errorOf(failure.body)
  const mapped = value === undefined ? undefined : fromObject(value, failure.status)
  if (failure.status === 402) {
    return new AiError.QuotaExceeded({ provider, status: 402, message: mapped?.message ?? failure.message })
  }
  if (mapped?._tag === "QuotaExceeded") return mapped
  if (mapped?._tag === "ContextLengthExceeded" && failure.status === 400) return mapped
  return undefined
}
