/**
 * The HTTP half of a provider layer: send one streaming request to the
 * configured endpoint and hand back its body, or the `AiError` it failed with.
 *
 * Network input is untrusted here: the base URL is checked once (no
 * credentials in it), the credential goes only to the configured origin (a
 * redirect elsewhere is refused), an error body is read up to a bound, and the
 * waits for the headers and between two chunks are bounded. Runtime-agnostic:
 * everything runs on the `HttpClient` in context.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { FetchHttpClient, Headers, HttpClient, HttpClientError, HttpClientRequest, UrlParams } from "effect/http"
import type { HttpClientResponse } from "effect/http"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import * as AiError from "../AiError.ts"
import * as ProviderTimeout from "./ProviderTimeout.ts"

/**
 * The credential a provider sends with every request: a header and its secret value.
 *
 * @since 0.1.0
 * @category models
 */
export interface Credential {
  /** Lower-case header name, e.g. `authorization` or `x-goog-api-key`. */
  readonly header: string
  readonly value: Redacted.Redacted<string>
  /** Sent before the value, e.g. `Bearer`. */
  readonly scheme?: string | undefined
}

/**
 * Where a provider sends its requests, checked once when the layer is built.
 * Build with {@link endpoint}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Endpoint {
  readonly provider: string
  /** The base URL without credentials, for building request URLs; `undefined` when it cannot be used. */
  readonly url: URL | undefined
  /** Why the base URL cannot be used; every request then fails with `AiError.InvalidRequest` saying so. */
  readonly problem: string | undefined
  /** `undefined` for a server that needs no key (a local model). */
  readonly credential: Credential | undefined
  /**
   * Headers sent with every request besides the credential (a gateway's, a
   * proxy's); the secret ones as `Redacted`, see {@link endpoint}.
   */
  readonly headers: Readonly<Record<string, string | Redacted.Redacted<string>>>
  /**
   * Secrets to cut out of every error message: the credential, the secret
   * headers' values, and any userinfo the base URL carried.
   */
  readonly secrets: ReadonlyArray<Redacted.Redacted<string>>
  /** OpenTelemetry's `server.address` and `server.port` of the endpoint (never its userinfo). */
  readonly attributes: Readonly<Record<string, string | number>>
}

const defaultPorts: Readonly<Record<string, number>> = { "http:": 80, "https:": 443 }

const parseUrl = (text: string, base?: string): URL | undefined => {
  try {
    return new URL(text, base)
  } catch {
    return undefined
  }
}

/**
 * Header names whose values are credentials whichever way they are given
 * (Azure's `api-key`, Google's `x-goog-api-key`, …): an extra header of one of
 * these names is redacted and kept out of errors like the key.
 *
 * @since 0.2.0
 * @category constants
 */
export const credentialHeaders: ReadonlyArray<string> = [
  "authorization",
  "proxy-authorization",
  "api-key",
  "x-api-key",
  "x-goog-api-key",
  "cookie"
]

/**
 * Checks a provider's base URL and pairs it with its credential and extra
 * headers. A base URL that is not an `http(s)` URL, or that carries a user or
 * password, is kept as a `problem`, never quoted: userinfo is often a key, and
 * `fetch` refuses it anyway. An extra header is secret when its value is
 * `Redacted` or its name is one of {@link credentialHeaders}: sent as it is,
 * redacted on the HTTP client's spans, cut out of error messages.
 *
 * @since 0.1.0
 * @category requests
 */
export const endpoint = (options: {
  readonly provider: string
  readonly baseUrl: string
  readonly credential?: Credential | undefined
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
}): Endpoint => {
  const url = parseUrl(options.baseUrl)
  const secrets = options.credential === undefined ? [] : [options.credential.value]
  const headers: Record<string, string | Redacted.Redacted<string>> = {}
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    const lower = name.toLowerCase()
    const secret = Redacted.isRedacted(value)
      ? value
      : credentialHeaders.includes(lower)
      ? Redacted.make(value)
      : undefined
    headers[lower] = secret ?? value
    if (secret !== undefined) secrets.push(secret)
  }
  const problem = url === undefined || !(url.protocol in defaultPorts)
    ? "the base URL is not an http or https URL"
    : url.username !== "" || url.password !== ""
    ? "the base URL carries credentials (user:password@host); pass the key as apiKey instead"
    : undefined
  for (const part of url === undefined ? [] : [url.username, url.password]) {
    if (part.length > 0) secrets.push(Redacted.make(part), Redacted.make(decodeURIComponent(part)))
  }
  const attributes = url === undefined ? {} : {
    "server.address": url.hostname,
    "server.port": url.port === "" ? defaultPorts[url.protocol] ?? 0 : Number(url.port)
  }
  return {
    provider: options.provider,
    url: problem === undefined ? url : undefined,
    problem,
    credential: options.credential,
    headers,
    secrets,
    attributes
  }
}

