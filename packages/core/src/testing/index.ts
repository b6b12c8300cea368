/**
 * Test support: a scripted model and a loopback provider server.
 *
 * @since 0.1.0
 */
export * as MockLanguageModel from "./MockLanguageModel.ts"
export * as ProviderServer from "./ProviderServer.ts"
export * as Reachable from "./Reachable.ts"
export * as SpanRecorder from "./SpanRecorder.ts"
