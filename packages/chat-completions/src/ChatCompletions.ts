/**
 * OpenAI's Chat Completions API as a `LanguageModel` layer, for every server
 * that speaks it: local models (Ollama, vLLM, llama.cpp, LM Studio), gateways
 * (OpenRouter, LiteLLM, Azure OpenAI) and vendors (Groq, DeepSeek, Mistral,
 * xAI, Together, Fireworks). `POST {baseUrl}/chat/completions` with
 * `stream: true` and `stream_options.include_usage`, the key (when there is
 * one: a local server needs none) as a bearer token.
 *
 * ```ts
 * const Local = ChatCompletions.layer({ baseUrl: "http://localhost:11434/v1", model: "qwen3" })   // Ollama
 * const program = agent.pipe(Effect.provide(Local))          // agent code only sees LanguageModel
 * ```
 *
 * Requests go through `effect/http`'s `HttpClient` (`FetchHttpClient` in
 * {@link layer}, any client with {@link layerWithoutHttpClient}). Timeouts,
 * retries, redaction, extra headers and the span attributes are `Provider`'s,
 * the same for every provider.
 *
 * @since 0.2.0
 */
import { type LanguageModel, Provider, StrictSchema } from "@agentloop/core"
import * as EffectConfig from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { HttpClient } from "effect/http"
import type * as Layer from "effect/Layer"
import * as Random from "effect/Random"
import * as ChatCompletionsDecoder from "./ChatCompletionsDecoder.ts"
import * as ChatCompletionsError from "./ChatCompletionsError.ts"
import * as ChatCompletionsRequest from "./ChatCompletionsRequest.ts"

/**
 * The provider's name in errors and on `LanguageModel.provider`.
 *
 * @since 0.2.0
 * @category constants
 */
export const provider = ChatCompletionsError.provider

/**
 * Settings of a Chat Completions layer: `Provider.CommonSettings` (the key
 * optional) with `baseUrl` required (there is no default server: it ends
 * with the API's version, e.g. `https://api.groq.com/openai/v1` or
 * `http://localhost:11434/v1`), and the wire's own settings.
 *
 * @since 0.2.0
 * @category models
 */
export interface Config extends Provider.CommonSettings {
  /** The server, up to the path `/chat/completions` is appended to. */
  readonly baseUrl: string
  /** The model when a turn names none; unset sends none, and a server serving one model (llama.cpp, vLLM) picks it. */
  readonly model?: string | undefined
  /**
   * Whether tools and structured output are sent with `strict: true`
   * (OpenAI's strict mode, the schema made strict as `StrictSchema` does)
   * where their schema allows it. Default `true`; `false` sends every schema as
   * it is, for servers that refuse `strict` or its schemas.
   */
  readonly strict?: boolean | undefined
  /** Which field, if any, carries earlier turns' reasoning back; see `ChatCompletionsRequest.ReasoningHistory`. Default `none`. */
  readonly reasoningHistory?: ChatCompletionsRequest.ReasoningHistory | undefined
  /** The field the output limit goes in; `max_completion_tokens` for OpenAI's reasoning models. Default `max_tokens`. */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens" | undefined
  /** `false` leaves out `stream_options` (for servers that refuse it): the turn then has usage only if the server sends it anyway. */
  readonly includeUsage?: boolean | undefined
  /** `false` asks for one tool call per turn at most (`parallel_tool_calls`); unset leaves the server's default. */
  readonly parallelToolCalls?: boolean | undefined
  /**
   * Sent as `prompt_cache_key`: OpenAI routes requests with the same key and
   * prompt prefix to the same cache, which raises the share of cached input
   * when many conversations share a prefix. Servers that do not know the
   * field ignore it, or, for a strict one, refuse the request: leave it unset
   * for those. Caching itself is the server's own.
   */
  readonly promptCacheKey?: string | undefined
}

/**
 * Options for the requests made while it is set, e.g. with
 * `Stream.provideService(ChatCompletions.RequestOptions, { promptCacheKey })`:
 * `promptCacheKey` overrides the layer's (a key per conversation or per user).
 *
 * @since 0.2.0
 * @category context
 */
