/**
 * What a crash test saw, and what it means: for the uninterrupted run and for
 * each kill point, the run's result, the model's turns, the effects on the
 * world and the appends to the store; for each kill point, the invariants it
 * broke, in words. {@link verify} fails with them.
 *
 * The invariants, each against the uninterrupted run: no turn of the model
 * asked more often, no effect that is not idempotent made more often, and
 * the same result.
 *
 * @since 0.2.0
 */
import type * as Item from "@agentloop/core/Item"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Equal from "effect/Equal"
import type * as Equivalence from "effect/Equivalence"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as util from "node:util"
import type * as CrashJournal from "./CrashJournal.ts"

/**
 * How a run ended: its value, or its failure in words.
 *
 * @since 0.2.0
 * @category models
 */
export type Outcome<A> =
  | { readonly _tag: "Success"; readonly value: A }
  | { readonly _tag: "Failure"; readonly message: string }

/**
 * The {@link Outcome} of an exit: a failure is told by its errors' messages.
 *
 * @since 0.2.0
 * @category constructors
 */
export const outcome = <A, E>(exit: Exit.Exit<A, E>): Outcome<A> =>
  Exit.isSuccess(exit)
    ? { _tag: "Success", value: exit.value }
    : {
      _tag: "Failure",
      message: Cause.hasInterruptsOnly(exit.cause)
        ? "interrupted"
        : Cause.prettyErrors(exit.cause).map((error) => `${error.name}: ${error.message}`).join("; ")
    }

/**
 * What a run did, over every process (or attempt) that ran it.
 *
 * @since 0.2.0
 * @category models
 */
export interface Observed {
  /** Each append that reached the store, by its entries' tags (`Answered`, `ToolDone`, `Completed`…). */
  readonly appends: ReadonlyArray<string>
  /** The history of each request the model was asked, in order. */
  readonly turns: ReadonlyArray<ReadonlyArray<Item.Item>>
  /** Each tool run and side effect recorded in the `CrashJournal`, in order. */
  readonly effects: ReadonlyArray<CrashJournal.SideEffect>
}

/**
 * The run that no one killed: what every kill point is compared with.
 *
 * @since 0.2.0
 * @category models
 */
export interface Uninterrupted<A> {
  readonly result: Outcome<A>
  readonly observed: Observed
}

/**
 * A run killed once append `after` reached the store (`entry` says what it
 * recorded), then resumed: `result` is the resumed run's, `observed` what
 * both did, `problems` the invariants broken (none when it behaved).
 *
 * @since 0.2.0
 * @category models
 */
export interface KillPoint<A> {
  readonly after: number
  readonly entry: string
  readonly result: Outcome<A>
  readonly observed: Observed
  readonly problems: ReadonlyArray<string>
}

/**
 * A crash test's report: the uninterrupted run, and each kill point.
 *
 * @since 0.2.0
 * @category models
 */
export interface Report<A> {
  readonly uninterrupted: Uninterrupted<A>
  readonly killPoints: ReadonlyArray<KillPoint<A>>
}

const show = (value: unknown): string => util.inspect(value, { depth: 5, breakLength: Infinity })

const times = (n: number): string => n === 0 ? "never" : n === 1 ? "once" : `${n} times`

const count = <A>(values: ReadonlyArray<A>, key: (a: A) => string): Map<string, { readonly first: A; n: number }> => {
  const counts = new Map<string, { readonly first: A; n: number }>()
  for (const value of values) {
    const k = key(value)
    const seen = counts.get(k)
    if (seen === undefined) counts.set(k, { first: value, n: 1 })
    else seen.n++
  }
  return counts
}

/** The request whose history is `history`, for people: what it answers. */
const request = (history: ReadonlyArray<Item.Item>): string => {
  const last = history.at(-1)
  if (last === undefined) return "the request with an empty history"
  switch (last.type) {
    case "function_call_output":
      return `the request after the output of call "${last.call_id}"`
    case "function_call":
      return `the request after the call of "${last.name}"`
    case "message": {
      const text = last.content.map((part) => "text" in part ? part.text : "").join("")
      return `the request after the ${last.role} message ${JSON.stringify(text.slice(0, 60))}`
    }
    default:
      return `the request after a ${last.type} item`
  }
}

/**
 * The invariants a kill point broke, against the uninterrupted run: what
 * `killed` says when the program ended before the kill point, each turn of
 * the model asked again (the same request, more often than the
 * uninterrupted run asked it; or more turns in all), each effect that is not
 * idempotent made again (likewise, by its name and key, or by its name in
 * all), and a result that differs (by `equivalence`).
 *
 * @since 0.2.0
 * @category judging
 */
