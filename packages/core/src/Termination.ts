/**
 * How a run ended. Every run ends with exactly one termination.
 *
 * Success (`Stop`, `Submitted`) is the run's value; every other termination is
 * a tagged error in the run's error channel. Each carries the run's
 * `Accounting` (usage, cost, elapsed time, steps, last items), so happy and
 * sad paths are accounted for alike, and each is a `Schema`: terminations encode
 * to JSON for checkpoints and UIs and decode back.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import { Accounting } from "./Accounting.ts"
import * as AiError from "./AiError.ts"
import * as Cost from "./Cost.ts"
import { InvalidOptions } from "./InvalidOptions.ts"
import * as Item from "./Item.ts"
import { PredicateFailed } from "./PredicateFailed.ts"
import * as Telemetry from "./Telemetry.ts"

const Count = Schema.Number.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))

/** The run's stop predicate said stop; `reason` is its verdict's reason. */
export const Stop = Schema.TaggedStruct("Stop", {
  reason: Schema.String,
  accounting: Accounting
})
export type Stop = typeof Stop.Type

/** A run that ended because its stop predicate said so. */
export const stop = (fields: { readonly reason: string; readonly accounting: Accounting }): Stop => ({
  _tag: "Stop",
  ...fields
})

/** The run ended through a finish tool: `tool` ran successfully and returned `value`. */
export interface Submitted<A> {
  readonly _tag: "Submitted"
  readonly tool: string
  readonly value: A
  readonly accounting: Accounting
}

/** The schema of a `Submitted` whose value is described by `value` (the finish tool's output schema). */
export const Submitted = <S extends Schema.Top>(value: S) =>
  Schema.TaggedStruct("Submitted", {
    tool: Schema.String,
    value,
    accounting: Accounting
  })

/** A run that ended through its finish tool `tool`, submitting `value`. */
export const submitted = <A>(fields: {
  readonly tool: string
  readonly value: A
  readonly accounting: Accounting
}): Submitted<A> => ({ _tag: "Submitted", ...fields })

/** A run that ended well, with a value of type `A` when it ended through a finish tool. */
export type Success<A = unknown> = Stop | Submitted<A>

/**
 * Why some output did not decode: the `target` that failed (a structured output
 * or a tool's arguments) and its `name`, a summary `message`, one issue per
 * failing path, and the `raw` text the model wrote.
 */
export const Diagnostic = Schema.Struct({
  target: Schema.Literals(["structured_output", "tool_arguments"]),
  name: Schema.optionalKey(Schema.String),
  message: Schema.String,
  issues: Schema.Array(Schema.Struct({
    path: Schema.Array(Schema.Union([Schema.String, Schema.Number])),
    message: Schema.String
  })),
  raw: Schema.optionalKey(Schema.String)
})
export type Diagnostic = typeof Diagnostic.Type

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** Builds the diagnostic of a decoding failure of `raw`, the text the model wrote for `target`. */
export const diagnose = (options: {
  readonly target: Diagnostic["target"]
  readonly name?: string | undefined
  readonly error: Schema.SchemaError
  readonly raw?: string | undefined
}): Diagnostic => ({
  target: options.target,
  ...(options.name === undefined ? {} : { name: options.name }),
  message: options.error.message,
  issues: formatIssues(options.error.issue).issues.map((issue) => ({
    path: (issue.path ?? []).map((segment) => {
      const key = typeof segment === "object" ? segment.key : segment
      return typeof key === "number" ? key : String(key)
    }),
    message: issue.message
  })),
  ...(options.raw === undefined ? {} : { raw: options.raw })
})

/** The run reached its limit of model turns. */
export class MaxTurns extends Schema.TaggedError<MaxTurns>()("MaxTurns", {
  maxTurns: Count,
  accounting: Accounting
}) {
  /** `capacity`: a configured limit was hit; raise it or reduce the task. */
  get category(): "capacity" {
    return "capacity"
  }
  override get message() {
    return `reached the limit of ${this.maxTurns} turns`
  }
}