export const RequestOptions = Context.Reference<{
  readonly promptCacheKey?: string | undefined
}>("@agentloop/chat-completions/RequestOptions", { defaultValue: () => ({}) })

/**
 * The Chat Completions wire format, for `Provider`. There is no default
 * server: `Config` requires `baseUrl` (an empty one fails every request with
 * `InvalidRequest`), and no default model (see `Config.model`).
 *
 * @since 0.2.0
 * @category constructors
 */
export const spec: Provider.Spec<Config> = {
  name: provider,
  defaultBaseUrl: "",
  defaultModel: "",
  credential: { header: "authorization", scheme: "Bearer" },
  classifyError: ChatCompletionsError.classify,
  turn: (history, options, { config, model }) =>
    Effect.gen(function*() {
      const strict = config.strict ?? true
      const requestOptions = yield* RequestOptions
      const body = yield* Effect.fromResult(ChatCompletionsRequest.body(history, options, {
        model,
        strict,
        reasoningHistory: config.reasoningHistory,
        maxTokensField: config.maxTokensField,
        includeUsage: config.includeUsage,
        parallelToolCalls: config.parallelToolCalls,
        promptCacheKey: requestOptions.promptCacheKey ?? config.promptCacheKey
      }))
      const tools = new Map<string, (text: string) => string>()
      for (const tool of strict ? options.tools ?? [] : []) {
        const normalize = StrictSchema.make(tool.parameters).normalize
        if (normalize !== undefined) tools.set(tool.name, normalize)
      }
      const output = strict && options.output !== undefined
        ? StrictSchema.make(options.output.schema).normalize
        : undefined
      const fallbackKey = (yield* Random.nextIntBetween(0, Number.MAX_SAFE_INTEGER)).toString(36)
      return {
        request: { path: "/chat/completions", body },
        decoder: ChatCompletionsDecoder.make({ model: body.model, fallbackKey, tools, output })
      }
    })
}

/**
 * Builds the `LanguageModel` service on the `HttpClient` in context.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (config: Config) => Provider.make(spec, config)

/**
 * The Chat Completions `LanguageModel` over whatever `HttpClient` the application provides.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerWithoutHttpClient = (
  config: Config
): Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient> =>
  Provider.layerWithoutHttpClient(spec, config)

/**
 * The Chat Completions `LanguageModel` over `FetchHttpClient`.
 *
 * @since 0.2.0
 * @category layers
 * @example
 * ```ts
 * import { ChatCompletions } from "@agentloop/chat-completions"
 * import { Redacted } from "effect"
 *
 * // OpenRouter, with its attribution headers; the key is redacted everywhere.
 * const OpenRouter = ChatCompletions.layer({
 *   baseUrl: "https://openrouter.ai/api/v1",
 *   apiKey: Redacted.make("sk-or-..."),
 *   model: "deepseek/deepseek-r1",
 *   headers: { "HTTP-Referer": "https://example.com", "X-Title": "my agent" },
 *   reasoningHistory: "reasoning"
 * })
 * ```
 */
export const layer = (config: Config): Layer.Layer<LanguageModel.LanguageModel> => Provider.layer(spec, config)

/**
 * The Chat Completions `LanguageModel` over `FetchHttpClient`, configured by
 * `Config` values: each setting from `options`, else `baseUrl` from
 * `CHAT_COMPLETIONS_BASE_URL` (required: fails with a `ConfigError` without
 * it), `apiKey` from `CHAT_COMPLETIONS_API_KEY` and `model` from
 * `CHAT_COMPLETIONS_MODEL` (both optional).
 *
 * @since 0.2.0
 * @category layers
 */
export const layerConfig = (
  options?: Provider.ConfigOf<Config>
): Layer.Layer<LanguageModel.LanguageModel, EffectConfig.ConfigError> =>
  Provider.layerConfig(spec, {
    apiKey: EffectConfig.Redacted("CHAT_COMPLETIONS_API_KEY").pipe(EffectConfig.withDefault(undefined)),
    baseUrl: EffectConfig.String("CHAT_COMPLETIONS_BASE_URL"),
    model: EffectConfig.String("CHAT_COMPLETIONS_MODEL").pipe(EffectConfig.withDefault(undefined))
  }, options)
