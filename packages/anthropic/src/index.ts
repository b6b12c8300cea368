/**
 * The Anthropic Messages API provider for agentloop.
 *
 * @since 0.1.0
 */
export * as Anthropic from "./Anthropic.ts"
export * as AnthropicCache from "./AnthropicCache.ts"
export * as AnthropicCitation from "./AnthropicCitation.ts"
export * as AnthropicDecoder from "./AnthropicDecoder.ts"
export * as AnthropicError from "./AnthropicError.ts"
export * as AnthropicEvent from "./AnthropicEvent.ts"
export * as AnthropicModels from "./AnthropicModels.ts"
export * as AnthropicRequest from "./AnthropicRequest.ts"
export * as AnthropicSchema from "./AnthropicSchema.ts"
