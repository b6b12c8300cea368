/**
 * The model service: one streaming turn per call.
 *
 * Agent code asks `LanguageModel` for turns and never names a provider; the
 * provider is whatever `Layer` the application provides (`@agentloop/responses`,
 * `@agentloop/gemini`, or `MockLanguageModel` from `@agentloop/testing`).
 *
 * @since 0.1.0
 */
import { Context, Schema } from "effect"
import type { JsonSchema, Stream } from "effect"
import type { AiError } from "./AiError.ts"
import type * as Item from "./Item.ts"
import type { TurnDelta } from "./TurnDelta.ts"

/** Sampling and length parameters; a provider ignores the ones it does not support. */
export const ModelParams = Schema.Struct({
  temperature: Schema.optionalKey(Schema.Number),
  topP: Schema.optionalKey(Schema.Number),
  maxOutputTokens: Schema.optionalKey(Schema.Number),
  stopSequences: Schema.optionalKey(Schema.Array(Schema.String)),
  reasoningEffort: Schema.optionalKey(Schema.Literals(["minimal", "low", "medium", "high"]))
})
export type ModelParams = typeof ModelParams.Type

/** A tool as the model sees it: a name, a description and the JSON Schema of its arguments. */
export interface ToolDefinition {
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema.JsonSchema
}

/** Which tools the model may or must call. */
export type ToolChoice = "auto" | "none" | "required" | { readonly name: string }

/** Structured output: the model must answer with JSON matching `schema`. */
export interface OutputFormat {
  readonly name: string
  readonly schema: JsonSchema.JsonSchema
}

/** Everything about a request except the history. */
export interface TurnOptions {
  /** The model to ask; a provider layer has its own default. */
  readonly model?: string | undefined
  readonly instructions?: string | undefined
  readonly tools?: ReadonlyArray<ToolDefinition> | undefined
  readonly toolChoice?: ToolChoice | undefined
  readonly output?: OutputFormat | undefined
  readonly params?: ModelParams | undefined
}

/**
 * Streams model turns. The stream ends with exactly one `turn_complete`; it is
 * lazy, so nothing is sent until it is pulled, and interrupting it aborts the request.
 */
export class LanguageModel extends Context.Service<LanguageModel, {
  readonly provider: string
  streamTurn(history: ReadonlyArray<Item.Item>, options: TurnOptions): Stream.Stream<TurnDelta, AiError>
}>()("@agentloop/core/LanguageModel") {}
