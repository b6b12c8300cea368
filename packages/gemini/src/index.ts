/**
 * Google Gemini provider layer for agentloop.
 *
 * @since 0.1.0
 */
export * as Gemini from "./Gemini.ts"
export * as GeminiRequest from "./GeminiRequest.ts"
export * as GeminiTurn from "./GeminiTurn.ts"
export * as GeminiWire from "./GeminiWire.ts"
