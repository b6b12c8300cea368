/**
 * A program checked before it runs: every step's fields, and the steps below
 * it that its fields hold (a loop's steps, a spawn's or a provide's child, an
 * every's step). The steps a `route` or `paths` function answers with are
 * checked when they are answered, before they run.
 *
 * @internal
 */
import * as Exit from "effect/Exit"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import * as InvalidOptions from "../../InvalidOptions.ts"
import * as Tool from "../../Tool.ts"
import * as Until from "../../Until.ts"
import * as Channel from "../Channel.ts"
import { RetryPolicy } from "../RetryPolicy.ts"
import type * as Step from "../StepAst.ts"
import { InvalidStep } from "../StepError.ts"
import { Runner, TypeId } from "./runner.ts"

/** Whether `value` is a step a constructor built. */
export const isStep = (value: unknown): value is Step.Any =>
  Predicate.hasProperty(value, TypeId) && Predicate.hasProperty(value, Runner) && typeof value[Runner] === "function"

/** The longest step id: ids name spans, events and the keys of checkpoints. */
export const maxIdLength = 128

/**
 * A step id: non-empty, at most {@link maxIdLength} characters, no control
 * characters, and none of `/`, `#`, `[`, `]`, which the keys of checkpoints and
 * the ids of sub-agents' contexts are written with (an id holding them could
 * name another step's record).
 */
const idRule: InvalidOptions.Rule = {
  expected: `a non-empty string of at most ${maxIdLength} characters, without control characters or any of / # [ ]`,
  test: (value) => typeof value === "string" && value.length > 0 && value.length <= maxIdLength && idCharacters(value)
}

const idSeparators = new Set(["/", "#", "[", "]"])

const idCharacters = (id: string): boolean => {
  for (const character of id) {
    const code = character.charCodeAt(0)
    if (code < 0x20 || code === 0x7f || idSeparators.has(character)) return false
  }
  return true
}

const tool: InvalidOptions.Rule = {
  expected: "a tool (Tool.make)",
  test: (value) => Predicate.hasProperty(value, Tool.TypeId)
}

const channel: InvalidOptions.Rule = {
  expected: "a channel (Channel.make)",
  test: (value) => Predicate.hasProperty(value, Channel.TypeId)
}

const object: InvalidOptions.Rule = { expected: "an object", test: Predicate.isObject }

const boolOrFunction: InvalidOptions.Rule = {
  expected: "a boolean or a function",
  test: (value) => typeof value === "boolean" || typeof value === "function"
}

const names: InvalidOptions.Rule = {
  expected: "an array of tool names",
  test: (value) => Array.isArray(value) && value.every((name) => typeof name === "string")
}

const steps: InvalidOptions.Rule = {
  expected: "a non-empty array of steps",
  test: (value) => Array.isArray(value) && value.length > 0
}

const memory: InvalidOptions.Rule = {
  expected: "a Memory layer, or an array of them",
  test: (value) => Predicate.isObject(value) || Array.isArray(value)
}

const iterationLimit: InvalidOptions.Rule = {
  expected: "a positive integer, or Infinity",
  test: (value) => value === Number.POSITIVE_INFINITY || InvalidOptions.positiveInteger.test(value)
}

const forkMode = InvalidOptions.oneOf(["race", "firstSuccess", "all", "settle"])

const everyOnError = InvalidOptions.oneOf(["continue", "fail"])

const decodePolicy = Schema.decodeUnknownExit(RetryPolicy)

/** The retry policy of a `run` step, when it does not decode. */
const retryPolicy = (step: Step.StepRun<never, unknown, unknown, unknown, never>) => {
  if (step.retry === undefined) return undefined
  const decoded = decodePolicy(step.retry)
  return Exit.isSuccess(decoded) ? undefined : InvalidOptions.make({
    field: "retry",
    value: step.retry,
    expected: `a RetryPolicy (${Exit.isFailure(decoded) ? String(decoded.cause).replace(/\s+/g, " ") : ""})`,
    stepId: step.id
  })
}