/**
 * What to send, and how long to wait; see {@link stream}.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestOptions {
  /** Appended to the base URL's path, e.g. `/responses`. */
  readonly path: string
  readonly urlParams?: Readonly<Record<string, string>> | undefined
  /**
   * Headers the wire format requires besides the credential, e.g. an API
   * version; the endpoint's own headers replace them, and none can replace the
   * credential, `accept` or `content-type`.
   */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Sent as JSON. */
  readonly body: unknown
  /** Longest wait for the response headers (and, on an error status, its body); then `AiError.Timeout`. */
  readonly requestTimeout?: Duration.Input | undefined
  /** Longest wait for the next chunk of the body, while the consumer waits for it; then `AiError.Timeout`. */
  readonly idleTimeout?: Duration.Input | undefined
  /** When the whole turn must be over, and the error it ends with then. */
  readonly deadline?: ProviderTimeout.Deadline | undefined
  /**
   * The provider's reading of an error response, when it knows better than the
   * status alone (a quota, a context-length 400); `undefined` keeps the default.
   */
  readonly classifyError?: ((failure: ErrorResponse) => AiError.AiError | undefined) | undefined
}

/**
 * An error response as a provider's `classifyError` sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ErrorResponse {
  readonly provider: string
  readonly status: number
  /** The body, read up to {@link maxErrorBodySize}. */
  readonly body: string
  /** The provider's message found in the body (see {@link errorMessage}). */
  readonly message: string
  readonly retryAfter: Duration.Duration | undefined
}

/**
 * Error bodies are read up to this many bytes (64 KiB); the rest is never read.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxErrorBodySize = 64 * 1024

/**
 * Same-origin redirects (307 and 308, which keep the method and body) followed per request.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxRedirects = 3

const credentialParams: ReadonlyArray<string> = ["key", "api_key", "api-key"]

const ErrorBody = Schema.fromJsonString(Schema.Union([
  Schema.Struct({ error: Schema.Struct({ message: Schema.String }) }),
  Schema.Struct({ message: Schema.String }),
  Schema.Array(Schema.Struct({ error: Schema.Struct({ message: Schema.String }) }))
]))
const decodeErrorBody = Schema.decodeUnknownResult(ErrorBody)

/**
 * The message of an error body: `error.message` or `message` of a JSON body (or
 * of its first element, as Google APIs answer), else the body itself.
 *
 * @example
 * ```ts
 * import { ProviderHttp } from "@agentloop/core"
 *
 * // The message of an API's error body, whatever its shape, bounded in size.
 * console.log(ProviderHttp.errorMessage(JSON.stringify({ error: { message: "Invalid model: gpt-6" } })))
 * // Invalid model: gpt-6
 * console.log(ProviderHttp.isContextLengthMessage("This model's maximum context length is 8192 tokens")) // true
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export const errorMessage = (body: string): string => {
  const decoded = decodeErrorBody(body)
  if (Result.isSuccess(decoded)) {
    const value = decoded.success
    if ("message" in value) return value.message
    if ("error" in value) return value.error.message
    return value[0]?.error.message ?? body
  }
  return body.length === 0 ? "(empty body)" : body
}

/**
 * Whether an error text says the prompt does not fit the model's context window.
 *
 * @since 0.1.0
 * @category guards
 */
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

const fromClientError = (provider: string) => (error: HttpClientError.HttpClientError): AiError.AiError =>
  error.reason._tag === "InvalidUrlError" || error.reason._tag === "EncodeError"
    ? new AiError.InvalidRequest({ provider, message: transportMessage(error) })
    : new AiError.Unavailable({ provider, message: transportMessage(error) })

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

