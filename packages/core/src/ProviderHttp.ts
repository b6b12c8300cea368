/**
 * HTTP plumbing shared by provider layers: send a streaming request, map its
 * failures to {@link AiError.AiError}, parse its Server-Sent Events, decode each
 * event with a `Schema`, and retry a request that failed before it produced anything.
 *
 * Runtime-agnostic: everything runs on whatever `HttpClient` layer the
 * application provides (`FetchHttpClient.layer` by default in provider layers).
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Function, Pull, Redacted, Result, Schedule, Schema, Stream } from "effect"
import * as Arr from "effect/Array"
import { Sse } from "effect/encoding"
import { Headers, HttpClient, HttpClientError, HttpClientRequest, UrlParams } from "effect/http"
import type { HttpClientResponse } from "effect/http"
import * as AiError from "./AiError.ts"

/** How to send one streaming request; see {@link streamEvents}. */
export interface StreamOptions {
  /** Names the provider in every error. */
  readonly provider: string
  /** The complete request: URL, credentials, body. */
  readonly request: HttpClientRequest.HttpClientRequest
  /** Longest wait for the response headers (and, on an error status, its body); then `AiError.Timeout`. */
  readonly requestTimeout?: Duration.Input | undefined
  /** Longest wait between two chunks of the response body; then `AiError.Timeout`. */
  readonly idleTimeout?: Duration.Input | undefined
  /** Whether an error response means the prompt is too long. Defaults to {@link isContextLengthMessage} on a 400. */
  readonly isContextLengthError?: ((status: number, body: string) => boolean) | undefined
  /** The provider's own message in an error body. Defaults to {@link defaultErrorMessage}. */
  readonly errorMessage?: ((body: string) => string) | undefined
  /** Secrets (the API key) to cut out of every error message, in case the provider echoes them back. */
  readonly secrets?: ReadonlyArray<Redacted.Redacted<string>> | undefined
  /**
   * Longest event, in UTF-16 code units, before the stream fails with
   * `AiError.MalformedEvent` rather than buffering without bound (default 16 MiB:
   * a final event repeats the whole answer, so it can be long).
   */
  readonly maxEventSize?: number | undefined
}

/** Header and query parameter names whose values are credentials, kept out of spans and logs. */
const credentialHeaders: ReadonlyArray<string> = ["authorization", "x-api-key", "api-key", "x-goog-api-key"]
const credentialParams: ReadonlyArray<string> = ["key", "api_key", "api-key"]

/**
 * Moves credential query parameters out of the URL text into `urlParams` as
 * `Redacted` values: the URL text is printed verbatim by errors and span exits,
 * while redacted parameters are sent but never printed.
 */
const protectCredentials = (request: HttpClientRequest.HttpClientRequest): HttpClientRequest.HttpClientRequest => {
  const queryAt = request.url.indexOf("?")
  const query = new URLSearchParams(queryAt < 0 ? "" : request.url.slice(queryAt + 1))
  const params: Array<readonly [string, string | Redacted.Redacted]> = []
  for (const [name, value] of request.urlParams) {
    params.push([name, credentialParams.includes(name) && typeof value === "string" ? Redacted.make(value) : value])
  }
  let moved = false
  for (const name of credentialParams) {
    for (const value of query.getAll(name)) {
      params.push([name, Redacted.make(value)])
      moved = true
    }
    query.delete(name)
  }
  const rest = query.toString()
  const url = moved ? request.url.slice(0, queryAt) + (rest.length > 0 ? `?${rest}` : "") : request.url
  return HttpClientRequest.setUrlParams(HttpClientRequest.setUrl(request, url), UrlParams.make(params))
}

const ErrorBody = Schema.fromJsonString(Schema.Union([
  Schema.Struct({ error: Schema.Struct({ message: Schema.String }) }),
  Schema.Struct({ message: Schema.String }),
  Schema.Array(Schema.Struct({ error: Schema.Struct({ message: Schema.String }) }))
]))
const decodeErrorBody = Schema.decodeUnknownResult(ErrorBody)
const maxMessageLength = 2000

/**
 * The message of an error body: `error.message` or `message` of a JSON body (or
 * of its first element, as Google APIs answer), else the body itself, shortened.
 */
