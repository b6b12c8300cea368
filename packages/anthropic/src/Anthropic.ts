/**
 * The Anthropic Messages API as a `LanguageModel` layer:
 * `POST {baseUrl}/v1/messages` with `stream: true`, the key in the `x-api-key`
 * header and the API version in `anthropic-version`.
 *
 * ```ts
 * const Claude = Anthropic.layerConfig()                       // reads ANTHROPIC_API_KEY
 * const program = agent.pipe(Effect.provide(Claude))           // agent code only sees LanguageModel
 * ```
 *
 * Swap it for `@agentloop/responses`, `@agentloop/gemini` or
 * `MockLanguageModel` by swapping the layer; agent code does not change.
 * Requests go through `effect/http`'s `HttpClient` (`FetchHttpClient` in
 * {@link layer}, any client with {@link layerWithoutHttpClient}). Timeouts,
 * retries, redaction and the span attributes are `Provider`'s, the same for
 * every provider.
 *
 * @since 0.1.0
 */
import { type LanguageModel, Provider } from "@agentloop/core"
import * as EffectConfig from "effect/Config"
import * as Effect from "effect/Effect"
import type { HttpClient } from "effect/http"
import type * as Layer from "effect/Layer"
import * as Random from "effect/Random"
import type * as AnthropicCache from "./AnthropicCache.ts"
import * as AnthropicDecoder from "./AnthropicDecoder.ts"
import * as AnthropicError from "./AnthropicError.ts"
import * as AnthropicRequest from "./AnthropicRequest.ts"

/**
 * The provider's name in errors and on `LanguageModel.provider`.
 *
 * @since 0.1.0
 * @category constants
 */
export const provider = AnthropicError.provider

/**
 * Anthropic's public endpoint, as `ANTHROPIC_BASE_URL` is written: without `/v1`.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "https://api.anthropic.com"

/**
 * The model asked when neither the layer nor the turn names one.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultModel = "claude-haiku-4-5"

/**
 * The `anthropic-version` every request sends: the version of the API this layer reads.
 *
 * @since 0.1.0
 * @category constants
 */
export const apiVersion = "2023-06-01"

/**
 * Settings of an Anthropic layer: `Provider.Settings` (only `apiKey` is required) and Anthropic's own.
 *
 * @since 0.1.0
 * @category models
 */
export interface Config extends Provider.Settings {
  /** `max_tokens` when a turn sets no `params.maxOutputTokens`; default `AnthropicRequest.defaultMaxTokens` (8,192). */
  readonly maxTokens?: number | undefined
  /** How the model thinks when a turn sets no reasoning effort (which wins); unset sends none, the model's default. */
  readonly thinking?: AnthropicRequest.Thinking | undefined
  /** `false` asks for one tool call per turn at most; the API's default is parallel calls. */
  readonly parallelToolCalls?: boolean | undefined
  /**
   * Where the request marks its stable prefix for the prompt cache: by default
   * the tools, the system prompt and the history (see
   * `AnthropicCache.PromptCache`); `false` marks nothing.
   */
  readonly promptCache?: AnthropicCache.PromptCache | false | undefined
}

/**
 * The Messages wire format, for `Provider`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const spec: Provider.Spec<Config> = {
  name: provider,
  defaultBaseUrl,
  defaultModel,
  credential: { header: "x-api-key" },
  classifyError: AnthropicError.classify,
  turn: (history, options, { config, model }) =>
    Effect.gen(function*() {
      const { body, outputTool } = yield* AnthropicRequest.make(history, options, {
        model,
        maxTokens: config.maxTokens,
        thinking: config.thinking,
        parallelToolCalls: config.parallelToolCalls,
        promptCache: config.promptCache
      })
      const fallbackKey = (yield* Random.nextIntBetween(0, Number.MAX_SAFE_INTEGER)).toString(36)
      return {
        request: { path: "/v1/messages", headers: { "anthropic-version": apiVersion }, body },
        decoder: AnthropicDecoder.make({ model, fallbackKey, outputTool })
      }
    })
}

/**
 * Builds the `LanguageModel` service on the `HttpClient` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (config: Config) => Provider.make(spec, config)

/**
 * The Anthropic `LanguageModel` over whatever `HttpClient` the application provides.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithoutHttpClient = (
  config: Config
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Provider.layerWithoutHttpClient(spec, config)

/**
 * The Anthropic `LanguageModel` over `FetchHttpClient`.
 *
 * @example
 * ```ts
 * import { Anthropic } from "@agentloop/anthropic"
 * import { AnthropicWire } from "@agentloop/anthropic/testing"
 * import { AgentLoop } from "@agentloop/core"
 * import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
 * import { Effect, Layer, Redacted } from "effect"
 *
 * // In an application: `Anthropic.layer({ apiKey: Redacted.make(process.env.ANTHROPIC_API_KEY!) })`.
 * // Here the API is a loopback server that answers in the Messages API's own stream format.
 * const program = Effect.gen(function*() {
 *   const server = yield* ProviderServer.ProviderServer
 *   yield* server.reply(MockLanguageModel.textTurn("Bonjour !"))
 *   const Claude = Anthropic.layer({ apiKey: Redacted.make("sk-ant-..."), baseUrl: server.url, model: "claude-sonnet-4-5" })
 *   const result = yield* Effect.gen(function*() {
 *     const agent = yield* AgentLoop.AgentLoop
 *     return yield* agent.run({ input: "Say hello in French" })
 *   }).pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(Claude))))
 *   if (result._tag === "Stopped") console.log(result.output) // Bonjour !
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(ProviderServer.layerWire(AnthropicWire.wire))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (config: Config): Layer.Layer<LanguageModel.LanguageModel> => Provider.layer(spec, config)

/**
 * The Anthropic `LanguageModel` over `FetchHttpClient`, configured by `Config`
 * values: each setting from `options`, else `apiKey` from `ANTHROPIC_API_KEY`
 * and `baseUrl` from `ANTHROPIC_BASE_URL` (when set). Fails with a
 * `ConfigError` when no key is found.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  options?: Provider.ConfigOf<Config>
): Layer.Layer<LanguageModel.LanguageModel, EffectConfig.ConfigError> =>
  Provider.layerConfig(spec, {
    apiKey: EffectConfig.Redacted("ANTHROPIC_API_KEY"),
    baseUrl: EffectConfig.String("ANTHROPIC_BASE_URL").pipe(EffectConfig.withDefault(undefined))
  }, options)
