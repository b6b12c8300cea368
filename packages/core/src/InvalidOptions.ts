/**
 * Options that cannot work, refused before anything runs: an agent run's
 * limits, a stop predicate's arguments, a step program's fields.
 *
 * `InvalidOptions` is the one error for all of them, so it lives with the
 * vocabulary: `Until` builds it, `AgentLoop` ends a run with it (it is a
 * termination, of category `fatal`: fix the code), `Step.execute` fails with
 * it. The rules here are the checks that build it, each with the words it
 * says what a field must be in.
 *
 * @since 0.2.0
 */
import * as Duration from "effect/Duration"
import * as Formatter from "effect/Formatter"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as Accounting from "./Accounting.ts"
import * as CheckpointVersion from "./CheckpointVersion.ts"
import type { ModelParams } from "./LanguageModel.ts"

/**
 * An option cannot work: `field` (a path: `limits.maxTurns`, `Until.maxDuration`,
 * a step's `maxIterations` with its `stepId`) is `value`, and must be
 * `expected`. Found before anything runs, so its `accounting` (every
 * termination carries one) is empty.
 *
 * @since 0.2.0
 * @category errors
 */
export class InvalidOptions extends Schema.TaggedError<InvalidOptions>()("InvalidOptions", {
  field: Schema.String,
  /** The value as it was given, printed. */
  value: Schema.String,
  expected: Schema.String,
  /** The step whose field it is, in a step program. */
  stepId: Schema.optionalKey(Schema.String),
  accounting: Accounting.Accounting
}) {
  /** As a termination, `fatal`: a new run fails the same way until the code changes. */
  get category(): "fatal" {
    return "fatal"
  }
  override get message() {
    const where = this.stepId === undefined ? "" : `step ${JSON.stringify(this.stepId)}: `
    return `${where}${this.field} must be ${this.expected}, not ${this.value}`
  }
}

/** Values are printed up to this many characters. */
const maxValueLength = 200

/**
 * A value as an error shows it: strings quoted, anything else as `Formatter`
 * prints it, cut at 200 characters.
 *
 * @since 0.2.0
 * @category formatting
 */
export const print = (value: unknown): string => {
  const printed = typeof value === "string" ? JSON.stringify(value) : Formatter.format(value)
  return printed.length > maxValueLength ? `${printed.slice(0, maxValueLength)}…` : printed
}

/**
 * The error for `field` holding `value`, which must be `expected`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (options: {
  readonly field: string
  readonly value: unknown
  readonly expected: string
  readonly stepId?: string | undefined
}): InvalidOptions =>
  new InvalidOptions({
    field: options.field,
    value: print(options.value),
    expected: options.expected,
    ...(options.stepId === undefined ? {} : { stepId: options.stepId }),
    accounting: Accounting.empty
  })

/**
 * What a value must be, in words, and the test of it.
 *
 * @since 0.2.0
 * @category rules
 */
export interface Rule {
  readonly expected: string
  readonly test: (value: unknown) => boolean
}

/**
 * A schema's version and the migrations that reach it (see
 * `CheckpointVersion.Versioning`): a program's `stateVersioning`, a tool's
 * `outputVersioning`.
 *
 * @since 0.2.0
 * @category rules
 */
export const versioning: Rule = {
  expected: "a version (an integer from 1) and migrations (CheckpointVersion.migration)",
  test: CheckpointVersion.isVersioning
}

/**
 * The first of `tools` whose `outputVersioning` cannot work (see
 * {@link versioning}), as the field `tool "<name>".outputVersioning`.
 *
 * @since 0.2.0
 * @category rules
 */
export const outputVersioning = (
  tools: ReadonlyArray<{ readonly name: string; readonly outputVersioning: unknown }>,
  stepId?: string | undefined
): InvalidOptions | undefined =>
  first(
    ...tools.map((tool) =>
      check(`tool ${JSON.stringify(tool.name)}.outputVersioning`, tool.outputVersioning, versioning, stepId)
    )
  )

/**
 * An integer of at least 1: a count of turns, iterations, paths at once.
 *
 * @since 0.2.0
 * @category rules
 */
export const positiveInteger: Rule = {
  expected: "a positive integer",
  test: (value) => typeof value === "number" && Number.isInteger(value) && value >= 1
}

/**
 * An integer of at least 0: a count that may be none.
 *
 * @since 0.2.0
 * @category rules
 */
export const nonNegativeInteger: Rule = {
  expected: "an integer of at least 0",
  test: (value) => typeof value === "number" && Number.isInteger(value) && value >= 0
}

/**
 * A finite number of at least 0: milliseconds, dollars.
 *
 * @since 0.2.0
 * @category rules
 */
export const nonNegative: Rule = {
  expected: "a finite number of at least 0",
  test: (value) => typeof value === "number" && Number.isFinite(value) && value >= 0
}

