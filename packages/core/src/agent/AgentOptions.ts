/**
 * What an agent run is asked to do: its input, instructions, tools, stop
 * predicate, structured output and limits. `AgentLoop.stream`/`run` take
 * these; the run's machine is built from them.
 *
 * @since 0.2.0
 */
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { Halt } from "../Halt.ts"
import * as InvalidOptions from "../InvalidOptions.ts"
import * as Item from "../Item.ts"
import type { ModelParams, ToolChoice } from "../LanguageModel.ts"
import * as RunId from "../RunId.ts"
import type { Snapshot } from "../Snapshot.ts"
import * as Toolkit from "../Toolkit.ts"
import type * as Turn from "../Turn.ts"
import * as Until from "../Until.ts"
import * as ThreadId from "./ThreadId.ts"

/**
 * The limits of a run, and the termination each one ends it with.
 *
 * @since 0.2.0
 * @category models
 */
export interface Limits {
  /** Model turns at most (default 50); one more would end the run with `MaxTurns`. */
  readonly maxTurns?: number | undefined
  /**
   * Cost in USD at most, this turn's included (default none); reaching it ends
   * the run with `MaxBudgetUsd`. A model without a price ends it with
   * `UnpricedModel`: before the first request when `model` is given, else at
   * the first turn the provider answers with an unpriced model.
   */
  readonly maxBudgetUsd?: number | undefined
  /**
   * Wall-clock time at most (default none): reaching it ends the run with `MaxDuration`, even mid-turn or mid-tool;
   * a run whose result (or cancellation) is already being recorded ends as recorded.
   */
  readonly maxDuration?: Duration.Input | undefined
  /** Turns in a row whose tool calls all failed (default 3) before `ConsecutiveMistakes`. */
  readonly maxConsecutiveMistakes?: number | undefined
  /** Turns in a row that repeat the previous turn's calls and results with no text (default 3) before `NoProgress`. */
  readonly maxNoProgress?: number | undefined
  /** Repair turns for a structured output that does not decode (default 2) before `MaxStructuredOutputRetries`. */
  readonly maxStructuredOutputRetries?: number | undefined
  /** Tool calls running at once (default 4). */
  readonly toolConcurrency?: number | undefined
  /** Time limit of each tool call (default `Toolkit.defaultTimeout`, five minutes; a tool's own `timeout` wins). */
  readonly toolTimeout?: Toolkit.Options["timeout"]
}

/**
 * A run's thread (see `Thread`): its id, and the number of items past which
 * its history is compacted before a run starts (default: never).
 *
 * @since 0.2.0
 * @category models
 */
export interface ThreadOptions {
  readonly id: string
  /**
   * When the thread's history holds more items than this as a new run
   * starts, the `Compactor` in context shortens it first, and the shorter
   * history is kept for the runs after.
   */
  readonly maxItems?: number | undefined
}

/**
 * What to run. `O` is the structured output's type (the last turn's text without `output`).
 *
 * @since 0.2.0
 * @category models
 */
export interface Options<O = string, R = never, E = never, RU = never> {
  /** The task: a user message, or a whole history to continue. */
  readonly input: string | ReadonlyArray<Item.Item>
  readonly instructions?: string | undefined
  readonly toolkit?: Toolkit.Toolkit<R> | undefined
  /** When to stop; the `StopPolicy` in context when absent (by default: when the model calls no tool). */
  readonly until?: Until.Until<E, RU> | undefined
  /** A structured output: the final answer must decode with this Schema (from its JSON form). */
  readonly output?: Schema.Codec<O, unknown> | undefined
  /** The name of a tool in `toolkit` whose successful call ends the run with `Submitted` and the tool's output. */
  readonly finish?: string | undefined
  /**
   * Runs after each turn and its tools, before the stop predicate: to log,
   * audit or gate a run. Failing with `Halt` ends the run with `Halted`.
   */
  readonly afterTurn?: ((turn: Turn.Turn, snapshot: Snapshot) => Effect.Effect<void, Halt, R>) | undefined
  readonly model?: string | undefined
  readonly params?: ModelParams | undefined
  readonly toolChoice?: ToolChoice | undefined
  readonly limits?: Limits | undefined
  /** Names the agent in traces (`gen_ai.agent.name`). */
  readonly name?: string | undefined
  /** Names the run (in the predicates' snapshots and caches); a random id when absent. */
  readonly runId?: string | undefined
  /**
   * With a `Checkpointer` and a `runId`: once the run's log holds more than
   * this many entries, the next decision to go on is written as a snapshot
   * of the run's whole state, which replaces the log at once (see
   * `AppendOptions.compact`), so a long run's log stays bounded. The turns
   * before a snapshot are no longer in the log. Default: never compacted.
   *
   * @since 0.2.0
   */
  readonly compactAfter?: number | undefined
  /**
   * The conversation the run belongs to (see `Thread`): with a `Checkpointer`
   * in context, the run starts from the items the thread's previous runs
   * added, and adds its own once it finishes well. An id, or the id with the
   * size past which the thread's history is compacted first.
   */
  readonly thread?: string | ThreadOptions | undefined
  /** Nesting depth, for runs started by other runs (default 0). */
  readonly depth?: number | undefined
  /**
   * A person's cancellation: once this effect succeeds with a reason, the
   * run stops wherever it is (a model request, a tool call), records that a
   * person cancelled it (with a `runId` and a `Checkpointer`: executing it
   * again fails the same way instead of going on), and fails with `Halted`
   * whose `source` is `"person"`. A run that finished meanwhile is left
   * finished: once its result is decided (and recorded), a cancel lets its
   * last events through, up to `Finished`.
   *
   * @since 0.3.0
   */
  readonly cancel?: Effect.Effect<string> | undefined
}

