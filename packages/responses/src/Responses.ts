/**
 * The OpenAI Responses API as a `LanguageModel` layer.
 *
 * ```ts
 * const OpenAi = Responses.layerConfig()                       // reads OPENAI_API_KEY
 * const program = agent.pipe(Effect.provide(OpenAi))          // agent code only sees LanguageModel
 * ```
 *
 * Requests go through `effect/http`'s `HttpClient`: `FetchHttpClient` in
 * {@link layer} and {@link layerConfig}, any client with
 * {@link layerWithoutHttpClient}; nothing here depends on a runtime.
 *
 * @since 0.1.0
 */
import { LanguageModel, ProviderHttp } from "@agentloop/core"
import type { AiError, Item, TurnDelta } from "@agentloop/core"
import { Config as EffectConfig, Context, Duration, Effect, Layer, Option, type Redacted, Stream } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import * as ResponsesDecoder from "./ResponsesDecoder.ts"
import * as ResponsesRequest from "./ResponsesRequest.ts"

/** The provider name in errors and on `LanguageModel.provider`. */
export const provider = "openai"

/** Settings of a Responses layer. Only `apiKey` is required. */
export interface Config {
  readonly apiKey: Redacted.Redacted<string>
  /** Default `https://api.openai.com/v1`; any server speaking the Responses API works. */
  readonly baseUrl?: string | undefined
  /** The model when a turn names none. Default {@link defaultModel}. */
  readonly model?: string | undefined
  /** Whether OpenAI stores responses. Unset leaves the API's default; `false` also asks for encrypted reasoning. */
  readonly store?: boolean | undefined
  /** Reasoning summaries to ask for when a turn sets a reasoning effort. */
  readonly reasoningSummary?: "auto" | "concise" | "detailed" | undefined
  /** Longest wait for the response headers. Default 60 seconds. */
  readonly requestTimeout?: Duration.Input | undefined
  /** Longest silence between two chunks of the stream. Default 5 minutes (reasoning can be quiet for long). */
  readonly idleTimeout?: Duration.Input | undefined
  /** When to retry a request that failed before any delta reached the consumer. Default `ProviderHttp.defaultRetryPolicy`. */
  readonly retryPolicy?: ProviderHttp.RetryPolicy | undefined
}

/** The model used when neither the turn nor the layer names one. */
export const defaultModel = "gpt-5-mini"

/**
 * Options for the requests made while it is set, e.g. with
 * `Stream.provideService(Responses.RequestOptions, { previousResponseId })`:
 * `previousResponseId` continues a stored response (send only the new items),
 * `store` overrides the layer's setting.
 */
export const RequestOptions = Context.Reference<{
  readonly previousResponseId?: string | undefined
  readonly store?: boolean | undefined
}>("@agentloop/responses/RequestOptions", { defaultValue: () => ({}) })

/** Builds the `LanguageModel` service on the `HttpClient` in context. */
export const make = Effect.fnUntraced(function*(config: Config) {
  const client = yield* HttpClient.HttpClient
  const baseUrl = (config.baseUrl ?? "https://api.openai.com/v1").replace(/\/+$/, "")
  const requestTimeout = config.requestTimeout ?? Duration.seconds(60)
  const idleTimeout = config.idleTimeout ?? Duration.minutes(5)

  const streamTurn = (
    history: ReadonlyArray<Item.Item>,
    options: LanguageModel.TurnOptions
  ): Stream.Stream<TurnDelta.TurnDelta, AiError.AiError> =>
    Stream.unwrap(Effect.gen(function*() {
      const requestOptions = yield* RequestOptions
      const store = requestOptions.store ?? config.store
      const body = ResponsesRequest.body(history, options, {
        model: config.model ?? defaultModel,
        store,
        previousResponseId: requestOptions.previousResponseId,
        reasoningSummary: config.reasoningSummary
      })
      const request = HttpClientRequest.post(`${baseUrl}/responses`).pipe(
        HttpClientRequest.bearerToken(config.apiKey),
        HttpClientRequest.accept("text/event-stream"),
        HttpClientRequest.bodyJsonUnsafe(body)
      )
      return ProviderHttp.streamEvents({ provider, request, requestTimeout, idleTimeout, secrets: [config.apiKey] }).pipe(
        ResponsesDecoder.decode(provider, body.model),
        ProviderHttp.retry(config.retryPolicy ?? ProviderHttp.defaultRetryPolicy),
        ProviderHttp.redactErrors([config.apiKey]),
        Stream.provideService(HttpClient.HttpClient, client),
        Stream.withSpan("Responses.streamTurn", { attributes: { "gen_ai.request.model": body.model } })
      )
    }))

  return LanguageModel.LanguageModel.of({ provider, streamTurn })
})

/** The Responses `LanguageModel` over whatever `HttpClient` the application provides. */
export const layerWithoutHttpClient = (
  config: Config
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(config))

/** The Responses `LanguageModel` over `FetchHttpClient`. */
export const layer = (config: Config): Layer.Layer<LanguageModel.LanguageModel> =>
  layerWithoutHttpClient(config).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * A `LanguageModel` layer configured from the environment: `OPENAI_API_KEY`
 * (required, redacted), `OPENAI_BASE_URL` and `OPENAI_MODEL` (optional).
 * `overrides` set everything else.
 */
export const layerConfig = (
  overrides?: Omit<Config, "apiKey" | "baseUrl" | "model">
): Layer.Layer<LanguageModel.LanguageModel, EffectConfig.ConfigError> =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.gen(function*() {
      const apiKey = yield* EffectConfig.Redacted("OPENAI_API_KEY")
      const baseUrl = yield* EffectConfig.option(EffectConfig.String("OPENAI_BASE_URL"))
      const model = yield* EffectConfig.option(EffectConfig.String("OPENAI_MODEL"))
      return yield* make({
        ...overrides,
        apiKey,
        baseUrl: Option.getOrUndefined(baseUrl),
        model: Option.getOrUndefined(model)
      })
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))