/** The run's cost reached its budget. */
export class MaxBudgetUsd extends Schema.TaggedError<MaxBudgetUsd>()("MaxBudgetUsd", {
  maxBudgetUsd: Schema.Finite,
  accounting: Accounting
}) {
  /** `capacity`: a configured limit was hit; raise it or reduce the task. */
  get category(): "capacity" {
    return "capacity"
  }
  override get message() {
    return `cost ${Cost.format(this.accounting.cost)} reached the budget of ${Cost.format(this.maxBudgetUsd)}`
  }
}

/**
 * A run with a budget met a turn it cannot price: `model` (absent when the
 * provider named none) has no entry in the `Pricing` table and the provider
 * reported no cost. An unknown cost is not a free one, so the run stops rather
 * than spend without a limit.
 */
export class UnpricedModel extends Schema.TaggedError<UnpricedModel>()("UnpricedModel", {
  model: Schema.optionalKey(Schema.String),
  maxBudgetUsd: Schema.Finite,
  accounting: Accounting
}) {
  /** `fatal`: a new run fails the same way until someone changes something. */
  get category(): "fatal" {
    return "fatal"
  }
  override get message() {
    const model = this.model === undefined ? "a model the provider did not name" : `model "${this.model}"`
    const example = this.model ?? "<model>"
    return `the budget of ${Cost.format(this.maxBudgetUsd)} cannot be enforced: ${model} has no price. ` +
      `Price it with Pricing.layer({ "${example}": { input, cachedInput, output } }) (USD per million tokens)`
  }
}

/** The run reached its wall-clock deadline (`limits.maxDuration`), possibly in the middle of a turn or a tool. */
export class MaxDuration extends Schema.TaggedError<MaxDuration>()("MaxDuration", {
  maxDurationMs: Schema.Finite,
  accounting: Accounting
}) {
  /** `capacity`: a configured limit was hit; raise it or reduce the task. */
  get category(): "capacity" {
    return "capacity"
  }
  override get message() {
    return `reached the deadline of ${this.maxDurationMs} ms`
  }
}

/**
 * Something the run could not recover from failed while it ran: a provider
 * error that retries did not cure, or a stop predicate that could not answer.
 */
export class DuringExecution extends Schema.TaggedError<DuringExecution>()("DuringExecution", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Union([AiError.AiError, PredicateFailed])),
  accounting: Accounting
}) {
  /** `retryable`: transient; a new run may succeed. */
  get category(): "retryable" {
    return "retryable"
  }
}

/** The model's structured output still did not decode after `maxRetries` repair attempts; `diagnostic` is the last failure. */
export class MaxStructuredOutputRetries
  extends Schema.TaggedError<MaxStructuredOutputRetries>()("MaxStructuredOutputRetries", {
    maxRetries: Count,
    diagnostic: Diagnostic,
    accounting: Accounting
  })
{
  /** `capacity`: a configured limit was hit; raise it or reduce the task. */
  get category(): "capacity" {
    return "capacity"
  }
  override get message() {
    return `structured output still invalid after ${this.maxRetries} repair attempts: ${this.diagnostic.message}`
  }
}

/** The model made `maxConsecutiveMistakes` mistakes in a row (bad tool calls); `mistakes` says what they were. */
export class ConsecutiveMistakes extends Schema.TaggedError<ConsecutiveMistakes>()("ConsecutiveMistakes", {
  maxConsecutiveMistakes: Count,
  mistakes: Schema.Array(Schema.String),
  accounting: Accounting
}) {
  /** `capacity`: a configured limit was hit; raise it or reduce the task. */
  get category(): "capacity" {
    return "capacity"
  }
  override get message() {
    return `${this.maxConsecutiveMistakes} consecutive mistakes`
  }
}

