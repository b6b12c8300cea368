/**
 * Google Gemini provider layer for agentloop.
 *
 * @since 0.1.0
 */
export * as Gemini from "./Gemini.ts"
export * as GeminiArguments from "./GeminiArguments.ts"
export * as GeminiDecoder from "./GeminiDecoder.ts"
export * as GeminiError from "./GeminiError.ts"
export * as GeminiEvent from "./GeminiEvent.ts"
export * as GeminiGrounding from "./GeminiGrounding.ts"
export * as GeminiRequest from "./GeminiRequest.ts"
