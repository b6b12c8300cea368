/**
 * Test support for the Chat Completions provider: its wire format written
 * out, for `@agentloop/testing`'s loopback `ProviderServer`. Apart from the
 * package's main entry, so an application's bundle does not carry it.
 *
 * @since 0.2.0
 */
export * as ChatCompletionsWire from "./ChatCompletionsWire.ts"