/** A hook or a tool halted the run; `source` names it. */
export class Halted extends Schema.TaggedError<Halted>()("Halted", {
  reason: Schema.String,
  source: Schema.optionalKey(Schema.String),
  accounting: Accounting
}) {
  /** `fatal`: a new run fails the same way until someone changes something. */
  get category(): "fatal" {
    return "fatal"
  }
  override get message() {
    return this.source === undefined ? `halted: ${this.reason}` : `halted by ${this.source}: ${this.reason}`
  }
}

/** Compacting the context failed, so the run could not go on. */
export class CompactionFailed extends Schema.TaggedError<CompactionFailed>()("CompactionFailed", {
  message: Schema.String,
  cause: Schema.optionalKey(AiError.AiError),
  accounting: Accounting
}) {
  /** `fatal`: a new run fails the same way until someone changes something. */
  get category(): "fatal" {
    return "fatal"
  }
}

/** The prompt no longer fits the model's context window, and compaction did not make it fit. */
export class PromptTooLong extends Schema.TaggedError<PromptTooLong>()("PromptTooLong", {
  cause: AiError.ContextLengthExceeded,
  accounting: Accounting
}) {
  /** `capacity`: a configured limit was hit; raise it or reduce the task. */
  get category(): "capacity" {
    return "capacity"
  }
  override get message() {
    return `prompt too long: ${this.cause.message}`
  }
}

/**
 * The last `iterations` turns each repeated the previous turn's tool calls and
 * results, with no text; `stuck` holds the calls and outputs of every one of
 * them, oldest first, for a remediation prompt.
 */
export class NoProgress extends Schema.TaggedError<NoProgress>()("NoProgress", {
  iterations: Count,
  stuck: Item.History,
  accounting: Accounting
}) {
  /** `capacity`: a configured limit was hit; raise it or reduce the task. */
  get category(): "capacity" {
    return "capacity"
  }
  override get message() {
    return `no progress in ${this.iterations} iterations`
  }
}

/** The model's output did not decode as the structured output or tool call it should be. */
export class SchemaValidation extends Schema.TaggedError<SchemaValidation>()("SchemaValidation", {
  diagnostic: Diagnostic,
  accounting: Accounting
}) {
  /** `retryable`: transient; a new run may succeed. */
  get category(): "retryable" {
    return "retryable"
  }
  override get message() {
    return `invalid ${this.diagnostic.target.replace("_", " ")}: ${this.diagnostic.message}`
  }
}

/**
 * The provider refused the request for lack of quota or credit (OpenAI's
 * `insufficient_quota`): no retry can help until an operator adds some.
 */
export class ProviderQuota extends Schema.TaggedError<ProviderQuota>()("ProviderQuota", {
  cause: AiError.QuotaExceeded,
  accounting: Accounting
}) {
  /** `fatal`: a new run fails the same way until someone changes something. */
  get category(): "fatal" {
    return "fatal"
  }
  override get message() {
    return `provider ${this.cause.provider} has no quota left: ${this.cause.message}`
  }
}

/**
 * The run's checkpoint could not be written, or read back on resume (see
 * `Checkpointer`): the run stops rather than go on without being durable.
 * `cause` says why; a run refused before anything ran has a typed one:
 * `RunInProgress` (another executor holds the run), `CheckpointMismatch` (the
 * id was recorded with another input, instructions, tools or output) or
 * `InvalidRunId`.
 */
export class CheckpointFailed extends Schema.TaggedError<CheckpointFailed>()("CheckpointFailed", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect()),
  accounting: Accounting
}) {
  /** `retryable`: transient; a new run may succeed. */
  get category(): "retryable" {
    return "retryable"
  }
}

