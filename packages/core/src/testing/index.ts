/**
 * Test support: a scripted model, a loopback provider server and the provider conformance suite.
 *
 * @since 0.1.0
 */
export * as HostileServer from "./HostileServer.ts"
export * as MockLanguageModel from "./MockLanguageModel.ts"
export * as ProviderConformance from "./ProviderConformance.ts"
export * as ProviderHarness from "./ProviderHarness.ts"
export * as ProviderServer from "./ProviderServer.ts"
export * as Reachable from "./Reachable.ts"
export * as SpanRecorder from "./SpanRecorder.ts"
export * as WireTurn from "./WireTurn.ts"
