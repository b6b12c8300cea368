/**
 * The OpenAI Responses API as a `LanguageModel` layer:
 * `POST {baseUrl}/responses` with `stream: true` and the key as a bearer token.
 *
 * ```ts
 * const OpenAi = Responses.layerConfig()                       // reads OPENAI_API_KEY
 * const program = agent.pipe(Effect.provide(OpenAi))          // agent code only sees LanguageModel
 * ```
 *
 * Requests go through `effect/http`'s `HttpClient`: `FetchHttpClient` in
 * {@link layer} and {@link layerConfig}, any client with
 * {@link layerWithoutHttpClient}; nothing here depends on a runtime. Timeouts,
 * retries, redaction and the span attributes are `Provider`'s, the same for
 * every provider.
 *
 * @since 0.1.0
 */
import { type LanguageModel, Provider, StrictSchema } from "@agentloop/core"
import * as EffectConfig from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { HttpClient } from "effect/http"
import type * as Layer from "effect/Layer"
import * as ResponsesDecoder from "./ResponsesDecoder.ts"
import * as ResponsesError from "./ResponsesError.ts"
import * as ResponsesRequest from "./ResponsesRequest.ts"

/**
 * The provider name in errors and on `LanguageModel.provider`.
 *
 * @since 0.1.0
 * @category constants
 */
export const provider = ResponsesError.provider

/**
 * OpenAI's public endpoint.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultBaseUrl = "https://api.openai.com/v1"

/**
 * The model used when neither the turn nor the layer names one.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultModel = "gpt-5-mini"

/**
 * Settings of a Responses layer: `Provider.Settings` (only `apiKey` is required) and OpenAI's own.
 *
 * @since 0.1.0
 * @category models
 */
export interface Config extends Provider.Settings {
  /** Whether OpenAI stores responses. Unset leaves the API's default; `false` also asks for encrypted reasoning. */
  readonly store?: boolean | undefined
  /** Reasoning summaries to ask for when a turn sets a reasoning effort. */
  readonly reasoningSummary?: "auto" | "concise" | "detailed" | undefined
  /**
   * Sent as `prompt_cache_key`: OpenAI routes requests with the same key and
   * prompt prefix to the same cache, which raises the share of cached input
   * when many conversations share a prefix. Caching itself is always on.
   */
  readonly promptCacheKey?: string | undefined
}

/**
 * Options for the requests made while it is set, e.g. with
 * `Stream.provideService(Responses.RequestOptions, { previousResponseId })`:
 * `previousResponseId` continues a stored response (send only the new items),
 * `store` and `promptCacheKey` override the layer's settings (a key per
 * conversation or per user, say).
 *
 * @since 0.1.0
 * @category services
 */
export const RequestOptions = Context.Reference<{
  readonly previousResponseId?: string | undefined
  readonly store?: boolean | undefined
  readonly promptCacheKey?: string | undefined
}>("@agentloop/responses/RequestOptions", { defaultValue: () => ({}) })

/**
 * The Responses wire format, for `Provider`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const spec: Provider.Spec<Config> = {
  name: provider,
  defaultBaseUrl,
  defaultModel,
  credential: { header: "authorization", scheme: "Bearer" },
  classifyError: ResponsesError.classify,
  turn: (history, options, { config, model }) =>
    Effect.gen(function*() {
      const requestOptions = yield* RequestOptions
      const tools = new Map<string, (text: string) => string>()
      for (const tool of options.tools ?? []) {
        const normalize = StrictSchema.make(tool.parameters).normalize
        if (normalize !== undefined) tools.set(tool.name, normalize)
      }
      const body = yield* Effect.fromResult(ResponsesRequest.body(history, { ...options, model }, {
        model,
        store: requestOptions.store ?? config.store,
        previousResponseId: requestOptions.previousResponseId,
        reasoningSummary: config.reasoningSummary,
        promptCacheKey: requestOptions.promptCacheKey ?? config.promptCacheKey
      }))
      const decoder = ResponsesDecoder.make({
        model: body.model,
        tools,
        output: options.output === undefined ? undefined : StrictSchema.make(options.output.schema).normalize
      })
      return { request: { path: "/responses", body }, decoder }
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
 * The Responses `LanguageModel` over whatever `HttpClient` the application provides.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithoutHttpClient = (
  config: Config
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Provider.layerWithoutHttpClient(spec, config)

/**
 * The Responses `LanguageModel` over `FetchHttpClient`.
 *
 * @example
 * ```ts
 * import { Responses } from "@agentloop/responses"
 * import { ResponsesWire } from "@agentloop/responses/testing"
 * import { AgentLoop } from "@agentloop/core"
 * import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
 * import { Effect, Layer, Redacted } from "effect"
 *
 * // In an application: `Responses.layer({ apiKey: Redacted.make(process.env.OPENAI_API_KEY!) })`.
 * // Here the API is a loopback server that answers in the Responses API's own stream format.
 * const program = Effect.gen(function*() {
 *   const server = yield* ProviderServer.ProviderServer
 *   yield* server.reply(MockLanguageModel.textTurn("Bonjour !"))
 *   const OpenAI = Responses.layer({ apiKey: Redacted.make("sk-..."), baseUrl: server.url, model: "gpt-5-mini" })
 *   const result = yield* Effect.gen(function*() {
 *     const agent = yield* AgentLoop.AgentLoop
 *     return yield* agent.run({ input: "Say hello in French" })
 *   }).pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(OpenAI))))
 *   if (result._tag === "Stopped") console.log(result.output) // Bonjour !
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(ProviderServer.layerWire(ResponsesWire.wire))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (config: Config): Layer.Layer<LanguageModel.LanguageModel> => Provider.layer(spec, config)

/**
 * The Responses `LanguageModel` over `FetchHttpClient`, configured by `Config`
 * values: each setting from `options`, else `apiKey` from `OPENAI_API_KEY`
 * and `baseUrl` from `OPENAI_BASE_URL` (when set). Fails with a `ConfigError`
 * when no key is found.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  options?: Provider.ConfigOf<Config>
): Layer.Layer<LanguageModel.LanguageModel, EffectConfig.ConfigError> =>
  Provider.layerConfig(spec, {
    apiKey: EffectConfig.Redacted("OPENAI_API_KEY"),
    baseUrl: EffectConfig.String("OPENAI_BASE_URL").pipe(EffectConfig.withDefault(undefined))
  }, options)
