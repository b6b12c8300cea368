/**
 * Test support for apps on the Gemini provider: `GeminiWire` writes any
 * `Turn` or `AiError` in this provider's wire format, for a loopback server
 * (`@agentloop/testing`'s `ProviderServer.layerWire`). Kept out of the main
 * entry so an app's bundle does not carry it.
 *
 * @since 0.2.0
 */
export * as GeminiWire from "./GeminiWire.ts"