export const defaultErrorMessage = (body: string): string => {
  const decoded = decodeErrorBody(body)
  if (Result.isSuccess(decoded)) {
    const value = decoded.success
    if ("message" in value) return value.message
    if ("error" in value) return value.error.message
    return value[0]?.error.message ?? body.slice(0, maxMessageLength)
  }
  return body.length === 0 ? "(empty body)" : body.slice(0, maxMessageLength)
}

/** Whether an error text says the prompt does not fit the model's context window. */
export const isContextLengthMessage = (text: string): boolean =>
  /context[_ ]length|context window|maximum context|too many (input )?tokens|prompt is too long|exceeds the maximum number of tokens/i
    .test(text)

const transportMessage = (error: HttpClientError.HttpClientError): string => {
  // The reason's own message names the URL, which may carry a key: build one from the parts that cannot.
  const reason = error.reason
  const cause = "cause" in reason && reason.cause instanceof Error ? reason.cause : undefined
  const detail = reason.description ?? cause?.message
  const code = cause?.cause instanceof Error && "code" in cause.cause ? ` (${String(cause.cause.code)})` : ""
  return `${reason._tag}${detail === undefined ? "" : `: ${detail}`}${code}`
}

const scrubText = (secrets: ReadonlyArray<Redacted.Redacted<string>>, text: string): string => {
  let out = text
  for (const secret of secrets) {
    const value = Redacted.value(secret)
    if (value.length > 0) out = out.split(value).join("<redacted>")
  }
  return out
}

const scrub = (options: StreamOptions, message: string): string => scrubText(options.secrets ?? [], message)

const withMessage = (error: AiError.AiError, message: string): AiError.AiError => {
  if (message === error.message) return error
  switch (error._tag) {
    case "AuthFailed":
      return new AiError.AuthFailed({ ...error, message })
    case "RateLimited":
      return new AiError.RateLimited({ ...error, message })
    case "Timeout":
      return new AiError.Timeout({ ...error, message })
    case "ContextLengthExceeded":
      return new AiError.ContextLengthExceeded({ ...error, message })
    case "InvalidRequest":
      return new AiError.InvalidRequest({ ...error, message })
    case "Unavailable":
      return new AiError.Unavailable({ ...error, message })
    case "MalformedEvent":
      return new AiError.MalformedEvent({ ...error, message })
    case "IncompleteTurn":
      return new AiError.IncompleteTurn({ ...error, message })
  }
}

/**
 * Cuts `secrets` out of the message of any error the stream fails with. Apply
 * it last in a provider's pipeline: providers echo keys back in error bodies
 * and in stream events (`response.failed`, `error`), not only in HTTP errors.
 */
export const redactErrors: {
  (secrets: ReadonlyArray<Redacted.Redacted<string>>): <A, R>(
    self: Stream.Stream<A, AiError.AiError, R>
  ) => Stream.Stream<A, AiError.AiError, R>
  <A, R>(
    self: Stream.Stream<A, AiError.AiError, R>,
    secrets: ReadonlyArray<Redacted.Redacted<string>>
  ): Stream.Stream<A, AiError.AiError, R>
} = Function.dual(
  2,
  <A, R>(self: Stream.Stream<A, AiError.AiError, R>, secrets: ReadonlyArray<Redacted.Redacted<string>>) =>
    Stream.mapError(self, (error) => withMessage(error, scrubText(secrets, error.message)))
)

const fromClientError = (options: StreamOptions) => (error: HttpClientError.HttpClientError): AiError.AiError => {
  const provider = options.provider
  const message = scrub(options, transportMessage(error))
  return error.reason._tag === "InvalidUrlError" || error.reason._tag === "EncodeError"
    ? new AiError.InvalidRequest({ provider, message })
    : new AiError.Unavailable({ provider, message })
}

const withTimeout = (duration: Duration.Input | undefined, provider: string, what: string) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | AiError.Timeout, R> =>
  duration === undefined ? effect : Effect.timeoutOrElse(effect, {
    duration,
    orElse: () =>
      Effect.fail(
        new AiError.Timeout({ provider, message: `no ${what} within ${Duration.format(Duration.fromInputUnsafe(duration))}` })
      )
  })

