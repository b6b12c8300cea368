/**
 * The provider kit: what a provider package builds a `LanguageModel` from (the shared HTTP pipeline, SSE parsing, retries, timeouts, wire decoding) and the interface of a wire format written out for tests.
 *
 * @since 0.2.0
 */
export * as EventHandlers from "./EventHandlers.ts"
export * as Provider from "./Provider.ts"
export * as ProviderCitation from "./ProviderCitation.ts"
export * as ProviderContent from "./ProviderContent.ts"
export * as ProviderHttp from "./ProviderHttp.ts"
export * as ProviderRetry from "./ProviderRetry.ts"
export * as ProviderStream from "./ProviderStream.ts"
export * as ProviderTimeout from "./ProviderTimeout.ts"
export * as ProviderWire from "./ProviderWire.ts"
export * as SseParser from "./SseParser.ts"
export * as StrictSchema from "./StrictSchema.ts"
export * as WireDecoder from "./WireDecoder.ts"
