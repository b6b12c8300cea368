/**
 * The errors of the Responses API as `AiError`s: an error object's `code`
 * (else its `type`) says which, whether it came in an HTTP error body, a
 * `response.failed` or an `error` event. `insufficient_quota` is
 * `AiError.QuotaExceeded` in all three: no retry can help.
 *
 * @since 0.1.0
 */
import { AiError, type ProviderHttp } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ResponsesEvent from "./ResponsesEvent.ts"

/**
 * The provider name in errors.
 *
 * @since 0.1.0
 * @category constants
 */
export const provider = "openai"

/**
 * Maps an error object to its error; one that names neither a code nor a type
 * is taken as the server's. `status` is the HTTP status it came with, if any.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromObject = (error: ResponsesEvent.ErrorObject, status?: number): AiError.AiError => {
  const code = error.code ?? error.type ?? undefined
  const message = code === undefined ? error.message : `${error.message} (${code})`
  const withStatus = status === undefined ? {} : { status }
  switch (code) {
    case "insufficient_quota":
      return new AiError.QuotaExceeded({ provider, message, ...withStatus })
    case "rate_limit_exceeded":
    case "too_many_requests":
      return new AiError.RateLimited({ provider, message })
    case "context_length_exceeded":
      return new AiError.ContextLengthExceeded({ provider, message })
    case "invalid_api_key":
      return new AiError.AuthFailed({ provider, status: status ?? 401, message })
    case undefined:
    case "server_error":
    case "service_unavailable_error":
    case "vector_store_timeout":
      return new AiError.Unavailable({ provider, message, ...withStatus })
    default:
      return new AiError.InvalidRequest({ provider, message, ...withStatus })
  }
}

const decodeErrorBody = Schema.decodeUnknownResult(Schema.fromJsonString(ResponsesEvent.ErrorBody))

/**
 * Reads an HTTP error response by its `error.code` where the status alone says
 * too little: `insufficient_quota` (a 429 no retry can help) and
 * `context_length_exceeded` (a 400). Everything else is read by its status.
 *
 * @example
 * ```ts
 * import { ResponsesError } from "@agentloop/responses"
 *
 * const error = ResponsesError.classify({
 *   provider: "openai",
 *   status: 429,
 *   body: JSON.stringify({ error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" } }),
 *   message: "You exceeded your current quota",
 *   retryAfter: undefined
 * })
 * console.log(error?._tag) // QuotaExceeded
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export const classify = (failure: ProviderHttp.ErrorResponse): AiError.AiError | undefined => {
  const body = decodeErrorBody(failure.body)
  if (Result.isFailure(body)) return undefined
  const code = body.success.error.code
  return code === "insufficient_quota" || code === "context_length_exceeded"
    ? fromObject(body.success.error, failure.status)
    : undefined
}