/** The first `limit` bytes of a body as text; the connection is released without reading the rest. */
const readBounded = (response: HttpClientResponse.HttpClientResponse, limit: number): Effect.Effect<string> => {
  const chunks: Array<Uint8Array> = []
  let size = 0
  return response.stream.pipe(
    Stream.runForEachWhile((chunk) =>
      Effect.sync(() => {
        chunks.push(chunk.subarray(0, limit - size))
        size += Math.min(chunk.length, limit - size)
        return size < limit
      })
    ),
    Effect.ignore,
    Effect.map(() => {
      const decoder = new TextDecoder()
      return chunks.map((chunk) => decoder.decode(chunk, { stream: true })).join("") + decoder.decode()
    })
  )
}

const statusError = Effect.fnUntraced(function*(
  options: RequestOptions,
  provider: string,
  response: HttpClientResponse.HttpClientResponse
) {
  const body = yield* readBounded(response, maxErrorBodySize)
  const now = yield* Clock.currentTimeMillis
  const failure: ErrorResponse = {
    provider,
    status: response.status,
    body,
    message: errorMessage(body),
    retryAfter: retryAfterHeader(response.headers, now)
  }
  return options.classifyError?.(failure) ?? AiError.fromHttpStatus({
    ...failure,
    contextLengthExceeded: response.status === 400 && isContextLengthMessage(body)
  })
})

