/**
 * OpenAI's Chat Completions API for agentloop, and every server that speaks
 * it: local models, gateways and other vendors. The wire writer for tests is
 * apart, in `@agentloop/chat-completions/testing`.
 *
 * @since 0.2.0
 */
export * as ChatCompletions from "./ChatCompletions.ts"
export * as ChatCompletionsChunk from "./ChatCompletionsChunk.ts"
export * as ChatCompletionsCitations from "./ChatCompletionsCitations.ts"
export * as ChatCompletionsContent from "./ChatCompletionsContent.ts"
export * as ChatCompletionsDecoder from "./ChatCompletionsDecoder.ts"
export * as ChatCompletionsError from "./ChatCompletionsError.ts"
export * as ChatCompletionsExtraContent from "./ChatCompletionsExtraContent.ts"
export * as ChatCompletionsReasoningDetails from "./ChatCompletionsReasoningDetails.ts"
export * as ChatCompletionsRequest from "./ChatCompletionsRequest.ts"
export * as ChatCompletionsToolCalls from "./ChatCompletionsToolCalls.ts"
export * as ChatCompletionsUsage from "./ChatCompletionsUsage.ts"
