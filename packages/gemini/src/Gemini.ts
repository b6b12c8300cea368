/**
 * The Google Gemini provider: a `LanguageModel` layer over the Gemini API's
 * `models/{model}:streamGenerateContent?alt=sse`.
 *
 * Swap it for `@agentloop/responses` or `MockLanguageModel` by swapping the
 * layer; agent code does not change. Requests go through `effect/http`'s
 * `HttpClient` (`FetchHttpClient` in {@link layer}, any client with
 * {@link layerWithoutHttpClient}), are retried on transient failures until the
 * first delta reaches the consumer, and are aborted when the consumer stops.
 *
 * @since 0.1.0
 */
import { LanguageModel, ProviderHttp } from "@agentloop/core"
import type { AiError, Item, TurnDelta } from "@agentloop/core"
import { Config as EffectConfig, Effect, Layer, Random, Redacted, Stream } from "effect"
import type { Duration } from "effect"
import type { ConfigError } from "effect/Config"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import * as GeminiRequest from "./GeminiRequest.ts"
import * as GeminiTurn from "./GeminiTurn.ts"
import type * as GeminiWire from "./GeminiWire.ts"

/** The provider's name in errors and on `LanguageModel.provider`. */
export const provider = "gemini"

/** The Gemini API's public endpoint. */
export const defaultBaseUrl = "https://generativelanguage.googleapis.com/v1beta"

/** The model asked when neither the layer nor the turn names one. */
export const defaultModel = "gemini-2.5-flash"

/** How to reach Gemini and how to ask it. Only `apiKey` is required. */
export interface Config {
  /** Sent in the `x-goog-api-key` header only; never logged, traced or put in an error. */
  readonly apiKey: Redacted.Redacted<string>
  /** Defaults to {@link defaultBaseUrl}; point it at a proxy or a test server. */
  readonly baseUrl?: string | undefined
  /** Used when a turn's options name no model; defaults to {@link defaultModel}. */
  readonly model?: string | undefined
  /** Sent as `generationConfig.thinkingConfig` (`includeThoughts` defaults to true); a turn's `reasoningEffort` overrides it (a level, or a budget for Gemini 2.x). */
  readonly thinkingConfig?: GeminiWire.ThinkingConfig | undefined
  /** Replaces `ProviderHttp.defaultRetryPolicy`; `Schedule.recurs(0)` turns retries off. */
  readonly retryPolicy?: ProviderHttp.RetryPolicy | undefined
  /** How long to wait for the response headers. */
  readonly requestTimeout?: Duration.Input | undefined
  /** How long to wait between two chunks of the response body. */
  readonly idleTimeout?: Duration.Input | undefined
}

/**
 * Builds the `LanguageModel` service from the `HttpClient` in context. Each
 * `streamTurn` sends one request when pulled (again on a retry) and ends with
 * exactly one `turn_complete`.
 */
export const make = Effect.fn("Gemini.make")(function*(config: Config) {
  const client = yield* HttpClient.HttpClient
  const baseUrl = (config.baseUrl ?? defaultBaseUrl).replace(/\/+$/, "")
  const settings: GeminiRequest.Settings = { thinkingConfig: config.thinkingConfig }
  const retryPolicy = config.retryPolicy ?? ProviderHttp.defaultRetryPolicy

  const attempt = (history: ReadonlyArray<Item.Item>, options: LanguageModel.TurnOptions, model: string) =>
    Stream.unwrap(Effect.gen(function*() {
      const body = yield* GeminiRequest.make(history, options, { ...settings, model })
      const fallbackKey = (yield* Random.nextIntBetween(0, Number.MAX_SAFE_INTEGER)).toString(36)
      const request = HttpClientRequest.post(`${baseUrl}/models/${encodeURIComponent(model)}:streamGenerateContent`).pipe(
        HttpClientRequest.setUrlParam("alt", "sse"),
        HttpClientRequest.setHeader("x-goog-api-key", Redacted.value(config.apiKey)),
        HttpClientRequest.bodyJsonUnsafe(body)
      )
      const events = ProviderHttp.streamEvents({
        provider,
        request,
        requestTimeout: config.requestTimeout,
        idleTimeout: config.idleTimeout,
        secrets: [config.apiKey]
      })
      return GeminiTurn.fromEvents(events, { model, fallbackKey })
    }))

  return LanguageModel.LanguageModel.of({
    provider,
    streamTurn: (history, options): Stream.Stream<TurnDelta.TurnDelta, AiError.AiError> => {
      const model = options.model ?? config.model ?? defaultModel
      return attempt(history, options, model).pipe(
        ProviderHttp.retry(retryPolicy),
        // Gemini may quote the request, key included, in an error event.
        ProviderHttp.redactErrors([config.apiKey]),
        Stream.provideService(HttpClient.HttpClient, client),
        Stream.withSpan("Gemini.streamTurn", { attributes: { "gen_ai.system": provider, "gen_ai.request.model": model } })
      )
    }
  })
})

/** The Gemini `LanguageModel` over whatever `HttpClient` the application provides. */
export const layerWithoutHttpClient = (config: Config): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Layer.effect(LanguageModel.LanguageModel, make(config))

/** The Gemini `LanguageModel` over `FetchHttpClient`. */
export const layer = (config: Config): Layer.Layer<LanguageModel.LanguageModel> =>
  layerWithoutHttpClient(config).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * Like {@link layer}, reading the API key from `GEMINI_API_KEY` (as a redacted
 * config value); the other settings come from `options`.
 */
export const layerConfig = (
  options: Omit<Config, "apiKey"> = {}
): Layer.Layer<LanguageModel.LanguageModel, ConfigError> =>
  Layer.unwrap(Effect.map(EffectConfig.Redacted("GEMINI_API_KEY"), (apiKey) => layer({ ...options, apiKey })))