/** Where a redirect response points, when it may be followed: a 307 or 308 to the endpoint's own origin. */
const redirectTarget = (
  endpoint: Endpoint,
  request: HttpClientRequest.HttpClientRequest,
  response: HttpClientResponse.HttpClientResponse
): Result.Result<string, AiError.InvalidRequest> => {
  const { provider } = endpoint
  const status = response.status
  const location = response.headers.location
  const target = location === undefined ? undefined : parseUrl(location, request.url)
  if (target === undefined || target.origin !== endpoint.url?.origin) {
    return Result.fail(
      new AiError.InvalidRequest({
        provider,
        status,
        message: `the server redirected (${status}) to ${
          target === undefined ? "nowhere readable" : `another origin, ${target.protocol}//${target.host}`
        }; the credential is sent only to the configured base URL, so point baseUrl at the final address`
      })
    )
  }
  if (status !== 307 && status !== 308) {
    return Result.fail(
      new AiError.InvalidRequest({
        provider,
        status,
        message:
          `the server redirected with ${status}, which would drop the request body; only 307 and 308 are followed`
      })
    )
  }
  return Result.succeed(target.href)
}

/** A failure of the HTTP client, as its span keeps it: the message (which names no credential), not the request. */
const withoutRequest = (error: unknown): unknown => {
  if (!HttpClientError.isHttpClientError(error)) return error
  const kept = new Error(error.message)
  kept.name = error._tag
  kept.stack = `${kept.name}: ${kept.message}`
  return kept
}

/** A span whose exit is recorded without the response or the request it carries. */
const endingWithoutRequest = (span: Tracer.Span): Tracer.Span =>
  new Proxy(span, {
    get(target, key) {
      if (key === "end") {
        return (endTime: bigint, exit: Exit.Exit<unknown, unknown>) =>
          target.end(endTime, Exit.isSuccess(exit) ? Exit.void : Exit.failCause(Cause.map(exit.cause, withoutRequest)))
      }
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === "function" ? value.bind(target) : value
    }
  })

/**
 * Runs `effect` (a request of the HTTP client) with a tracer whose spans end
 * without the response or the error as their exit. Both carry the request, and
 * its headers are redacted only when printed, by the names the printing fiber
 * knows: an exporter, a log or `util.inspect` elsewhere would print the
 * credential header of a provider whose header is not a default one
 * (`x-goog-api-key`), or of an application that replaced the defaults.
 */
const tracedWithoutRequest = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.tracer, (tracer) =>
    Effect.withTracer(effect, {
      ...(tracer.context === undefined ? {} : { context: tracer.context }),
      span: (options) => endingWithoutRequest(tracer.span(options))
    }))

/**
 * Sends a streaming `POST` to the endpoint and returns the response body.
 *
 * A non-2xx status becomes the matching `AiError` (the provider's
 * `classifyError`, else `AiError.fromHttpStatus`, with the provider's message
 * and `Retry-After`); a transport failure, including a connection cut mid-body,
 * becomes `AiError.Unavailable`; the timeouts become `AiError.Timeout`. The
 * credential header, the secret extra headers and credential query parameters
 * are redacted from the HTTP client's spans, whose exit keeps neither the
 * request nor the response. Nothing is sent until the stream is pulled, and interrupting
 * the stream aborts the request.
 *
 * @since 0.1.0
 * @category requests
 */
export const stream = (
  endpoint: Endpoint,
  options: RequestOptions
): Stream.Stream<Uint8Array, AiError.AiError, HttpClient.HttpClient> => {
  const { credential, provider } = endpoint
  const base = endpoint.url
  if (base === undefined) {
    return Stream.fail(new AiError.InvalidRequest({ provider, message: endpoint.problem ?? "no base URL" }))
  }
  const url = new URL(base)
  url.pathname = `${url.pathname.replace(/\/+$/, "")}${options.path}`
  const params: Array<readonly [string, string | Redacted.Redacted]> = []
  // Credential query parameters are sent as `Redacted` values: sent, but never printed in a span or an error.
  for (const [name, value] of [...url.searchParams, ...Object.entries(options.urlParams ?? {})]) {
    params.push([name, credentialParams.includes(name) ? Redacted.make(value) : value])
  }
  url.search = ""
  const extra: Record<string, string> = {}
  const redactedNames: Array<string> = []
  for (const [name, value] of Object.entries(endpoint.headers)) {
    extra[name] = Redacted.isRedacted(value) ? Redacted.value(value) : value
    if (Redacted.isRedacted(value)) redactedNames.push(name)
  }
  if (credential !== undefined) {
    const value = Redacted.value(credential.value)
    extra[credential.header] = credential.scheme === undefined ? value : `${credential.scheme} ${value}`
    redactedNames.push(credential.header)
  }
  const initial = HttpClientRequest.post(url.href).pipe(
    HttpClientRequest.setHeaders(options.headers ?? {}),
    HttpClientRequest.setUrlParams(UrlParams.make(params)),
    HttpClientRequest.setHeaders(extra),
    HttpClientRequest.accept("text/event-stream"),
    HttpClientRequest.bodyJsonUnsafe(options.body)
  )
  return Stream.unwrap(Effect.gen(function*() {
    const clock = yield* Clock.Clock
    // The request lives in a scope of its own: closing it aborts the request, which is how a timeout ends a stalled body.
    const requestScope = yield* Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void))
    const client = HttpClient.withScope(yield* HttpClient.HttpClient)
    const init = Option.getOrUndefined(yield* Effect.serviceOption(FetchHttpClient.RequestInit))
    const send = (
      request: HttpClientRequest.HttpClientRequest,
      redirects: number
    ): Effect.Effect<HttpClientResponse.HttpClientResponse, AiError.AiError, Scope.Scope> =>
      Effect.flatMap(
        Effect.mapError(tracedWithoutRequest(client.execute(request)), fromClientError(provider)),
        (response) => {
          if (response.status >= 200 && response.status < 300) return Effect.succeed(response)
          if (response.status < 300 || response.status >= 400) {
            return Effect.flatMap(statusError(options, provider, response), Effect.fail)
          }
          const target = redirectTarget(endpoint, request, response)
          if (Result.isFailure(target)) return Effect.fail(target.failure)
          if (redirects >= maxRedirects) {
            return Effect.fail(
              new AiError.InvalidRequest({
                provider,
                status: response.status,
                message: `more than ${maxRedirects} redirects`
              })
            )
          }
          return Effect.andThen(
            readBounded(response, 0),
            send(HttpClientRequest.setUrl(request, target.success), redirects + 1)
          )
        }
      )
    const response = yield* send(initial, 0).pipe(
      ProviderTimeout.request({ provider, requestTimeout: options.requestTimeout, deadline: options.deadline, clock }),
      Scope.provide(requestScope),
      // `fetch` follows redirects itself, credential headers included; here they are seen and checked.
      Effect.provideService(FetchHttpClient.RequestInit, { ...init, redirect: "manual" }),
      Effect.updateService(Headers.CurrentRedactedNames, (names) => [...names, ...redactedNames]),
      Effect.updateService(UrlParams.CurrentRedactedNames, (names) => [...names, ...credentialParams])
    )
    return yield* ProviderTimeout.watch(response.stream.pipe(Stream.mapError(fromClientError(provider))), {
      provider,
      idleTimeout: options.idleTimeout,
      deadline: options.deadline,
      clock,
      abort: Scope.close(requestScope, Exit.void)
    })
  }))
}