/** The provider rejected the credentials (HTTP 401 or 403). */
export class ProviderAuth extends Schema.TaggedError<ProviderAuth>()("ProviderAuth", {
  cause: AiError.AuthFailed,
  accounting: Accounting
}) {
  /** `fatal`: a new run fails the same way until someone changes something. */
  get category(): "fatal" {
    return "fatal"
  }
  override get message() {
    return `provider ${this.cause.provider} rejected the credentials (HTTP ${this.cause.status})`
  }
}

export {
  /** The run's options cannot work: found before anything ran (defined in its own module, re-exported here). */
  InvalidOptions
} from "./InvalidOptions.ts"

/**
 * Every error termination's class, in the order of {@link all}. Each says its
 * own {@link Category} (its `category`), from which the lists here are derived.
 */
const errors = [
  MaxTurns,
  MaxBudgetUsd,
  UnpricedModel,
  MaxDuration,
  DuringExecution,
  MaxStructuredOutputRetries,
  ConsecutiveMistakes,
  Halted,
  CompactionFailed,
  PromptTooLong,
  NoProgress,
  SchemaValidation,
  ProviderAuth,
  ProviderQuota,
  CheckpointFailed,
  InvalidOptions
] as const

/** Schema of every error {@link Error}. */
export const Error = Schema.Union(errors)

/**
 * Any termination of a failed run.
 *
 * @since 0.1.0
 * @category models
 */
export type Error = typeof Error.Type

/**
 * How a run ended; `A` is the value a finish tool submits.
 *
 * @since 0.1.0
 * @category models
 */
export type Termination<A = unknown> = Success<A> | Error

/**
 * Schema of every termination, given the schema of a submitted value.
 *
 * @since 0.1.0
 * @category schemas
 */
export const schema = <S extends Schema.Top>(value: S) => Schema.Union([Stop, Submitted(value), Error])

/**
 * The tag of a termination.
 *
 * @since 0.1.0
 * @category models
 */
export type Tag = Termination["_tag"]

/**
 * How to react to a termination: `success`; `retryable` (transient, a new run
 * may succeed); `capacity` (a configured limit was hit: raise it or reduce the
 * task); `fatal` (do not retry without an operator). Each error's class says
 * its own, as its `category`.
 *
 * @since 0.1.0
 * @category models
 */
export type Category = "success" | "retryable" | "capacity" | "fatal"

const tagOf = (error: (typeof errors)[number]): Error["_tag"] => error.fields._tag.ast.literal as Error["_tag"]

/**
 * Every termination tag, successes first.
 *
 * @since 0.1.0
 * @category schemas
 */
export const all: ReadonlyArray<Tag> = ["Stop", "Submitted", ...errors.map(tagOf)]

// A class's `category` is a getter that reads no field: its prototype answers for every instance.
const categories = Object.fromEntries([
  ["Stop", "success"],
  ["Submitted", "success"],
  ...errors.map((error) => [tagOf(error), error.prototype.category])
]) as { readonly [T in Tag]: Category }

/** The category of a termination (or of a tag), for retry decisions. */
export const category = (termination: Tag | { readonly _tag: Tag }): Category =>
  categories[typeof termination === "string" ? termination : termination._tag]

/** Whether the run failed. */
export const isError = <A>(termination: Termination<A>): termination is Error =>
  categories[termination._tag] !== "success"

/** Whether the run ended well. */
export const isSuccess = <A>(termination: Termination<A>): termination is Success<A> =>
  categories[termination._tag] === "success"

/**
 * Records how a run ended on the current span (the run's): the termination and
 * its category, the run's usage and known cost, and `error.type` for an error.
 */
export const annotateCurrentSpan = (termination: Termination): Effect.Effect<void> =>
  Effect.annotateCurrentSpan({
    "agentloop.termination": termination._tag,
    "agentloop.termination.category": category(termination),
    ...Telemetry.usageAttributes(termination.accounting.usage),
    ...(termination.accounting.cost === null ? {} : { "agentloop.cost_usd": termination.accounting.cost }),
    ...(isError(termination) ? { "error.type": termination._tag } : {})
  })
