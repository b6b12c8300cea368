/**
 * The Google Gemini API as a `LanguageModel` layer:
 * `POST {baseUrl}/models/{model}:streamGenerateContent?alt=sse` with the key in
 * the `x-goog-api-key` header.
 *
 * Swap it for `@agentloop/responses` or `MockLanguageModel` by swapping the
 * layer; agent code does not change. Requests go through `effect/http`'s
 * `HttpClient` (`FetchHttpClient` in {@link layer}, any client with
 * {@link layerWithoutHttpClient}). Timeouts, retries, redaction and the span
 * attributes are `Provider`'s, the same for every provider; Google's error
 * details (a refused key, a daily quota, `RetryInfo`) are read by `GeminiError`.
 *
 * @since 0.1.0
 */
import { type LanguageModel, Provider } from "@agentloop/core"
import * as EffectConfig from "effect/Config"
import * as Effect from "effect/Effect"
import type { HttpClient } from "effect/http"
import type * as Layer from "effect/Layer"
import * as Random from "effect/Random"
import * as GeminiDecoder from "./GeminiDecoder.ts"
import * as GeminiError from "./GeminiError.ts"
import * as GeminiRequest from "./GeminiRequest.ts"

/**
 * The provider's name in errors and on `LanguageModel.provider`.
 *
 * @since 0.1.0
 * @category constants
 */
export const provider = GeminiError.provider

/**
 * The Gemini API's public endpoint.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "https://generativelanguage.googleapis.com/v1beta"

/**
 * The model asked when neither the layer nor the turn names one.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultModel = "gemini-2.5-flash"

/**
 * Settings of a Gemini layer: `Provider.Settings` (only `apiKey` is required) and Gemini's own.
 *
 * @since 0.1.0
 * @category models
 */
export interface Config extends Provider.Settings {
  /** Sent as `generationConfig.thinkingConfig` (`includeThoughts` defaults to true); a turn's `reasoningEffort` overrides it (a level, or a budget for Gemini 2.x). */
  readonly thinkingConfig?: GeminiRequest.ThinkingConfig | undefined
  /**
   * Asks for each call's arguments in pieces as the model writes them
   * (`streamFunctionCallArguments`; Vertex AI only, the Gemini API rejects it),
   * so they stream as `function_call_arguments_delta`s.
   */
  readonly streamFunctionCallArguments?: boolean | undefined
}

/**
 * The Gemini wire format, for `Provider`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const spec: Provider.Spec<Config> = {
  name: provider,
  defaultBaseUrl,
  defaultModel,
  credential: { header: "x-goog-api-key" },
  turn: (history, options, { config, model }) =>
    Effect.gen(function*() {
      const body = yield* GeminiRequest.make(history, options, {
        model,
        thinkingConfig: config.thinkingConfig,
        streamFunctionCallArguments: config.streamFunctionCallArguments
      })
      const fallbackKey = (yield* Random.nextIntBetween(0, Number.MAX_SAFE_INTEGER)).toString(36)
      return {
        request: {
          path: `/models/${encodeURIComponent(model)}:streamGenerateContent`,
          urlParams: { alt: "sse" },
          body
        },
        decoder: GeminiDecoder.make({ model, fallbackKey })
      }
    }),
  classifyError: GeminiError.classify
}

/**
 * Builds the `LanguageModel` service on the `HttpClient` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (config: Config) => Provider.make(spec, config)

/**
 * The Gemini `LanguageModel` over whatever `HttpClient` the application provides.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithoutHttpClient = (
  config: Config
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Provider.layerWithoutHttpClient(spec, config)

/**
 * The Gemini `LanguageModel` over `FetchHttpClient`.
 *
 * @example
 * ```ts
 * import { Gemini } from "@agentloop/gemini"
 * import { GeminiWire } from "@agentloop/gemini/testing"
 * import { AgentLoop } from "@agentloop/core"
 * import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
 * import { Effect, Layer, Redacted } from "effect"
 *
 * // In an application: `Gemini.layer({ apiKey: Redacted.make(process.env.GEMINI_API_KEY!) })`.
 * // Here the API is a loopback server that answers in Gemini's own stream format.
 * const program = Effect.gen(function*() {
 *   const server = yield* ProviderServer.ProviderServer
 *   yield* server.reply(MockLanguageModel.textTurn("Bonjour !"))
 *   const Flash = Gemini.layer({ apiKey: Redacted.make("AIza..."), baseUrl: server.url, model: "gemini-2.5-flash" })
 *   const result = yield* Effect.gen(function*() {
 *     const agent = yield* AgentLoop.AgentLoop
 *     return yield* agent.run({ input: "Say hello in French" })
 *   }).pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(Flash))))
 *   if (result._tag === "Stopped") console.log(result.output) // Bonjour !
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(ProviderServer.layerWire(GeminiWire.wire))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (config: Config): Layer.Layer<LanguageModel.LanguageModel> => Provider.layer(spec, config)

/**
 * The Gemini `LanguageModel` over `FetchHttpClient`, configured by `Config`
 * values: each setting from `options`, else `apiKey` from `GOOGLE_API_KEY` or
 * `GEMINI_API_KEY` (Google's libraries read both, and `GOOGLE_API_KEY` wins
 * when both are set). Fails with a `ConfigError` when no key is found.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  options?: Provider.ConfigOf<Config>
): Layer.Layer<LanguageModel.LanguageModel, EffectConfig.ConfigError> =>
  Provider.layerConfig(spec, {
    apiKey: EffectConfig.Redacted("GOOGLE_API_KEY").pipe(
      EffectConfig.orElse(() => EffectConfig.Redacted("GEMINI_API_KEY"))
    )
  }, options)
