/**
 * The typed errors of step programs.
 *
 * A step program fails with its steps' own errors (a tool's failure, an
 * `AiError` of a model turn, whatever an `Effect` returned by a step's function
 * fails with) or with one of these. Every one is a `Schema.TaggedError`, so a
 * failure encodes to JSON for a UI or a log and decodes back.
 *
 * @since 0.1.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { InvalidOptions } from "../InvalidOptions.ts"
import { Diagnostic } from "../Termination.ts"

/**
 * A step's function (`execute`, `route`, `paths`, `merge`, `prepareNext`,
 * `onError`, `prompt`) threw, or the Promise it returned rejected. `cause` is
 * what was thrown. A function that returns an `Effect` fails with that Effect's
 * own error instead.
 */
export class StepFailed extends Schema.TaggedError<StepFailed>()("StepFailed", {
  stepId: Schema.String,
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/** The execution was aborted with `ctx.abort(reason)`: everything in it was interrupted. */
export class Aborted extends Schema.TaggedError<Aborted>()("Aborted", {
  contextId: Schema.String,
  reason: Schema.optionalKey(Schema.String)
}) {
  override get message() {
    return this.reason === undefined
      ? `execution ${this.contextId} was aborted`
      : `execution ${this.contextId} was aborted: ${this.reason}`
  }
}

/** A step (a `spawn`, or a `tool` whose tool has a time limit) did not finish in time and was interrupted. */
export class StepTimeout extends Schema.TaggedError<StepTimeout>()("StepTimeout", {
  stepId: Schema.String,
  timeoutMs: Schema.Finite
}) {
  override get message() {
    return `step ${this.stepId} did not finish within ${this.timeoutMs} ms and was interrupted`
  }
}

/** `recv` waited its whole `timeout` and no value arrived on the channel. */
export class RecvTimeout extends Schema.TaggedError<RecvTimeout>()("RecvTimeout", {
  channel: Schema.String,
  timeoutMs: Schema.Finite
}) {
  override get message() {
    return `no value arrived on channel ${this.channel} within ${this.timeoutMs} ms`
  }
}

/**
 * A `loop` reached its limit of `maxIterations` iterations before any of them
 * gave an output (each failed, and was retried or skipped). A loop that has an
 * output ends with it instead.
 */
export class MaxIterations extends Schema.TaggedError<MaxIterations>()("MaxIterations", {
  stepId: Schema.String,
  maxIterations: Schema.Int
}) {
  override get message() {
    return `loop ${this.stepId} reached its limit of ${this.maxIterations} iterations without an output`
  }
}

/**
 * A step cannot run as written: something that is not a step where a step
 * must be (the program, a child, what a `route` or `paths` answered), a race
 * without paths, an `llm` step naming a tool the toolkit does not have, an
 * `onError` answer that is none of the three. (A field that cannot work, such
 * as a negative duration, is an `InvalidOptions`.)
 */
export class InvalidStep extends Schema.TaggedError<InvalidStep>()("InvalidStep", {
  stepId: Schema.String,
  message: Schema.String
}) {}

/** A value sent on a channel does not satisfy the channel's schema; it was not sent. */
export class InvalidChannelValue extends Schema.TaggedError<InvalidChannelValue>()("InvalidChannelValue", {
  channel: Schema.String,
  message: Schema.String
}) {}

/** The text of an `llm` step's turn does not decode with the step's `output` schema. */
export class InvalidOutput extends Schema.TaggedError<InvalidOutput>()("InvalidOutput", {
  stepId: Schema.String,
  diagnostic: Diagnostic
}) {
  override get message() {
    return `the output of llm step ${this.stepId} does not decode: ${this.diagnostic.message}`
  }
}

/** The input of a `tool` step (its preset `args` under the step's input) does not decode with the tool's input schema. */
export class InvalidToolInput extends Schema.TaggedError<InvalidToolInput>()("InvalidToolInput", {
  stepId: Schema.String,
  diagnostic: Diagnostic
}) {
  override get message() {
    return `the input of tool step ${this.stepId} does not match the tool's input: ${this.diagnostic.message}`
  }
}

/** The `Approval` service denied the tool of a `tool` step. */
export class ToolDenied extends Schema.TaggedError<ToolDenied>()("ToolDenied", {
  stepId: Schema.String,
  tool: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `tool ${this.tool} of step ${this.stepId} was denied: ${this.reason}`
  }
}

/**
 * With a `Checkpointer`, the execution's progress could not be recorded (or
 * read back): a step output or the state that is not JSON, a store that fails.
 * The execution stops rather than go on without being durable. An execution
 * refused before anything ran has a typed `cause`: `RunInProgress`,
 * `CheckpointMismatch` or `InvalidRunId`.
 */
export class ExecutionCheckpointFailed
  extends Schema.TaggedError<ExecutionCheckpointFailed>()("ExecutionCheckpointFailed", {
    executionId: Schema.String,
    message: Schema.String,
    cause: Schema.optionalKey(Schema.Defect())
  })
{}

export {
  /** A step's field cannot work (defined with the vocabulary, shared with `AgentLoop` and `Until`; re-exported here). */
  InvalidOptions
} from "../InvalidOptions.ts"

/** Any error of this module, and `InvalidOptions`. */
export type StepError =
  | StepFailed
  | Aborted
  | StepTimeout
  | RecvTimeout
  | MaxIterations
  | InvalidStep
  | InvalidChannelValue
  | InvalidOutput
  | InvalidToolInput
  | ToolDenied
  | ExecutionCheckpointFailed
  | InvalidOptions

/** The schema of {@link StepError}: decodes any of them by `_tag`. */
export const StepError = Schema.Union([
  StepFailed,
  Aborted,
  StepTimeout,
  RecvTimeout,
  MaxIterations,
  InvalidStep,
  InvalidChannelValue,
  InvalidOutput,
  InvalidToolInput,
  ToolDenied,
  ExecutionCheckpointFailed,
  InvalidOptions
])

/**
 * An error as events and the context record it: its `_tag` when it has one,
 * and its message. Any failure fits, typed or not.
 */
export const Info = Schema.Struct({
  tag: Schema.optionalKey(Schema.String),
  message: Schema.String
})
export type Info = typeof Info.Type

/** The {@link Info} of any error: its `_tag` and `message`, or its text. */
export const info = (error: unknown): Info => {
  const tag = Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" ? error._tag : undefined
  const message = Predicate.hasProperty(error, "message") && typeof error.message === "string"
    ? error.message
    : typeof error === "string"
    ? error
    : String(error)
  return tag === undefined ? { message } : { tag, message }
}
