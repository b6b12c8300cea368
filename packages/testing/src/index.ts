/**
 * Test support: a scripted model, a loopback provider server and model, the provider
 * conformance suite, child processes for crash tests, and a crash-test kit for apps.
 *
 * @since 0.1.0
 */
export * as CrashChild from "./CrashChild.ts"
export * as CrashJournal from "./CrashJournal.ts"
export * as CrashReport from "./CrashReport.ts"
export * as CrashTest from "./CrashTest.ts"
export * as HostileServer from "./HostileServer.ts"
export * as LoopbackModel from "./LoopbackModel.ts"
export * as MockLanguageModel from "./MockLanguageModel.ts"
export * as ProviderConformance from "./ProviderConformance.ts"
export * as ProviderHarness from "./ProviderHarness.ts"
export * as ProviderServer from "./ProviderServer.ts"
export * as Reachable from "./Reachable.ts"
export * as SpanRecorder from "./SpanRecorder.ts"
export * as StuckTool from "./StuckTool.ts"
export * as TestProcess from "./TestProcess.ts"
export * as WireTurn from "./WireTurn.ts"
