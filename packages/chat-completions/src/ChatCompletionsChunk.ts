/**
 * The streamed chunks of a Chat Completions request, as `Schema`s, loose
 * enough for every server that speaks the wire.
 *
 * A chunk is `{ id, model, choices: [{ delta, finish_reason }], usage }`, each
 * part optional or `null` as one server or another sends it: a first chunk
 * with empty `choices` and empty `id` and `model` (Azure), a choice without a
 * `delta`, `usage: null`, usage counts that are `null`, `content` as a string or
 * as an array of parts (Mistral, Databricks). Only the fields the provider reads
 * are declared, so fields added by a server (`logprobs`, `delta.channel`,
 * `x_groq`'s timings, `obfuscation`, …) never fail a chunk.
 *
 * @since 0.2.0
 */
import * as Schema from "effect/Schema"

const nullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

/**
 * A position from the wire (a tool call's `index`): a non-negative safe
 * integer. Positions key maps, never arrays, so an index of 10^9 costs what
 * index 0 costs.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Index = Schema.Number.check(
  Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= 0, { expected: "a non-negative integer" })
)

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Token counts, where servers put them: OpenAI's `prompt_tokens_details.cached_tokens`
 * and `completion_tokens_details.reasoning_tokens`, OpenRouter's
 * `prompt_tokens_details.cache_write_tokens` (for models that bill cache
 * writes, such as Claude), DeepSeek's
 * `prompt_cache_hit_tokens`, a top-level `cached_tokens` (Moonshot),
 * OpenRouter's `cost` (USD) and xAI's `cost_in_usd_ticks` (see
 * `Cost.ticksPerUsd`). Any count may be `null` until the last chunk.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Usage = Schema.Struct({
  prompt_tokens: nullable(Count),
  completion_tokens: nullable(Count),
  total_tokens: nullable(Count),
  prompt_tokens_details: nullable(Schema.Struct({
    cached_tokens: nullable(Count),
    cache_write_tokens: nullable(Count)
  })),
  completion_tokens_details: nullable(Schema.Struct({ reasoning_tokens: nullable(Count) })),
  prompt_cache_hit_tokens: nullable(Count),
  cached_tokens: nullable(Count),
  cost: nullable(Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))),
  cost_in_usd_ticks: nullable(Count)
})
export type Usage = typeof Usage.Type

/**
 * An error a server reports: OpenAI's `{ message, type, param, code }`,
 * OpenRouter's numeric `code`, Google's upper-case `status`, llama.cpp's
 * `{ code, message, type }`. The message may be anything a server puts there (Mistral sends objects).
 *
 * @since 0.2.0
 * @category schemas
 */
export const ErrorObject = Schema.Struct({
  message: Schema.optionalKey(Schema.Unknown),
  code: nullable(Schema.Union([Schema.String, Schema.Number])),
  type: nullable(Schema.String),
  status: nullable(Schema.Union([Schema.String, Schema.Number]))
})
export type ErrorObject = typeof ErrorObject.Type

/**
 * What an `error` field holds: an error object, or only its message (as
 * Hugging Face's text-generation-inference sends it).
 *
 * @since 0.2.0
 * @category schemas
 */
export const ErrorValue = Schema.Union([Schema.String, ErrorObject])
export type ErrorValue = typeof ErrorValue.Type

