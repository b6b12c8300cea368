/**
 * A `LanguageModel` made from a vendor's streaming HTTP API: the settings every
 * provider layer shares, and the pipeline every turn runs through.
 *
 * A provider package describes its wire format with a {@link Spec} (the
 * credential header, the request of a turn and the decoder of its stream) and
 * gets, by construction, what every provider must do the same way: bounded
 * waits and a per-turn deadline, retries that honour `Retry-After` up to a cap
 * and never replay deltas, errors without secrets or megabytes of message, the
 * credential sent to the configured origin only, and the endpoint's
 * `server.address` and `server.port` on the current span.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import * as Layer from "effect/Layer"
import type * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as AiError from "../AiError.ts"
import type * as Item from "../Item.ts"
import * as LanguageModel from "../LanguageModel.ts"
import type * as TurnDelta from "../TurnDelta.ts"
import * as ProviderHttp from "./ProviderHttp.ts"
import * as ProviderRetry from "./ProviderRetry.ts"
import * as ProviderStream from "./ProviderStream.ts"

/**
 * What every provider layer is configured with, the key optional: the
 * settings of a wire whose servers may need no key (a local model). A vendor's
 * API takes {@link Settings}, which requires it.
 *
 * @since 0.2.0
 * @category models
 */
export interface CommonSettings {
  /** Sent in the provider's credential header only; never logged, traced or put in an error. Unset sends no credential. */
  readonly apiKey?: Redacted.Redacted<string> | undefined
  /** The provider's public endpoint by default; any server speaking its API works. Must not carry credentials. */
  readonly baseUrl?: string | undefined
  /**
   * Headers sent with every request (a gateway's, a proxy's: OpenRouter's
   * `HTTP-Referer`, Azure's `api-key`). A `Redacted` value, or any value of a
   * credential header (`ProviderHttp.credentialHeaders`), is a secret: redacted
   * on spans and cut out of errors like the key. They cannot replace the
   * credential header, `accept` or `content-type`.
   */
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
  /** The model when a turn names none. */
  readonly model?: string | undefined
  /** Longest wait for the response headers. Default 60 seconds. */
  readonly requestTimeout?: Duration.Input | undefined
  /** Longest silence between two chunks of the stream. Default 5 minutes (reasoning can be quiet for long). */
  readonly idleTimeout?: Duration.Input | undefined
  /**
   * Longest a whole turn may take, retries and their waits included, however
   * busy the stream keeps the connection (keepalive comments); then
   * `AiError.Timeout`. Default 10 minutes.
   */
  readonly turnTimeout?: Duration.Input | undefined
  /** When to retry a request that failed before any delta reached the consumer. Default `ProviderRetry.defaultPolicy`. */
  readonly retryPolicy?: ProviderRetry.Policy | undefined
  /** The longest `Retry-After` a retry waits for; one asking for longer fails with its `retryAfter`. Default 1 minute. */
  readonly maxRetryAfter?: Duration.Input | undefined
}

/**
 * What a vendor's provider layer is configured with: {@link CommonSettings} with `apiKey` required.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings extends CommonSettings {
  /** Sent in the provider's credential header only; never logged, traced or put in an error. */
  readonly apiKey: Redacted.Redacted<string>
}

/**
 * The defaults of {@link CommonSettings}.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  requestTimeout: Duration.seconds(60),
  idleTimeout: Duration.minutes(5),
  turnTimeout: Duration.minutes(10)
} as const

/**
 * One request of a turn: where it goes (below the base URL), the headers its wire format requires, and its JSON body.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly path: string
  readonly urlParams?: Readonly<Record<string, string>> | undefined
  /** Sent besides the credential (e.g. `anthropic-version`); see `ProviderHttp.RequestOptions.headers`. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly body: unknown
}

/**
 * A wire format: everything a provider package supplies to become a `LanguageModel`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Spec<C extends CommonSettings> {
  /** The provider's name in errors and on `LanguageModel.provider`. */
  readonly name: string
  readonly defaultBaseUrl: string
  readonly defaultModel: string
  /** The header that carries the key, e.g. `{ header: "authorization", scheme: "Bearer" }`; not sent without a key. */
  readonly credential: { readonly header: string; readonly scheme?: string | undefined }
  /**
   * The request of one attempt at a turn and the decoder of its stream (made
   * again for a retry). Fails with `AiError.InvalidRequest` when the history
   * cannot be expressed in this wire format.
   */
  readonly turn: (
    history: ReadonlyArray<Item.Item>,
    options: LanguageModel.TurnOptions,
    context: { readonly config: C; readonly model: string }
  ) => Effect.Effect<{ readonly request: Request; readonly decoder: ProviderStream.Decoder }, AiError.AiError>
  /** The provider's reading of an HTTP error response; see `ProviderHttp.RequestOptions.classifyError`. */
  readonly classifyError?: ((failure: ProviderHttp.ErrorResponse) => AiError.AiError | undefined) | undefined
}

