/**
 * agentloop: AI agents as pull-based Effect streams.
 *
 * @since 0.1.0
 */
export * as AiError from "./AiError.ts"
export * as Item from "./Item.ts"
export * as LanguageModel from "./LanguageModel.ts"
export * as TokenUsage from "./TokenUsage.ts"
export * as Turn from "./Turn.ts"
export * as TurnDelta from "./TurnDelta.ts"
