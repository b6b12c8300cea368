/**
 * agentloop's `AiError`s and `effect/ai`'s `AiError`, one as the other, by
 * what went wrong: a rate limit stays a rate limit (with its `Retry-After`),
 * rejected credentials stay an authentication failure, so retry policies on
 * either side keep working.
 *
 * @since 0.2.0
 */
import { AiError as EffectAiError } from "effect/ai"
import * as AiError from "../AiError.ts"

/**
 * The agentloop error of an `effect/ai` error; `provider` names the model's provider.
 *
 * @since 0.2.0
 * @category conversions
 */
export const toAiError = (error: EffectAiError.AiError, provider: string): AiError.AiError => {
  const reason = error.reason
  const message = error.message
  switch (reason._tag) {
    case "RateLimitError":
      return new AiError.RateLimited({
        provider,
        message,
        ...(reason.retryAfter === undefined ? {} : { retryAfter: reason.retryAfter })
      })
    case "QuotaExhaustedError":
      return new AiError.QuotaExceeded({ provider, message })
    case "AuthenticationError":
      return new AiError.AuthFailed({ provider, status: reason.http?.response?.status ?? 401, message })
    case "InvalidRequestError":
    case "ContentPolicyError":
    case "InvalidUserInputError":
      return new AiError.InvalidRequest({ provider, message })
    case "InvalidResponseError":
    case "InvalidOutputError":
      return new AiError.MalformedEvent({ provider, event: reason._tag, message })
    default:
      return new AiError.Unavailable({ provider, message })
  }
}

/**
 * The `effect/ai` error of an agentloop error.
 *
 * @example
 * ```ts
 * import { AiError } from "@agentloop/core"
 * import * as EffectAiError from "@agentloop/core/effect-ai/EffectAiError"
 *
 * const limited = new AiError.RateLimited({ provider: "openai", message: "slow down" })
 * // As effect/ai's error, and back: the tag and the message survive the round trip.
 * const back = EffectAiError.toAiError(EffectAiError.fromAiError(limited), "openai")
 * console.log(back._tag) // RateLimited
 * ```
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromAiError = (error: AiError.AiError): EffectAiError.AiError =>
  EffectAiError.make({ module: "agentloop", method: "streamTurn", reason: reasonOf(error) })

const reasonOf = (error: AiError.AiError): EffectAiError.AiErrorReason => {
  const description = error.message
  switch (error._tag) {
    case "RateLimited":
      return new EffectAiError.RateLimitError(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter })
    case "QuotaExceeded":
      return new EffectAiError.QuotaExhaustedError({})
    case "AuthFailed":
      return new EffectAiError.AuthenticationError({ kind: "Unknown", description })
    case "InvalidRequest":
    case "ContextLengthExceeded":
      return new EffectAiError.InvalidRequestError({ description })
    case "MalformedEvent":
    case "IncompleteTurn":
      return new EffectAiError.InvalidResponseError({ description })
    case "Timeout":
    case "Unavailable":
      return new EffectAiError.InternalProviderError({ description })
  }
}