/**
 * The usual error envelope, `{ error: {...} }`: an HTTP error body, and the
 * data of an `error` event (Groq's `event: error`). llama.cpp's `error:` line,
 * vLLM's and Mistral's bodies are the error object itself.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ErrorEnvelope = Schema.Struct({ error: ErrorValue })
export type ErrorEnvelope = typeof ErrorEnvelope.Type

/**
 * A part of an array `content`: `text` is answer text; `thinking` (Mistral:
 * a string, or text chunks) and `reasoning` (Databricks: `summary` texts) are
 * reasoning. Parts of other types (images, references) are skipped.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ContentPart = Schema.Struct({
  type: Schema.String,
  text: nullable(Schema.String),
  thinking: nullable(Schema.Union([Schema.String, Schema.Array(Schema.Struct({ text: nullable(Schema.String) }))])),
  summary: nullable(Schema.Array(Schema.Struct({ text: nullable(Schema.String) })))
})
export type ContentPart = typeof ContentPart.Type

/**
 * One of OpenRouter's `reasoning_details`: `reasoning.text` (its `text` and
 * `signature`), `reasoning.summary` (its `summary`) or `reasoning.encrypted`
 * (its `data`), streamed in pieces that share an `index`. Fields not declared
 * here (`signature`, `data`, `format`, `id`) are kept as they came: OpenRouter
 * wants the details back.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ReasoningDetail = Schema.Struct({
  type: Schema.String,
  index: nullable(Index),
  text: nullable(Schema.String),
  summary: nullable(Schema.String)
})
export type ReasoningDetail = typeof ReasoningDetail.Type

/** A JSON object: arguments some servers send as an object instead of JSON text. */
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/**
 * A piece of a tool call: the call at `index` (which some servers leave out,
 * or start at 1), its `id` and `name` on the first piece only (or repeated,
 * or repeated empty), its `arguments` in pieces, and `extra_content`, which
 * Gemini's OpenAI-compatible endpoint puts the call's thought signature in
 * (`{ google: { thought_signature } }`) and wants back on the call: anything,
 * as servers fill it, of which only an object is kept.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ToolCallDelta = Schema.Struct({
  index: nullable(Index),
  id: nullable(Schema.String),
  function: nullable(Schema.Struct({
    name: nullable(Schema.String),
    arguments: nullable(Schema.Union([Schema.String, JsonObject]))
  })),
  extra_content: Schema.optionalKey(Schema.Unknown)
})
export type ToolCallDelta = typeof ToolCallDelta.Type

/**
 * What a chunk adds to the answer. Reasoning comes as `reasoning_content`
 * (DeepSeek, vLLM, llama.cpp, xAI), `reasoning` (OpenRouter, Ollama, Groq),
 * OpenRouter's `reasoning_details`, or reasoning parts of an array `content`;
 * `function_call` is the legacy single call. `annotations` (the sources a
 * search model cites) are any JSON here, read by `ChatCompletionsCitations`.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Delta = Schema.Struct({
  content: nullable(Schema.Union([Schema.String, Schema.Array(ContentPart)])),
  reasoning_content: nullable(Schema.String),
  reasoning: nullable(Schema.String),
  reasoning_details: nullable(Schema.Array(ReasoningDetail)),
  refusal: nullable(Schema.String),
  tool_calls: nullable(Schema.Array(ToolCallDelta)),
  function_call: nullable(Schema.Struct({
    name: nullable(Schema.String),
    arguments: nullable(Schema.Union([Schema.String, JsonObject]))
  })),
  annotations: Schema.optionalKey(Schema.Unknown)
})
export type Delta = typeof Delta.Type

/**
 * A choice of a chunk. The provider asks for one and reads the first; a
 * choice may come without a `delta` (Azure's content-filter offsets).
 *
 * @since 0.2.0
 * @category schemas
 */
export const Choice = Schema.Struct({
  delta: nullable(Delta),
  finish_reason: nullable(Schema.String)
})
export type Choice = typeof Choice.Type

/**
 * A chunk: the answer's `id` and `model` (empty on Azure's first chunk), its
 * choices, the usage (top-level, or Groq's `x_groq.usage`), and an `error`
 * when the server failed inside the stream (next to `choices`, on OpenRouter).
 * A chunk whose `object` is `"error"` (vLLM, Mistral) is an error object itself.
 * Perplexity's `search_results` and `citations` are any JSON here, read by
 * `ChatCompletionsCitations`.
 *
 * @example
 * ```ts
 * import { ChatCompletionsChunk } from "@agentloop/chat-completions"
 * import { Schema } from "effect"
 *
 * // One `chat.completion.chunk`, as a Chat Completions server streams it.
 * const chunk = Schema.decodeUnknownSync(ChatCompletionsChunk.Chunk)({
 *   id: "chatcmpl-1",
 *   object: "chat.completion.chunk",
 *   model: "gpt-4o-mini",
 *   choices: [{ index: 0, delta: { role: "assistant", content: "Hello" }, finish_reason: null }]
 * })
 * console.log(chunk.choices?.[0]?.delta?.content) // Hello
 * ```
 *
 * @since 0.2.0
 * @category schemas
 */
export const Chunk = Schema.Struct({
  id: nullable(Schema.String),
  model: nullable(Schema.String),
  object: Schema.optionalKey(Schema.Unknown),
  choices: nullable(Schema.Array(Choice)),
  usage: nullable(Usage),
  x_groq: nullable(Schema.Struct({ usage: nullable(Usage) })),
  error: nullable(ErrorValue),
  search_results: Schema.optionalKey(Schema.Unknown),
  citations: Schema.optionalKey(Schema.Unknown)
})
export type Chunk = typeof Chunk.Type