export const problems = <A>(
  uninterrupted: Uninterrupted<A>,
  killPoint: {
    readonly after: number
    readonly killed: boolean
    readonly result: Outcome<A>
    readonly observed: Observed
  },
  equivalence: Equivalence.Equivalence<A> | undefined = Equal.equals
): ReadonlyArray<string> => {
  const found: Array<string> = []
  if (!killPoint.killed) {
    found.push(
      `the run ended before its append ${killPoint.after} (the uninterrupted run made ${uninterrupted.observed.appends.length}): it does not record the same steps each time it runs`
    )
  }

  // A request (an effect) counts as repeated when the killed and resumed halves made the very same one more than
  // once, and more often than the uninterrupted run did: one that merely differs (a timestamp in a tool's output)
  // is not. Repeats that differ each time still show in the totals.
  const history = (turn: ReadonlyArray<Item.Item>) => JSON.stringify(turn)
  const turnsBefore = count(uninterrupted.observed.turns, history)
  let repeatedTurns = 0
  for (const [key, { first, n }] of count(killPoint.observed.turns, history)) {
    const before = turnsBefore.get(key)?.n ?? 0
    if (n > 1 && n > before) {
      repeatedTurns++
      found.push(`the model was asked ${request(first)} ${times(n)} (the uninterrupted run asked it ${times(before)})`)
    }
  }
  const turns = killPoint.observed.turns.length
  const turnsThen = uninterrupted.observed.turns.length
  if (repeatedTurns === 0 && turns > turnsThen) {
    found.push(`the model was asked ${turns} turns (the uninterrupted run asked ${turnsThen})`)
  }

  const effect = (e: CrashJournal.SideEffect) => JSON.stringify([e.name, e.key])
  const once = (e: CrashJournal.SideEffect) => !e.idempotent
  const effectsBefore = count(uninterrupted.observed.effects.filter(once), effect)
  const repeatedEffects = new Set<string>()
  for (const [key, { first, n }] of count(killPoint.observed.effects.filter(once), effect)) {
    const before = effectsBefore.get(key)?.n ?? 0
    if (n > 1 && n > before) {
      repeatedEffects.add(first.name)
      found.push(
        `"${first.name}"${first.key === "" ? "" : ` ${first.key}`}, which is not idempotent, ran ${
          times(n)
        } (the uninterrupted run: ${times(before)})`
      )
    }
  }
  const byNameBefore = count(uninterrupted.observed.effects.filter(once), (e) => e.name)
  for (const [name, { n }] of count(killPoint.observed.effects.filter(once), (e) => e.name)) {
    const before = byNameBefore.get(name)?.n ?? 0
    if (!repeatedEffects.has(name) && n > before) {
      found.push(`"${name}", which is not idempotent, ran ${times(n)} in all (the uninterrupted run: ${times(before)})`)
    }
  }

  const expected = uninterrupted.result
  const actual = killPoint.result
  if (actual._tag === "Failure" && expected._tag === "Success") {
    found.push(`the resumed run failed: ${actual.message}`)
  } else if (actual._tag === "Success" && expected._tag === "Failure") {
    found.push(`the resumed run returned ${show(actual.value)}; the uninterrupted run failed: ${expected.message}`)
  } else if (actual._tag === "Failure" && expected._tag === "Failure") {
    if (actual.message !== expected.message) {
      found.push(`the resumed run failed with ${actual.message}; the uninterrupted run with ${expected.message}`)
    }
  } else if (actual._tag === "Success" && expected._tag === "Success" && !equivalence(actual.value, expected.value)) {
    found.push(`the resumed run returned ${show(actual.value)}; the uninterrupted run ${show(expected.value)}`)
  }
  return found
}

/**
 * A crash test found broken invariants: `message` lists them, kill point by
 * kill point.
 *
 * @since 0.2.0
 * @category errors
 */
export class CrashTestFailed extends Schema.TaggedError<CrashTestFailed>()("CrashTestFailed", {
  /** How many kill points were tried. */
  killPoints: Schema.Int,
  failures: Schema.Array(Schema.Struct({
    after: Schema.Int,
    entry: Schema.String,
    problems: Schema.Array(Schema.String)
  }))
}) {
  override get message() {
    if (this.killPoints === 0) {
      return "the uninterrupted run recorded nothing, so there was nowhere to kill it: give the run a runId (a step program an id) and run it with a Checkpointer"
    }
    const lines = this.failures.flatMap((failure) => [
      `killed after append ${failure.after} (${failure.entry}), then resumed:`,
      ...failure.problems.map((problem) => `  - ${problem}`)
    ])
    return [
      `the run broke its invariants at ${this.failures.length} of ${this.killPoints} kill points:`,
      ...lines
    ].join("\n")
  }
}

/**
 * Succeeds when every kill point kept every invariant; fails with
 * {@link CrashTestFailed}, listing what broke, otherwise (and when the
 * uninterrupted run recorded nothing to kill it after).
 *
 * @example
 * ```ts
 * import { CrashReport } from "@agentloop/testing"
 * import { Effect } from "effect"
 *
 * const outcome = { _tag: "Success", value: "done" } as const
 * const observed = { appends: ["Finished"], turns: [], effects: [] }
 * const report: CrashReport.Report<string> = {
 *   uninterrupted: { result: outcome, observed },
 *   killPoints: [{ after: 1, entry: "Finished", result: outcome, observed, problems: [] }]
 * }
 *
 * Effect.runPromise(CrashReport.verify(report)) // every kill point kept every invariant
 * ```
 *
 * @since 0.2.0
 * @category judging
 */
export const verify = <A>(report: Report<A>): Effect.Effect<void, CrashTestFailed> => {
  const failures = report.killPoints.filter((killPoint) => killPoint.problems.length > 0)
  return failures.length === 0 && report.killPoints.length > 0
    ? Effect.void
    : Effect.fail(
      new CrashTestFailed({
        killPoints: report.killPoints.length,
        failures: failures.map(({ after, entry, problems }) => ({ after, entry, problems }))
      })
    )
}
