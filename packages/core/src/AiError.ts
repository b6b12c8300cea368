/**
 * The ways a model request can fail, as tagged errors.
 *
 * Provider layers map HTTP statuses, transport failures and malformed streams to
 * these; `isRetryable` tells which ones a retry can cure.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Schema from "effect/Schema"

/** The provider rejected the credentials (HTTP 401 or 403). A retry will not help. */
export class AuthFailed extends Schema.TaggedError<AuthFailed>()("AuthFailed", {
  provider: Schema.String,
  status: Schema.Number,
  message: Schema.String
}) {
  /** Not worth a fresh attempt of the same request: `ProviderRetry` makes none. */
  get isRetryable(): false {
    return false
  }
  /** The provider's failure, not the request's: another provider may answer (`LanguageModel.fallback` moves on). */
  get isProviderFailure(): true {
    return true
  }
}

/** The provider is rate limiting (HTTP 429); `retryAfter` is how long it asked us to wait. */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  provider: Schema.String,
  message: Schema.String,
  retryAfter: Schema.optionalKey(Schema.DurationFromMillis)
}) {
  /** A fresh attempt of the same request may succeed: `ProviderRetry` makes one. */
  get isRetryable(): true {
    return true
  }
  /** The provider's failure, not the request's: another provider may answer (`LanguageModel.fallback` moves on). */
  get isProviderFailure(): true {
    return true
  }
}

/** The request, or the wait for the next chunk of its stream, took too long (or HTTP 408/504). */
export class Timeout extends Schema.TaggedError<Timeout>()("Timeout", {
  provider: Schema.String,
  message: Schema.String
}) {
  /** A fresh attempt of the same request may succeed: `ProviderRetry` makes one. */
  get isRetryable(): true {
    return true
  }
  /** The provider's failure, not the request's: another provider may answer (`LanguageModel.fallback` moves on). */
  get isProviderFailure(): true {
    return true
  }
}

/** The prompt does not fit the model's context window (HTTP 413, or a 400 saying so). */
export class ContextLengthExceeded extends Schema.TaggedError<ContextLengthExceeded>()("ContextLengthExceeded", {
  provider: Schema.String,
  message: Schema.String
}) {
  /** Not worth a fresh attempt of the same request: `ProviderRetry` makes none. */
  get isRetryable(): false {
    return false
  }
  /** Not the provider's failure: `LanguageModel.fallback` does not move on from it by default. */
  get isProviderFailure(): false {
    return false
  }
}

/** The provider refused the request as malformed (another 4xx); `message` is the provider's own. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  provider: Schema.String,
  status: Schema.optionalKey(Schema.Number),
  message: Schema.String
}) {
  /** Not worth a fresh attempt of the same request: `ProviderRetry` makes none. */
  get isRetryable(): false {
    return false
  }
  /** Not the provider's failure: `LanguageModel.fallback` does not move on from it by default. */
  get isProviderFailure(): false {
    return false
  }
}

/**
 * The provider could not be reached or failed on its side (HTTP ≥ 500, transport
 * failure); `retryAfter` is how long it asked us to wait, when it said (a 503 may).
 */
export class Unavailable extends Schema.TaggedError<Unavailable>()("Unavailable", {
  provider: Schema.String,
  status: Schema.optionalKey(Schema.Number),
  message: Schema.String,
  retryAfter: Schema.optionalKey(Schema.DurationFromMillis)
}) {
  /** A fresh attempt of the same request may succeed: `ProviderRetry` makes one. */
  get isRetryable(): true {
    return true
  }
  /** The provider's failure, not the request's: another provider may answer (`LanguageModel.fallback` moves on). */
  get isProviderFailure(): true {
    return true
  }
}

/** A stream event did not decode; `event` names it (its SSE event name or `type`). */
export class MalformedEvent extends Schema.TaggedError<MalformedEvent>()("MalformedEvent", {
  provider: Schema.String,
  event: Schema.String,
  message: Schema.String
}) {
  /** Not worth a fresh attempt of the same request: `ProviderRetry` makes none. */
  get isRetryable(): false {
    return false
  }
  /** Not the provider's failure: `LanguageModel.fallback` does not move on from it by default. */
  get isProviderFailure(): false {
    return false
  }
}

/**
 * The account has no quota or credit left (OpenAI's `insufficient_quota`, as an
 * HTTP 429 or as an error event): unlike `RateLimited`, no retry can help until
 * someone changes the billing.
 */
