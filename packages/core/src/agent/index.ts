/**
 * The agent: `AgentLoop` and what it is built from (one turn, the decision rules, the run's state, its checkpoints), the events it streams, and the history of a recorded run.
 *
 * @since 0.2.0
 */
export * as AgentCheckpoint from "./AgentCheckpoint.ts"
export * as AgentEvent from "./AgentEvent.ts"
export * as AgentHistory from "./AgentHistory.ts"
export * as AgentLoop from "./AgentLoop.ts"
export * as AgentMachine from "./AgentMachine.ts"
export * as AgentOptions from "./AgentOptions.ts"
export * as AgentRules from "./AgentRules.ts"
export * as AgentTurn from "./AgentTurn.ts"
export * as Thread from "./Thread.ts"
export * as ThreadId from "./ThreadId.ts"