/**
 * Builds the `LanguageModel` of `spec` configured with `config`, on the `HttpClient` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fn("Provider.make")(function*<C extends CommonSettings>(spec: Spec<C>, config: C) {
  const client = yield* HttpClient.HttpClient
  const provider = spec.name
  const endpoint = ProviderHttp.endpoint({
    provider,
    baseUrl: config.baseUrl ?? spec.defaultBaseUrl,
    credential: config.apiKey === undefined ? undefined : { ...spec.credential, value: config.apiKey },
    headers: config.headers
  })
  const turnTimeout = Duration.fromInputUnsafe(config.turnTimeout ?? defaults.turnTimeout)
  const overdue = new AiError.Timeout({
    provider,
    message: `the turn took longer than ${Duration.format(turnTimeout)}`
  })
  const http = {
    requestTimeout: config.requestTimeout ?? defaults.requestTimeout,
    idleTimeout: config.idleTimeout ?? defaults.idleTimeout,
    classifyError: spec.classifyError
  }

  const streamTurn = (
    history: ReadonlyArray<Item.Item>,
    options: LanguageModel.TurnOptions
  ): Stream.Stream<TurnDelta.TurnDelta, AiError.AiError> => {
    const context = { config, model: options.model ?? config.model ?? spec.defaultModel }
    return Stream.unwrap(Effect.gen(function*() {
      yield* Effect.annotateCurrentSpan(endpoint.attributes)
      const deadline = { at: (yield* Clock.currentTimeMillis) + Duration.toMillis(turnTimeout), error: overdue }
      const attempt = Stream.unwrap(
        Effect.map(
          spec.turn(history, options, context),
          ({ decoder, request }) =>
            ProviderHttp.stream(endpoint, { ...request, ...http, deadline }).pipe(
              ProviderStream.decode(decoder, { provider })
            )
        )
      )
      return attempt.pipe(
        ProviderRetry.retry({ policy: config.retryPolicy, maxRetryAfter: config.maxRetryAfter, deadline }),
        ProviderStream.sanitizeErrors(endpoint.secrets),
        Stream.provideService(HttpClient.HttpClient, client)
      )
    }))
  }

  return LanguageModel.LanguageModel.of({ provider, streamTurn })
})

/**
 * The `LanguageModel` of `spec` over whatever `HttpClient` the application provides.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithoutHttpClient = <C extends CommonSettings>(
  spec: Spec<C>,
  config: C
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(spec, config))

/**
 * The `LanguageModel` of `spec` over `FetchHttpClient`.
 *
 * @example
 * ```ts
 * import { ChatCompletions } from "@agentloop/chat-completions"
 * import { ChatCompletionsWire } from "@agentloop/chat-completions/testing"
 * import { Item, LanguageModel, Provider, Turn } from "@agentloop/core"
 * import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
 * import { Effect, Redacted, Stream } from "effect"
 *
 * // A provider package's `layer` is `Provider.layer` with its wire format's `spec`: the timeouts, retries,
 * // redaction and decoding come with it. Here the server is a loopback one speaking Chat Completions.
 * const program = Effect.gen(function*() {
 *   const server = yield* ProviderServer.ProviderServer
 *   yield* server.reply(MockLanguageModel.textTurn("Hi there"))
 *   const layer = Provider.layer(ChatCompletions.spec, {
 *     baseUrl: server.url,
 *     apiKey: Redacted.make("sk-..."),
 *     model: "gpt-4o-mini",
 *     requestTimeout: "10 seconds"
 *   })
 *   const last = yield* Effect.flatMap(LanguageModel.LanguageModel, (model) =>
 *     Stream.runLast(model.streamTurn([Item.userMessage("Hi")], {}))).pipe(Effect.provide(layer))
 *   if (last._tag === "Some" && last.value.type === "turn_complete") console.log(Turn.text(last.value.turn)) // Hi there
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(ProviderServer.layerWire(ChatCompletionsWire.wire))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <C extends CommonSettings>(spec: Spec<C>, config: C): Layer.Layer<LanguageModel.LanguageModel> =>
  layerWithoutHttpClient(spec, config).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * A provider's settings as `Config` values, each optional: what a provider's `layerConfig` takes.
 *
 * @since 0.1.0
 * @category models
 */
export type ConfigOf<C extends CommonSettings> = { readonly [K in keyof C]?: Config.Config<C[K]> }

/**
 * The layer of `spec` over `FetchHttpClient`, configured from `Config` values:
 * those in `options`, else `defaults` (the vendor's standard variables, such as
 * `OPENAI_API_KEY`). Fails with a `ConfigError` when a required key is not found.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = <C extends CommonSettings>(
  spec: Spec<C>,
  defaults: { readonly apiKey: Config.Config<C["apiKey"]> } & ConfigOf<C>,
  options: ConfigOf<C> | undefined
): Layer.Layer<LanguageModel.LanguageModel, Config.ConfigError> => {
  // Every key of C is optional but `apiKey`, which `defaults` always has: the merged record is a C.
  const config = Config.all({ ...defaults, ...options }) as Config.Config<C>
  return Layer.unwrap(Effect.map(config, (config) => layer(spec, config)))
}