/**
 * A finite number above 0: a budget.
 *
 * @since 0.2.0
 * @category rules
 */
export const positive: Rule = {
  expected: "a finite number above 0",
  test: (value) => typeof value === "number" && Number.isFinite(value) && value > 0
}

/**
 * A number from 0 to 1: a probability mass (`topP`).
 *
 * @since 0.2.0
 * @category rules
 */
export const unitInterval: Rule = {
  expected: "a number from 0 to 1",
  test: (value) => typeof value === "number" && value >= 0 && value <= 1
}

/**
 * A string with at least one character: a name, an id.
 *
 * @since 0.2.0
 * @category rules
 */
export const nonEmptyString: Rule = {
  expected: "a non-empty string",
  test: (value) => typeof value === "string" && value.length > 0
}

/**
 * Any string.
 *
 * @since 0.2.0
 * @category rules
 */
export const string: Rule = { expected: "a string", test: (value) => typeof value === "string" }

/**
 * A function: a predicate, a step's function.
 *
 * @since 0.2.0
 * @category rules
 */
export const function_: Rule = { expected: "a function", test: Predicate.isFunction }

/**
 * One of the strings `values`.
 *
 * @since 0.2.0
 * @category rules
 */
export const oneOf = (values: ReadonlyArray<string>): Rule => ({
  expected: `one of ${values.map((value) => JSON.stringify(value)).join(", ")}`,
  test: (value) => typeof value === "string" && values.includes(value)
})

const durationOf = (value: unknown): Duration.Duration | undefined => {
  if (typeof value === "number" && Number.isNaN(value)) return undefined
  // `Duration.Input` is what the option's type allows; anything else does not decode.
  return Option.getOrUndefined(Duration.fromInput(value as Duration.Input))
}

/**
 * A duration (milliseconds, or any `Duration` input) of at least 0; `Infinity` is allowed.
 *
 * @since 0.2.0
 * @category rules
 */
export const duration: Rule = {
  expected: "a duration of at least 0 (milliseconds, or a Duration input such as \"30 seconds\")",
  test: (value) => {
    const parsed = durationOf(value)
    return parsed !== undefined && !Duration.isNegative(parsed)
  }
}

/**
 * A duration above 0 (milliseconds, or any `Duration` input); `Infinity` is allowed.
 *
 * @since 0.2.0
 * @category rules
 */
export const positiveDuration: Rule = {
  expected: "a duration above 0 (milliseconds, or a Duration input such as \"30 seconds\")",
  test: (value) => {
    const parsed = durationOf(value)
    return parsed !== undefined && Duration.isPositive(parsed)
  }
}

/**
 * The error for `field` when its `value` is given and breaks `rule`; an absent
 * (`undefined`) value is the default, and passes.
 *
 * @example
 * ```ts
 * import { InvalidOptions } from "@agentloop/core"
 *
 * console.log(InvalidOptions.check("limits.maxTurns", 5, InvalidOptions.positiveInteger)) // undefined
 * const refused = InvalidOptions.check("limits.maxTurns", -1, InvalidOptions.positiveInteger)
 * console.log(refused?.message) // limits.maxTurns must be a positive integer, not -1
 * ```
 *
 * @since 0.2.0
 * @category checks
 */
export const check = (
  field: string,
  value: unknown,
  rule: Rule,
  stepId?: string | undefined
): InvalidOptions | undefined =>
  value === undefined || rule.test(value) ? undefined : make({ field, value, expected: rule.expected, stepId })

/**
 * The first error among checks, in the order the fields are listed.
 *
 * @since 0.2.0
 * @category checks
 */
export const first = (...found: ReadonlyArray<InvalidOptions | undefined>): InvalidOptions | undefined =>
  found.find((error) => error !== undefined)

const reasoningEfforts = ["minimal", "low", "medium", "high"]

const stopSequences: Rule = {
  expected: "an array of strings",
  test: (value) => Array.isArray(value) && value.every((sequence) => typeof sequence === "string")
}

/**
 * The first field of sampling parameters `params` (an option named `field`)
 * that cannot work: a negative temperature, a `topP` outside 0 to 1, a
 * `maxOutputTokens` that is not a positive integer.
 *
 * @since 0.2.0
 * @category checks
 */
export const modelParams = (
  field: string,
  params: ModelParams | undefined,
  stepId?: string | undefined
): InvalidOptions | undefined =>
  params === undefined ? undefined : first(
    check(`${field}.temperature`, params.temperature, nonNegative, stepId),
    check(`${field}.topP`, params.topP, unitInterval, stepId),
    check(`${field}.maxOutputTokens`, params.maxOutputTokens, positiveInteger, stepId),
    check(`${field}.stopSequences`, params.stopSequences, stopSequences, stepId),
    check(`${field}.reasoningEffort`, params.reasoningEffort, oneOf(reasoningEfforts), stepId)
  )
