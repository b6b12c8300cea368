/**
 * Step programs: agents and workflows as data (`Step`), the execution context their functions get, channels, memory, their errors and events, and the history of a recorded execution.
 *
 * @since 0.2.0
 */
export * as Channel from "./Channel.ts"
export * as ExecutionContext from "./ExecutionContext.ts"
export * as ItemLog from "./ItemLog.ts"
export * as Memory from "./Memory.ts"
export * as RetryPolicy from "./RetryPolicy.ts"
export * as Step from "./Step.ts"
export * as StepAst from "./StepAst.ts"
export * as StepError from "./StepError.ts"
export * as StepEvent from "./StepEvent.ts"
export * as StepHistory from "./StepHistory.ts"