const isHistory = Schema.is(Item.History)

const input: InvalidOptions.Rule = {
  expected: "a text, or an array of items",
  test: (value) => typeof value === "string" || isHistory(value)
}

const toolkit: InvalidOptions.Rule = {
  expected: "a toolkit (Toolkit.make)",
  test: (value) => Predicate.hasProperty(value, Toolkit.TypeId)
}

const schema: InvalidOptions.Rule = { expected: "a Schema", test: Schema.isSchema }

const effect: InvalidOptions.Rule = { expected: "an Effect", test: Effect.isEffect }

/** A tool name the toolkit has, for `finish` and `toolChoice`. */
const toolOf = (kit: Toolkit.Toolkit<unknown> | undefined): InvalidOptions.Rule => {
  const names = kit === undefined || !toolkit.test(kit) ? [] : kit.tools.map((tool) => tool.name)
  return {
    expected: names.length === 0
      ? "the name of a tool of the toolkit, which has none"
      : `the name of a tool of the toolkit: ${names.map((name) => JSON.stringify(name)).join(", ")}`,
    test: (value) => typeof value === "string" && names.includes(value)
  }
}

const toolChoice = (kit: Toolkit.Toolkit<unknown> | undefined): InvalidOptions.Rule => {
  const tool = toolOf(kit)
  return {
    expected: `"auto", "none", "required", or { name } with ${tool.expected}`,
    test: (value) =>
      value === "auto" || value === "none" || value === "required" ||
      (Predicate.hasProperty(value, "name") && tool.test(value.name))
  }
}

/** A run id as every store takes it (see `RunId`): checked with the options, before anything runs. */
const runId: InvalidOptions.Rule = {
  expected: `a run id: not empty, at most ${RunId.maxLength} characters, no control characters`,
  test: Schema.is(RunId.RunId)
}

/**
 * The first option of a run that cannot work, checked before anything runs:
 * the input, the toolkit and the tools `finish` and `toolChoice` name, the
 * stop predicate (see `Until.invalid`), the sampling parameters, and every
 * limit (counts are positive integers, `maxStructuredOutputRetries` may be 0,
 * the budget a positive number of dollars, durations above 0), the run id
 * (never a thread's log id) and the thread. `undefined` when they all can.
 *
 * @example
 * ```ts
 * import { AgentOptions } from "@agentloop/core"
 *
 * console.log(AgentOptions.validate({ input: "Hi", limits: { maxTurns: 5 } })) // undefined
 * console.log(AgentOptions.validate({ input: "Hi", limits: { maxTurns: 0 } })?.message)
 * // limits.maxTurns must be a positive integer, not 0
 * ```
 *
 * @since 0.2.0
 * @category validation
 */
export const validate = <O, R, E, RU>(options: Options<O, R, E, RU>): InvalidOptions.InvalidOptions | undefined => {
  const { check, first } = InvalidOptions
  const limits = options.limits
  return first(
    check("input", options.input, input),
    check("instructions", options.instructions, InvalidOptions.string),
    check("toolkit", options.toolkit, toolkit),
    options.toolkit !== undefined && toolkit.test(options.toolkit)
      ? InvalidOptions.outputVersioning(options.toolkit.tools)
      : undefined,
    check("until", options.until, InvalidOptions.function_),
    options.until === undefined ? undefined : Until.invalid(options.until),
    check("output", options.output, schema),
    check("finish", options.finish, toolOf(options.toolkit)),
    check("afterTurn", options.afterTurn, InvalidOptions.function_),
    check("model", options.model, InvalidOptions.nonEmptyString),
    InvalidOptions.modelParams("params", options.params),
    check("toolChoice", options.toolChoice, toolChoice(options.toolkit)),
    check("limits.maxTurns", limits?.maxTurns, InvalidOptions.positiveInteger),
    check("limits.maxBudgetUsd", limits?.maxBudgetUsd, InvalidOptions.positive),
    check("limits.maxDuration", limits?.maxDuration, InvalidOptions.positiveDuration),
    check("limits.maxConsecutiveMistakes", limits?.maxConsecutiveMistakes, InvalidOptions.positiveInteger),
    check("limits.maxNoProgress", limits?.maxNoProgress, InvalidOptions.positiveInteger),
    check("limits.maxStructuredOutputRetries", limits?.maxStructuredOutputRetries, InvalidOptions.nonNegativeInteger),
    check("limits.toolConcurrency", limits?.toolConcurrency, InvalidOptions.positiveInteger),
    check("limits.toolTimeout", limits?.toolTimeout, InvalidOptions.positiveDuration),
    check("name", options.name, InvalidOptions.string),
    check("runId", options.runId, runId),
    check("compactAfter", options.compactAfter, InvalidOptions.positiveInteger),
    check("runId", options.runId, ThreadId.notThreadLog),
    check("thread", options.thread, ThreadId.option),
    check("depth", options.depth, InvalidOptions.nonNegativeInteger),
    check("cancel", options.cancel, effect)
  )
}
