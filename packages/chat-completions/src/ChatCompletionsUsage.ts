/**
 * A turn's usage as Chat Completions servers report it: in a last chunk with
 * empty `choices` (OpenAI, with `stream_options.include_usage`), on the chunk
 * that finishes (llama.cpp, Mistral), in Groq's `x_groq.usage`, or on every
 * chunk with `null` counts until the last; followed, on some servers, by a
 * chunk with `usage: null`. Each count is the last one a chunk reported, so
 * neither a `null` nor a later chunk without usage erases one.
 *
 * @since 0.2.0
 */
import { Cost, TokenUsage } from "@agentloop/core"
import type * as ChatCompletionsChunk from "./ChatCompletionsChunk.ts"

/**
 * The counts reported so far; a count is absent until a chunk reports it.
 *
 * @since 0.2.0
 * @category models
 */
export interface Counts {
  readonly prompt?: number
  readonly completion?: number
  readonly total?: number
  readonly cached?: number
  /** Tokens written to the prompt cache: OpenRouter's `cache_write_tokens`. */
  readonly cacheWrite?: number
  readonly reasoning?: number
  /** What the request cost in USD: OpenRouter's `usage.cost`, or xAI's `usage.cost_in_usd_ticks` made USD. */
  readonly cost?: number
}

const latest = <A>(next: A | null | undefined, previous: A | undefined): A | undefined => next ?? previous

/**
 * The counts after `usage`: each count it reports replaces the one before, and
 * the ones it leaves out or sends as `null` stay. Cache hits are read from
 * `prompt_tokens_details.cached_tokens`, else DeepSeek's `prompt_cache_hit_tokens`,
 * else a top-level `cached_tokens`; cache writes from OpenRouter's
 * `prompt_tokens_details.cache_write_tokens` (no other server reports them);
 * the cost from OpenRouter's `cost`, else xAI's `cost_in_usd_ticks`.
 *
 * @since 0.2.0
 * @category combinators
 */
export const merge = (counts: Counts, usage: ChatCompletionsChunk.Usage): Counts => {
  const prompt = latest(usage.prompt_tokens, counts.prompt)
  const completion = latest(usage.completion_tokens, counts.completion)
  const total = latest(usage.total_tokens, counts.total)
  const cached = latest(
    usage.prompt_tokens_details?.cached_tokens ?? usage.prompt_cache_hit_tokens ?? usage.cached_tokens,
    counts.cached
  )
  const cacheWrite = latest(usage.prompt_tokens_details?.cache_write_tokens, counts.cacheWrite)
  const reasoning = latest(usage.completion_tokens_details?.reasoning_tokens, counts.reasoning)
  const ticks = usage.cost_in_usd_ticks
  const cost = latest(usage.cost ?? (ticks == null ? undefined : Cost.fromTicks(ticks)), counts.cost)
  return {
    ...(prompt === undefined ? {} : { prompt }),
    ...(completion === undefined ? {} : { completion }),
    ...(total === undefined ? {} : { total }),
    ...(cached === undefined ? {} : { cached }),
    ...(cacheWrite === undefined ? {} : { cacheWrite }),
    ...(reasoning === undefined ? {} : { reasoning }),
    ...(cost === undefined ? {} : { cost })
  }
}

/**
 * Whether any token count was reported.
 *
 * @since 0.2.0
 * @category predicates
 */
export const isReported = (counts: Counts): boolean =>
  counts.prompt !== undefined || counts.completion !== undefined || counts.total !== undefined

/**
 * The counts as a `TokenUsage`: `input` is `prompt_tokens` (cache hits and
 * writes included), `output` is `completion_tokens` with the reasoning tokens
 * in it, `total` the server's own `total_tokens` when it sent one, even when it
 * is not their sum. OpenAI counts reasoning tokens in `completion_tokens`; xAI
 * leaves them out of it (and in its total), which shows as a total of prompt,
 * completion and reasoning tokens: then they are added to `output`.
 *
 * @example
 * ```ts
 * import { ChatCompletionsUsage } from "@agentloop/chat-completions"
 *
 * // Servers report usage in one chunk or spread over several; the counts merge.
 * const counts = ChatCompletionsUsage.merge({}, {
 *   prompt_tokens: 120,
 *   completion_tokens: 30,
 *   total_tokens: 150,
 *   prompt_tokens_details: { cached_tokens: 100 }
 * })
 * console.log(ChatCompletionsUsage.isReported(counts)) // true
 * console.log(ChatCompletionsUsage.toTokenUsage(counts)) // { input: 120, output: 30, total: 150, cachedInput: 100 }
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const toTokenUsage = (counts: Counts): TokenUsage.TokenUsage => {
  const prompt = counts.prompt ?? 0
  const completion = counts.completion ?? 0
  const reasoning = counts.reasoning ?? 0
  const apart = reasoning > 0 && counts.total === prompt + completion + reasoning
  const usage = TokenUsage.make(prompt, apart ? completion + reasoning : completion, {
    cachedInput: counts.cached,
    cacheWrite: counts.cacheWrite,
    reasoning: counts.reasoning
  })
  return counts.total === undefined ? usage : { ...usage, total: counts.total }
}
