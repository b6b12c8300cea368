/**
 * How a `run` step retries: a policy as plain data, run as an Effect `Schedule`.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"

const Millis = Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * At most `maxAttempts` attempts in all (the first included), waiting between
 * them `initialDelay` ms, then: the same (`fixed`), `initialDelay` more each
 * time (`linear`), or twice as long each time (`exponential`); never longer
 * than `maxDelay` ms when it is set.
 *
 * @since 0.1.0
 * @category schemas
 */
export const RetryPolicy = Schema.Struct({
  maxAttempts: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  backoff: Schema.Literals(["fixed", "linear", "exponential"]),
  initialDelay: Millis,
  maxDelay: Schema.optionalKey(Millis)
})
export type RetryPolicy = typeof RetryPolicy.Type

/**
 * The wait in ms before retry number `retry` (1 for the first retry).
 *
 * @since 0.1.0
 * @category scheduling
 */
export const delay = (policy: RetryPolicy, retry: number): number => {
  const base = policy.backoff === "fixed"
    ? policy.initialDelay
    : policy.backoff === "linear"
    ? policy.initialDelay * retry
    : policy.initialDelay * 2 ** (retry - 1)
  return policy.maxDelay === undefined ? base : Math.min(base, policy.maxDelay)
}

/**
 * The policy as a `Schedule` for `Effect.retry`: it recurs `maxAttempts - 1`
 * times, waiting {@link delay} before each. The policy is not checked here:
 * decode it with {@link RetryPolicy} first when it comes from outside.
 *
 * @example
 * ```ts
 * import { RetryPolicy, Step } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * const policy: RetryPolicy.RetryPolicy = { maxAttempts: 4, backoff: "exponential", initialDelay: 100, maxDelay: 300 }
 * console.log([1, 2, 3].map((retry) => RetryPolicy.delay(policy, retry))) // [ 100, 200, 300 ]
 *
 * // A `run` step retries by its policy; the third attempt succeeds here.
 * let attempts = 0
 * const flaky = Step.run({
 *   id: "flaky",
 *   retry: { maxAttempts: 3, backoff: "fixed", initialDelay: 1 },
 *   execute: () => ++attempts < 3 ? Effect.fail("not yet") : Effect.succeed("ok")
 * })
 * Effect.runPromise(Step.execute(flaky, undefined)).then((out) => console.log(out, attempts)) // ok 3
 * ```
 *
 * @since 0.1.0
 * @category scheduling
 */
export const schedule = (policy: RetryPolicy): Schedule.Schedule<number> =>
  Schedule.recurs(policy.maxAttempts - 1).pipe(
    Schedule.modifyDelay(({ attempt }) => Effect.succeed(Duration.millis(delay(policy, attempt))))
  )