/**
 * How long the response asks us to wait: OpenAI's `retry-after-ms` (milliseconds)
 * when present, else the standard `Retry-After` (seconds or an HTTP date).
 */
const retryAfterHeader = (headers: Headers.Headers, now: number): Duration.Duration | undefined => {
  const millis = Number(headers["retry-after-ms"])
  return headers["retry-after-ms"] !== undefined && Number.isFinite(millis) && millis >= 0
    ? Duration.millis(millis)
    : AiError.parseRetryAfter(headers["retry-after"], now)
}

const statusError = Effect.fnUntraced(function*(
  options: StreamOptions,
  response: HttpClientResponse.HttpClientResponse
) {
  const body = yield* Effect.orElseSucceed(response.text, () => "")
  const now = yield* Clock.currentTimeMillis
  const message = scrub(options, (options.errorMessage ?? defaultErrorMessage)(body))
  return AiError.fromHttpStatus({
    provider: options.provider,
    status: response.status,
    message,
    retryAfter: retryAfterHeader(response.headers, now),
    contextLengthExceeded: options.isContextLengthError === undefined
      ? response.status === 400 && isContextLengthMessage(body)
      : options.isContextLengthError(response.status, body)
  })
})

/**
 * Parses a text stream as Server-Sent Events. Unlike `Sse.decode`, a `retry:`
 * field is ignored: it tells a browser how to reconnect, and a model request is
 * never resumed by reconnecting.
 */
const parseSse = <E, R>(
  provider: string,
  maxEventSize: number,
  text: Stream.Stream<string, E, R>
): Stream.Stream<Sse.Event, E | AiError.MalformedEvent, R> =>
  Stream.transformPull(text, (upstream) =>
    Effect.sync(() => {
      let buffer: Array<Sse.Event> = []
      const parser = Sse.makeParser((event) => {
        if (event._tag === "Event") buffer.push(event)
      }, { maxEventSize })
      const pull: Pull.Pull<Arr.NonEmptyReadonlyArray<Sse.Event>, E | AiError.MalformedEvent> = Effect.flatMap(
        upstream,
        (chunk) => {
          for (const text of chunk) {
            const error = parser.feed(text)
            if (error !== undefined) {
              return Effect.fail(new AiError.MalformedEvent({ provider, event: "(too large)", message: error.message }))
            }
          }
          const out = buffer
          if (!Arr.isArrayNonEmpty(out)) return pull
          buffer = []
          return Effect.succeed(out)
        }
      )
      return pull
    }))

/**
 * Sends a streaming request and returns its body as Server-Sent Events.
 *
 * A non-2xx status becomes the matching `AiError` (via `AiError.fromHttpStatus`,
 * with the provider's message and `Retry-After`); a transport failure, including
 * a connection cut mid-body, becomes `AiError.Unavailable`; the timeouts become
 * `AiError.Timeout`. Credential headers and query parameters are redacted from
 * the HTTP client's spans. Nothing is sent until the stream is pulled, and
 * interrupting the stream aborts the request.
 */
export const streamEvents = (options: StreamOptions): Stream.Stream<Sse.Event, AiError.AiError, HttpClient.HttpClient> => {
  const { provider } = options
  return Stream.unwrap(Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    const response = yield* client.execute(protectCredentials(options.request)).pipe(
      Effect.mapError(fromClientError(options)),
      Effect.flatMap((response) =>
        response.status >= 200 && response.status < 300
          ? Effect.succeed(response)
          : Effect.flatMap(statusError(options, response), Effect.fail)
      ),
      withTimeout(options.requestTimeout, provider, "response"),
      Effect.updateService(Headers.CurrentRedactedNames, (names) => [...names, ...credentialHeaders]),
      Effect.updateService(UrlParams.CurrentRedactedNames, (names) => [...names, ...credentialParams])
    )
    const idleTimeout = options.idleTimeout
    const body: Stream.Stream<Uint8Array, AiError.AiError> = response.stream.pipe(
      Stream.mapError(fromClientError(options)),
      idleTimeout === undefined ? Function.identity : Stream.timeoutOrElse({
        duration: idleTimeout,
        orElse: () =>
          Stream.fail(
            new AiError.Timeout({
              provider,
              message: `no data for ${Duration.format(Duration.fromInputUnsafe(idleTimeout))} while streaming`
            })
          )
      })
    )
    return parseSse(provider, options.maxEventSize ?? 16 * 1024 * 1024, Stream.decodeText(body))
  }))
}