export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", {
  provider: Schema.String,
  status: Schema.optionalKey(Schema.Number),
  message: Schema.String
}) {
  /** Not worth a fresh attempt of the same request: `ProviderRetry` makes none. */
  get isRetryable(): false {
    return false
  }
  /** The provider's failure, not the request's: another provider may answer (`LanguageModel.fallback` moves on). */
  get isProviderFailure(): true {
    return true
  }
}

/** The stream ended before its `turn_complete`: the turn is lost. */
export class IncompleteTurn extends Schema.TaggedError<IncompleteTurn>()("IncompleteTurn", {
  message: Schema.String
}) {
  /** Not worth a fresh attempt of the same request: `ProviderRetry` makes none. */
  get isRetryable(): false {
    return false
  }
  /** Not the provider's failure: `LanguageModel.fallback` does not move on from it by default. */
  get isProviderFailure(): false {
    return false
  }
}

/** Any model request failure. */
export type AiError =
  | AuthFailed
  | RateLimited
  | Timeout
  | ContextLengthExceeded
  | InvalidRequest
  | Unavailable
  | MalformedEvent
  | QuotaExceeded
  | IncompleteTurn

/** Schema of every {@link AiError}, for logs, checkpoints and UIs. */
export const AiError = Schema.Union([
  AuthFailed,
  RateLimited,
  Timeout,
  ContextLengthExceeded,
  InvalidRequest,
  Unavailable,
  MalformedEvent,
  QuotaExceeded,
  IncompleteTurn
])

const encodeError = Schema.encodeSync(AiError)
const decodeError = Schema.decodeSync(AiError)

/**
 * The same error with another message, every other field kept. Errors are
 * Schemas, so the copy is made through their encoded form rather than class by class.
 */
export const withMessage = (error: AiError, message: string): AiError =>
  message === error.message ? error : decodeError({ ...encodeError(error), message })

/**
 * The errors a fresh attempt of the same request may cure: rate limits,
 * timeouts, unavailability. Derived from each class's `isRetryable`.
 *
 * @since 0.2.0
 * @category models
 */
export type Retryable = Extract<AiError, { readonly isRetryable: true }>

/**
 * Whether a fresh attempt of the same request may succeed: rate limits,
 * timeouts, unavailability (the error's own `isRetryable`).
 *
 * @since 0.1.0
 * @category guards
 */
export const isRetryable = (error: AiError): error is Retryable => error.isRetryable

/**
 * Whether the error is the provider's rather than the request's: it is down,
 * rate limiting, out of quota, too slow, or refusing the key. Another provider
 * may answer the same request, so these are the errors `LanguageModel.fallback`
 * moves on from by default. The error's own `isProviderFailure`.
 *
 * @since 0.2.0
 * @category guards
 */
export const isProviderFailure = (error: AiError): error is ProviderFailure => error.isProviderFailure

/**
 * The errors that are the provider's rather than the request's. Derived from
 * each class's `isProviderFailure`.
 *
 * @since 0.2.0
 * @category models
 */
export type ProviderFailure = Extract<AiError, { readonly isProviderFailure: true }>

/**
 * Maps a failed HTTP response to its error. The provider decides, from its own
 * error body, whether a 400 means the context window was exceeded.
 */
export const fromHttpStatus = (options: {
  readonly provider: string
  readonly status: number
  readonly message: string
  readonly retryAfter?: Duration.Duration | undefined
  readonly contextLengthExceeded?: boolean | undefined
}): AiError => {
  const { message, provider, status } = options
  const retryAfter = options.retryAfter === undefined ? {} : { retryAfter: options.retryAfter }
  if (status === 401 || status === 403) return new AuthFailed({ provider, status, message })
  if (status === 429) return new RateLimited({ provider, message, ...retryAfter })
  if (status === 408 || status === 504) return new Timeout({ provider, message })
  if (status === 413 || (status === 400 && options.contextLengthExceeded === true)) {
    return new ContextLengthExceeded({ provider, message })
  }
  if (status >= 500) return new Unavailable({ provider, status, message, ...retryAfter })
  return new InvalidRequest({ provider, status, message })
}

/**
 * Reads a `Retry-After` header: delay seconds or an HTTP date (relative to `now`,
 * epoch milliseconds). Returns `undefined` for a missing or unreadable header.
 */
export const parseRetryAfter = (header: string | undefined, now: number): Duration.Duration | undefined => {
  if (header === undefined) return undefined
  const trimmed = header.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Duration.seconds(Number(trimmed))
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Duration.millis(Math.max(0, date - now))
}
