/**
 * The errors of the Anthropic Messages API as `AiError`s: an error object's
 * `type` (`overloaded_error`, `rate_limit_error`, …) says which, whether it
 * came in an HTTP error body or as an `error` event in a stream that had
 * already started.
 *
 * @since 0.1.0
 */
import { AiError, ProviderHttp } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as AnthropicEvent from "./AnthropicEvent.ts"

/**
 * The provider's name in errors and on `LanguageModel.provider`.
 *
 * @since 0.1.0
 * @category constants
 */
export const provider = "anthropic"

/**
 * HTTP 529: Anthropic's status for an API overloaded for every customer (not a rate limit on the account).
 *
 * @since 0.1.0
 * @category constants
 */
export const overloadedStatus = 529

/** Whether a message says the prompt does not fit: the usual wording, or Anthropic's "input length and `max_tokens` exceed context limit". */
const isContextLength = (message: string): boolean =>
  ProviderHttp.isContextLengthMessage(message) || /exceed(s)? (the )?context limit/i.test(message)

/** Whether an error says the account has no credit left: a `billing_error`, or the 400 Anthropic sends when the balance is too low. */
const isOutOfCredit = (error: AnthropicEvent.ErrorObject): boolean =>
  error.type === "billing_error" || /credit balance is too low/i.test(error.message)

const described = (error: AnthropicEvent.ErrorObject): string => `${error.message} (${error.type})`

/**
 * Maps an error sent inside a stream (an `error` event) to its error, as its
 * HTTP status would map: `overloaded_error` and `api_error` are `Unavailable`
 * (retryable), `rate_limit_error` `RateLimited`, `billing_error`
 * `QuotaExceeded`, a prompt too long `ContextLengthExceeded`; a type not
 * known here is taken as the server's failure.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromObject = (error: AnthropicEvent.ErrorObject): AiError.AiError => {
  const message = described(error)
  if (isOutOfCredit(error)) return new AiError.QuotaExceeded({ provider, message })
  if (isContextLength(error.message)) return new AiError.ContextLengthExceeded({ provider, message })
  switch (error.type) {
    case "overloaded_error":
      return new AiError.Unavailable({ provider, status: overloadedStatus, message })
    case "rate_limit_error":
      return new AiError.RateLimited({ provider, message })
    case "authentication_error":
      return new AiError.AuthFailed({ provider, status: 401, message })
    case "permission_error":
      return new AiError.AuthFailed({ provider, status: 403, message })
    case "timeout_error":
      return new AiError.Timeout({ provider, message })
    case "request_too_large":
      return new AiError.ContextLengthExceeded({ provider, message })
    case "invalid_request_error":
      return new AiError.InvalidRequest({ provider, status: 400, message })
    case "not_found_error":
      return new AiError.InvalidRequest({ provider, status: 404, message })
    default:
      return new AiError.Unavailable({ provider, message })
  }
}

const decodeErrorBody = Schema.decodeUnknownResult(Schema.fromJsonString(AnthropicEvent.ErrorBody))

/**
 * Reads an HTTP error response by its `error.type` where the status alone says
 * too little: no credit left (a 400 or a 402, which no retry can help) is
 * `QuotaExceeded`, a 400 whose prompt does not fit is `ContextLengthExceeded`,
 * and `overloaded_error` is `Unavailable` whatever its status. Everything else
 * is read by its status, as for every provider (529 is `Unavailable`).
 *
 * @example
 * ```ts
 * import { AnthropicError } from "@agentloop/anthropic"
 *
 * const error = AnthropicError.classify({
 *   provider: "anthropic",
 *   status: 529,
 *   body: JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
 *   message: "Overloaded",
 *   retryAfter: undefined
 * })
 * console.log(error?._tag) // Unavailable
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export const classify = (failure: ProviderHttp.ErrorResponse): AiError.AiError | undefined => {
  const body = decodeErrorBody(failure.body)
  if (Result.isFailure(body)) return undefined
  const error = body.success.error
  const message = described(error)
  const { status } = failure
  if (isOutOfCredit(error)) return new AiError.QuotaExceeded({ provider, status, message })
  if (status === 400 && isContextLength(error.message)) return new AiError.ContextLengthExceeded({ provider, message })
  if (error.type === "overloaded_error") {
    return new AiError.Unavailable({
      provider,
      status,
      message,
      ...(failure.retryAfter === undefined ? {} : { retryAfter: failure.retryAfter })
    })
  }
  return undefined
}