/**
 * When to retry a failed request: a `Schedule` fed with each retryable error.
 * The delay it returns is a floor: a longer `retryAfter` of the error (a 429's or a 503's) wins.
 */
export type RetryPolicy = Schedule.Schedule<unknown, AiError.AiError>

/** Up to 3 retries, exponential from 500ms with jitter, no single wait over 10 seconds (unless `Retry-After` asks for more). */
export const defaultRetryPolicy: RetryPolicy = Schedule.exponential("500 millis").pipe(
  Schedule.jittered,
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(10)))),
  Schedule.upTo({ times: 3 })
)

/** Never retries. */
export const noRetry: RetryPolicy = Schedule.recurs(0)

const retryAfterOf = (error: AiError.AiError): Duration.Duration =>
  (error._tag === "RateLimited" || error._tag === "Unavailable") && error.retryAfter !== undefined
    ? error.retryAfter
    : Duration.zero

/**
 * Re-runs a model stream that failed with a retryable error (`AiError.isRetryable`)
 * before it emitted anything, as often as `policy` allows (default
 * {@link defaultRetryPolicy}), waiting at least the error's `retryAfter`.
 *
 * Once an element has reached the consumer a failure is final: replaying the
 * request would repeat deltas the consumer already saw.
 */
export const retry: {
  (policy?: RetryPolicy): <A, R>(self: Stream.Stream<A, AiError.AiError, R>) => Stream.Stream<A, AiError.AiError, R>
  <A, R>(self: Stream.Stream<A, AiError.AiError, R>, policy?: RetryPolicy): Stream.Stream<A, AiError.AiError, R>
} = Function.dual(
  (args) => Stream.isStream(args[0]),
  <A, R>(self: Stream.Stream<A, AiError.AiError, R>, policy: RetryPolicy = defaultRetryPolicy) =>
    Stream.unwrap(Effect.map(Schedule.toStep(policy), (step) => {
      const attempt = (): Stream.Stream<A, AiError.AiError, R> => {
        let emitted = false
        return self.pipe(
          Stream.mapArray((chunk) => {
            emitted = true
            return chunk
          }),
          Stream.catch((error) =>
            emitted || !AiError.isRetryable(error)
              ? Stream.fail(error)
              : Stream.unwrap(Effect.flatMap(Clock.currentTimeMillis, (now) =>
                Pull.matchEffect(step(now, error), {
                  onSuccess: ([, delay]) =>
                    Effect.as(Effect.sleep(Duration.max(delay, retryAfterOf(error))), attempt()),
                  onDone: () => Effect.succeed(Stream.fail(error)),
                  onFailure: Effect.failCause
                })))
          )
        )
      }
      return attempt()
    }))
)

/**
 * Decodes one event's JSON `data` with `schema`. On failure the `MalformedEvent`
 * names the event: its SSE `event:` name, else the JSON `type` field, else `message`.
 *
 * Returns a `Result` so a loop over a chunk of events stays synchronous; lift it
 * with `Effect.fromResult` where an `Effect` is wanted.
 */
export const decodeEvent = <A>(provider: string, schema: Schema.Decoder<A>) => {
  const decode = Schema.decodeUnknownResult(schema)
  return (event: Sse.Event): Result.Result<A, AiError.MalformedEvent> => {
    let json: unknown
    try {
      json = JSON.parse(event.data)
    } catch (cause) {
      return Result.fail(
        new AiError.MalformedEvent({
          provider,
          event: event.event,
          message: `data is not JSON: ${cause instanceof Error ? cause.message : String(cause)}`
        })
      )
    }
    const decoded = decode(json)
    if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
    return Result.fail(
      new AiError.MalformedEvent({ provider, event: eventName(event, json), message: decoded.failure.message })
    )
  }
}

const eventName = (event: Sse.Event, json: unknown): string => {
  if (event.event !== "message") return event.event
  if (typeof json === "object" && json !== null && "type" in json && typeof json.type === "string") return json.type
  return event.event
}

