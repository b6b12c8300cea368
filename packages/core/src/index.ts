/**
 * agentloop: AI agents as pull-based Effect streams.
 *
 * The root entry is the vocabulary (items, turns, usage, cost, errors, the
 * loop, tools, until predicates, terminations, checkpoints) and every domain's
 * modules besides, each also importable from its own subpath:
 * `@agentloop/core/agent` (the agent loop), `@agentloop/core/provider` (the
 * kit provider packages are built with), `@agentloop/core/step` (step
 * programs) and `@agentloop/core/stream` (streaming runs to people).
 *
 * @since 0.1.0
 */
export * as Accounting from "./Accounting.ts"
export * as AgentCheckpoint from "./agent/AgentCheckpoint.ts"
export * as AgentEvent from "./agent/AgentEvent.ts"
export * as AgentLoop from "./agent/AgentLoop.ts"
export * as AgentMachine from "./agent/AgentMachine.ts"
export * as AgentOptions from "./agent/AgentOptions.ts"
export * as AgentRules from "./agent/AgentRules.ts"
export * as AgentTurn from "./agent/AgentTurn.ts"
export * as AiError from "./AiError.ts"
export * as Approval from "./Approval.ts"
export * as Checkpointer from "./Checkpointer.ts"
export * as Compactor from "./Compactor.ts"
export * as Cost from "./Cost.ts"
export * as Embedder from "./Embedder.ts"
export * as Halt from "./Halt.ts"
export * as Item from "./Item.ts"
export * as LanguageModel from "./LanguageModel.ts"
export * as Loop from "./Loop.ts"
export * as PredicateFailed from "./PredicateFailed.ts"
export * as Pricing from "./Pricing.ts"
export * as Provider from "./provider/Provider.ts"
export * as ProviderHttp from "./provider/ProviderHttp.ts"
export * as ProviderRetry from "./provider/ProviderRetry.ts"
export * as ProviderStream from "./provider/ProviderStream.ts"
export * as ProviderTimeout from "./provider/ProviderTimeout.ts"
export * as ProviderWire from "./provider/ProviderWire.ts"
export * as SseParser from "./provider/SseParser.ts"
export * as WireDecoder from "./provider/WireDecoder.ts"
export * as Snapshot from "./Snapshot.ts"
export * as Channel from "./step/Channel.ts"
export * as ExecutionContext from "./step/ExecutionContext.ts"
export * as ItemLog from "./step/ItemLog.ts"
export * as Memory from "./step/Memory.ts"
export * as RetryPolicy from "./step/RetryPolicy.ts"
export * as Step from "./step/Step.ts"
export * as StepAst from "./step/StepAst.ts"
export * as StepError from "./step/StepError.ts"
export * as StepEvent from "./step/StepEvent.ts"
export * as StepMeta from "./StepMeta.ts"
export * as StopPolicy from "./StopPolicy.ts"
export * as EventStream from "./stream/EventStream.ts"
export * as Telemetry from "./Telemetry.ts"
export * as Termination from "./Termination.ts"
export * as TokenUsage from "./TokenUsage.ts"
export * as Tool from "./Tool.ts"
export * as Toolkit from "./Toolkit.ts"
export * as ToolRecord from "./ToolRecord.ts"
export * as Turn from "./Turn.ts"
export * as TurnDelta from "./TurnDelta.ts"
export * as TurnStream from "./TurnStream.ts"
export * as Until from "./Until.ts"
export * as Verdict from "./Verdict.ts"