/** The fields of one step that cannot work (its children aside), and the children its fields hold. */
const fieldsOf = (step: Step.Any): {
  readonly refused: InvalidOptions.InvalidOptions | undefined
  readonly children: ReadonlyArray<unknown>
} => {
  const id = step.id
  const check = (field: string, value: unknown, rule: InvalidOptions.Rule) =>
    InvalidOptions.check(field, value, rule, id)
  const { first } = InvalidOptions
  switch (step.kind) {
    case "run":
      return {
        refused: first(check("execute", step.execute, InvalidOptions.function_), retryPolicy(step)),
        children: []
      }
    case "llm":
      return {
        refused: first(
          check("model", step.model, InvalidOptions.nonEmptyString),
          check("instructions", step.instructions, InvalidOptions.string),
          check("tools", step.tools, names),
          InvalidOptions.modelParams("params", step.params, id),
          check("emit", step.emit, boolOrFunction),
          check("prompt", step.prompt, InvalidOptions.function_)
        ),
        children: []
      }
    case "tool":
      return {
        refused: first(
          check("tool", step.tool, tool),
          tool.test(step.tool) ? InvalidOptions.outputVersioning([step.tool], id) : undefined,
          check("args", step.args, object)
        ),
        children: []
      }
    case "branch":
      return { refused: check("route", step.route, InvalidOptions.function_), children: [] }
    case "fork":
      return {
        refused: first(
          check("mode", step.mode, forkMode),
          check("paths", step.paths, InvalidOptions.function_),
          step.mode === "all" || step.mode === "settle"
            ? check("merge", step.merge, InvalidOptions.function_)
            : undefined,
          check("concurrency", step.concurrency, InvalidOptions.positiveInteger)
        ),
        children: []
      }
    case "spawn":
      return {
        refused: first(
          check("timeout", step.timeout, InvalidOptions.nonNegative),
          check("memory", step.memory, memory)
        ),
        children: [step.child]
      }
    case "provide":
      return { refused: check("memory", step.memory, memory), children: [step.child] }
    case "loop":
      return {
        refused: first(
          check("steps", step.steps, steps),
          check("until", step.until, InvalidOptions.function_),
          typeof step.until === "function" ? Until.invalid(step.until) : undefined,
          check("maxIterations", step.maxIterations, iterationLimit),
          check("maxHistorySize", step.maxHistorySize, InvalidOptions.nonNegativeInteger),
          check("inbox", step.inbox, channel),
          check("parkTimeout", step.parkTimeout, InvalidOptions.nonNegative),
          check("prepareNext", step.prepareNext, InvalidOptions.function_),
          check("onError", step.onError, InvalidOptions.function_)
        ),
        children: Array.isArray(step.steps) ? step.steps : []
      }
    case "every":
      return {
        refused: first(
          check("ms", step.ms, InvalidOptions.nonNegative),
          check("jitter", step.jitter, InvalidOptions.nonNegative),
          check("wakeOn", step.wakeOn, channel),
          check("onError", step.onError, everyOnError)
        ),
        children: [step.step]
      }
  }
}

/** Where a step to check comes from, for the error of one that is not a step. */
export interface Origin {
  /** The step whose function answered it. */
  readonly stepId: string
  /** The function, e.g. `route`. */
  readonly answered: string
}

/**
 * The first thing in `root`, or in a step below it that its fields hold, that
 * cannot run: something that is not a step (`InvalidStep`: the program itself,
 * what a step's function answered with, as `origin` says, or a child held by
 * a step's fields), or a field that cannot work (`InvalidOptions`, naming the
 * step and the field); `undefined` when none. It walks the program without
 * recursion, so a program nested thousands deep is checked as well as a flat one.
 */
export const validate = (
  root: unknown,
  origin?: Origin | undefined
): InvalidOptions.InvalidOptions | InvalidStep | undefined => {
  const pending: Array<{ readonly value: unknown; readonly parent: string | undefined }> = [{
    value: root,
    parent: undefined
  }]
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { parent, value } = next
    if (!isStep(value)) {
      const printed = InvalidOptions.print(value)
      const hint = "build one with Step.run, Step.llm, …"
      return parent !== undefined
        ? new InvalidStep({
          stepId: parent,
          message: `a child of step ${JSON.stringify(parent)} is ${printed}, not a step (${hint})`
        })
        : origin !== undefined
        ? new InvalidStep({
          stepId: origin.stepId,
          message: `${origin.answered} of step ${
            JSON.stringify(origin.stepId)
          } answered ${printed}, not a step (${hint})`
        })
        : new InvalidStep({ stepId: "", message: `the program is ${printed}, not a step (${hint})` })
    }
    const id = InvalidOptions.check("id", value.id, idRule, typeof value.id === "string" ? value.id : undefined)
    if (id !== undefined) return id
    const { children, refused } = fieldsOf(value)
    if (refused !== undefined) return refused
    for (let i = children.length - 1; i >= 0; i--) pending.push({ value: children[i], parent: value.id })
  }
  return undefined
}
