/**
 * The answer of an `Until` predicate: stop the run or go on, why, and what to
 * tell the model next.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * A predicate's decision. `reason` says, for a person, why the run stops;
 * `feedback` is passed to the next iteration (for example, why a verification failed).
 *
 * @since 0.1.0
 * @category schemas
 */
export const Verdict = Schema.Struct({
  stop: Schema.Boolean,
  reason: Schema.optionalKey(Schema.String),
  feedback: Schema.optionalKey(Schema.String)
})
export type Verdict = typeof Verdict.Type

/**
 * Stop the run, saying why.
 *
 * @example
 * ```ts
 * import { Verdict } from "@agentloop/core"
 *
 * console.log(Verdict.stop("tests pass"))
 * // { stop: true, reason: 'tests pass' }
 * console.log(Verdict.stop("budget reached", "Summarize what you have so far."))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const stop = (reason: string, feedback?: string): Verdict =>
  feedback === undefined ? { stop: true, reason } : { stop: true, reason, feedback }

const proceed: Verdict = { stop: false }

const continue_ = (feedback?: string): Verdict => feedback === undefined ? proceed : { stop: false, feedback }

export {
  /** Go on with another iteration, optionally with feedback for it. */
  continue_ as continue
}

/**
 * Records the verdict on the current span as `until.stop`, `until.reason` and
 * `until.feedback`; outside a span it does nothing.
 *
 * @since 0.1.0
 * @category tracing
 */
export const annotateCurrentSpan = (verdict: Verdict): Effect.Effect<void> =>
  Effect.annotateCurrentSpan({
    "until.stop": verdict.stop,
    ...(verdict.reason === undefined ? {} : { "until.reason": verdict.reason }),
    ...(verdict.feedback === undefined ? {} : { "until.feedback": verdict.feedback })
  })
