/**
 * Durable agent runs for agentloop, on effect's own durable engine
 * (`effect/workflow` on `effect/cluster`): SQLite embedded, PostgreSQL at scale.
 *
 * @since 0.1.0
 */
export * as DurableAgent from "./DurableAgent.ts"
export * as DurableApproval from "./DurableApproval.ts"
export * as DurableEvent from "./DurableEvent.ts"
export * as DurableFork from "./DurableFork.ts"
export * as DurableHistory from "./DurableHistory.ts"
export * as DurableRunner from "./DurableRunner.ts"
export * as DurableStream from "./DurableStream.ts"
export * as NodeSqliteClient from "./NodeSqliteClient.ts"
export * as RunJournal from "./RunJournal.ts"
export * as RunLog from "./RunLog.ts"
export * as RunParking from "./RunParking.ts"
export * as RunRetention from "./RunRetention.ts"
export * as RunSteps from "./RunSteps.ts"
export * as RunStore from "./RunStore.ts"
export * as StepName from "./StepName.ts"
