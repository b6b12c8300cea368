/**
 * The names a durable run's steps are recorded under in its journal (see
 * `RunJournal`, `RunSteps`): its start, its input, each model turn, each call
 * of a turn (also the name a started call is claimed under), each decision,
 * and, for a fork, its checkpoint and the decision it made for the turn it
 * forked when it edited the history there. A name is the step's identity: an
 * execution that replays the run finds each step under the same name.
 *
 * @since 0.3.0
 */

/**
 * The step that holds when the run first started.
 *
 * @since 0.3.0
 * @category names
 */
export const start = "start"

/**
 * The step that holds the run's input.
 *
 * @since 0.3.0
 * @category names
 */
export const input = "input"

/**
 * The step of model turn `step`.
 *
 * @since 0.3.0
 * @category names
 */
export const turn = (step: number): string => `turn/${step}`

/**
 * The step of call number `index` of turn `step`.
 *
 * @since 0.3.0
 * @category names
 */
export const tool = (step: number, index: number): string => `tool/${step}/${index}`

/**
 * The step of the decision after turn `step`.
 *
 * @since 0.3.0
 * @category names
 */
export const decide = (step: number): string => `decide/${step}`

/**
 * The step of the decision a fork with an edit made for turn `step`, which
 * holds instead of the run's own.
 *
 * @since 0.3.0
 * @category names
 */
export const edited = (step: number): string => `edited/${step}`

/**
 * The step of a fork's checkpoint, written at place `seq` of the fork's
 * course (the place its own records share): where the fork comes from, and
 * how it edited the history there.
 *
 * @since 0.3.0
 * @category names
 */
export const fork = (seq: number): string => `fork/${seq}`

/**
 * What a name says: the kind of step, its turn (0 for the run's start, its
 * input and a fork's checkpoint) and, for a call, its position in the turn
 * (0 otherwise).
 *
 * @since 0.3.0
 * @category models
 */
export interface Parsed {
  readonly kind: "start" | "input" | "turn" | "tool" | "decide" | "edited" | "fork"
  readonly step: number
  readonly index: number
}

const numbered: ReadonlyArray<readonly [RegExp, Parsed["kind"]]> = [
  [/^turn\/(\d{1,9})$/, "turn"],
  [/^tool\/(\d{1,9})\/(\d{1,6})$/, "tool"],
  [/^decide\/(\d{1,9})$/, "decide"],
  [/^edited\/(\d{1,9})$/, "edited"]
]

const forkName = /^fork\/\d{1,15}$/

/**
 * What `name` says, or `undefined` when it is no name of a step (nor one
 * whose numbers are out of bounds: a turn over 9 digits, a position over 6,
 * a fork's place over 15).
 *
 * @example
 * ```ts
 * import { StepName } from "@agentloop/durable"
 *
 * // Each step of a run is recorded under a name that says what it is.
 * console.log(StepName.parse(StepName.tool(3, 1))) // { kind: 'tool', step: 3, index: 1 }
 * console.log(StepName.parse("something else")) // undefined
 * ```
 *
 * @since 0.3.0
 * @category parsing
 */
export const parse = (name: string): Parsed | undefined => {
  if (name === start || name === input) return { kind: name, step: 0, index: 0 }
  if (forkName.test(name)) return { kind: "fork", step: 0, index: 0 }
  for (const [pattern, kind] of numbered) {
    const match = pattern.exec(name)
    if (match !== null) return { kind, step: Number(match[1]), index: Number(match[2] ?? 0) }
  }
  return undefined
}
