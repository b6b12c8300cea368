/**
 * agentloop: AI agents as pull-based Effect streams.
 *
 * @since 0.1.0
 */
export * as AgentLoop from "./AgentLoop.ts"
export * as AiError from "./AiError.ts"
export * as Approval from "./Approval.ts"
export * as Compactor from "./Compactor.ts"
export * as Embedder from "./Embedder.ts"
export * as Halt from "./Halt.ts"
export * as Item from "./Item.ts"
export * as LanguageModel from "./LanguageModel.ts"
export * as Loop from "./Loop.ts"
export * as Pricing from "./Pricing.ts"
export * as ProviderHttp from "./ProviderHttp.ts"
export * as Snapshot from "./Snapshot.ts"
export * as StepMeta from "./StepMeta.ts"
export * as StopPolicy from "./StopPolicy.ts"
export * as Termination from "./Termination.ts"
export * as TokenUsage from "./TokenUsage.ts"
export * as Tool from "./Tool.ts"
export * as Toolkit from "./Toolkit.ts"
export * as Turn from "./Turn.ts"
export * as TurnDelta from "./TurnDelta.ts"
export * as Until from "./Until.ts"
export * as Verdict from "./Verdict.ts"
