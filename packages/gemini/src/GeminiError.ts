/**
 * Google's errors as `AiError`s, read from the `details` of the error object
 * (`google.rpc.ErrorInfo`, `RetryInfo` and `QuotaFailure`) where its status
 * says too little, whether it came as an HTTP error body or as an event of a
 * stream that had already started:
 *
 * - an `ErrorInfo` from `googleapis.com` with an `API_KEY_…` reason is
 *   `AiError.AuthFailed` with the status it came with: Google refuses a bad
 *   key with a 400 `INVALID_ARGUMENT` ("API key not valid."), an expired one
 *   too ("API key expired.", reason `API_KEY_INVALID`), and a key restricted
 *   away from the API with a 403 (`API_KEY_SERVICE_BLOCKED`, …);
 * - a 429 is `AiError.QuotaExceeded`, which no retry can help, when a
 *   `QuotaFailure` violation's `quotaId` names a daily quota (contains
 *   `PerDay`: it resets in hours, not seconds) or the message says
 *   `limit: 0` (the plan has no quota for the model at all); any other 429 is
 *   `AiError.RateLimited`;
 * - a 429's or a 5xx's `RetryInfo.retryDelay` is its `retryAfter` (see
 *   {@link parseRetryDelay}). Google sends no `Retry-After` header; when one
 *   is there anyway (a proxy's), the longer of the two wins: waiting less than
 *   either asked risks another refusal, and `ProviderRetry` caps whichever
 *   wins (`maxRetryAfter`).
 *
 * Everything else is read by its status, as for every provider. The body is
 * untrusted: it is decoded with `Schema` (read up to
 * `ProviderHttp.maxErrorBodySize` by core), each detail on its own, so a
 * detail of an unknown or broken shape is skipped and never costs the others.
 *
 * @since 0.1.0
 */
import { AiError, ProviderHttp } from "@agentloop/core"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as GeminiEvent from "./GeminiEvent.ts"

/**
 * The provider's name in errors.
 *
 * @since 0.1.0
 * @category constants
 */
export const provider = "gemini"

/**
 * The longest `RetryInfo` delay read: one day, the longest window of Google's
 * quotas. A longer delay is taken as no delay at all, as is one that is not a
 * protobuf `Duration`.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxRetryDelay: Duration.Duration = Duration.days(1)

/**
 * Reads a protobuf `Duration` in its JSON form, as `RetryInfo.retryDelay`
 * carries it: whole seconds with up to nine fractional digits and an `s`
 * (`"38s"`, `"1.5s"`, `"45.837906927s"`), rounded up to the millisecond.
 * Returns `undefined` for anything else (negative, no `s`, an exponent, more
 * than twelve digits of seconds) and for a delay longer than {@link maxRetryDelay}.
 *
 * @example
 * ```ts
 * import { GeminiError } from "@agentloop/gemini"
 * import { Duration } from "effect"
 *
 * // Gemini says how long to wait in a `RetryInfo` detail, as protobuf duration text.
 * const delay = GeminiError.parseRetryDelay("12.5s")
 * console.log(delay === undefined ? undefined : Duration.toMillis(delay)) // 12500
 * ```
 *
 * @since 0.1.0
 * @category parsing
 */
export const parseRetryDelay = (text: string): Duration.Duration | undefined => {
  const match = /^(\d{1,12})(?:\.(\d{1,9}))?s$/.exec(text)
  if (match === null) return undefined
  const nanos = Number((match[2] ?? "").padEnd(9, "0"))
  const millis = Number(match[1]) * 1000 + Math.ceil(nanos / 1_000_000)
  return millis <= Duration.toMillis(maxRetryDelay) ? Duration.millis(millis) : undefined
}

const decodeDetail = Schema.decodeUnknownOption(GeminiEvent.StatusDetail)

/** The details of `error` read here; the others, and a `details` that is not an array, are skipped. */
const detailsOf = (error: GeminiEvent.ErrorDetail): ReadonlyArray<GeminiEvent.StatusDetail> =>
  Array.isArray(error.details) ? error.details.flatMap((detail: unknown) => Option.toArray(decodeDetail(detail))) : []

const isKeyRefused = (details: ReadonlyArray<GeminiEvent.StatusDetail>): boolean =>
  details.some((detail) =>
    detail["@type"] === "type.googleapis.com/google.rpc.ErrorInfo" && detail.domain === "googleapis.com" &&
    detail.reason.startsWith("API_KEY_")
  )

const isQuotaExhausted = (details: ReadonlyArray<GeminiEvent.StatusDetail>, message: string): boolean =>
  /\blimit: 0(?![\d.])/.test(message) ||
  details.some((detail) =>
    detail["@type"] === "type.googleapis.com/google.rpc.QuotaFailure" &&
    detail.violations.some((violation) => violation.quotaId?.includes("PerDay") === true)
  )

/** The first readable `RetryInfo` delay of `details`. */
const retryDelay = (details: ReadonlyArray<GeminiEvent.StatusDetail>): Duration.Duration | undefined => {
  for (const detail of details) {
    if (detail["@type"] !== "type.googleapis.com/google.rpc.RetryInfo") continue
    const delay = parseRetryDelay(detail.retryDelay)
    if (delay !== undefined) return delay
  }
  return undefined
}

/** The reading of `error` by its details, or `undefined` when they say nothing its status does not. */
const byDetails = (
  error: GeminiEvent.ErrorDetail,
  status: number,
  message: string,
  header: Duration.Duration | undefined
): AiError.AiError | undefined => {
  const details = detailsOf(error)
  if (isKeyRefused(details)) return new AiError.AuthFailed({ provider, status, message })
  if (status === 429 && isQuotaExhausted(details, message)) {
    return new AiError.QuotaExceeded({ provider, status, message })
  }
  const delay = retryDelay(details)
  if (delay === undefined || (status !== 429 && status < 500)) return undefined
  const retryAfter = header === undefined ? delay : Duration.max(header, delay)
  return AiError.fromHttpStatus({ provider, status, message, retryAfter })
}

/**
 * Maps an error Gemini sent inside a stream (an event with an `error` body) to
 * its error, as the same error in an HTTP body would map, its `code` taken as
 * the status (500 when it has none).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromObject = (error: GeminiEvent.ErrorDetail): AiError.AiError => {
  const status = error.code ?? 500
  const message = error.message ?? error.status ?? "unknown error"
  return byDetails(error, status, message, undefined) ??
    AiError.fromHttpStatus({
      provider,
      status,
      message,
      contextLengthExceeded: ProviderHttp.isContextLengthMessage(message)
    })
}

const decodeErrorBody = Schema.decodeUnknownResult(Schema.fromJsonString(GeminiEvent.ErrorBody))

/**
 * Reads an HTTP error response by the details of its error, as described
 * above; `undefined` (read by its status) when the body is not Google's error
 * or its details say nothing more.
 *
 * @since 0.1.0
 * @category errors
 */
export const classify = (failure: ProviderHttp.ErrorResponse): AiError.AiError | undefined => {
  const body = decodeErrorBody(failure.body)
  if (Result.isFailure(body)) return undefined
  const error = "error" in body.success ? body.success.error : body.success[0]?.error
  return error === undefined
    ? undefined
    : byDetails(error, failure.status, error.message ?? failure.message, failure.retryAfter)
}
