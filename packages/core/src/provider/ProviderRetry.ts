/**
 * Retries of a model request that failed before it produced anything.
 *
 * A retry never replays deltas: once an element has reached the consumer a
 * failure is final. The wait before a retry is the policy's, or longer when the
 * provider asked for more (`Retry-After`), up to a cap: a server that asks for
 * an hour does not get to park the caller for an hour.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Function from "effect/Function"
import * as Pull from "effect/Pull"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as AiError from "../AiError.ts"
import type * as ProviderTimeout from "./ProviderTimeout.ts"

/**
 * When to retry a failed request: a `Schedule` fed with each retryable error.
 * The delay it returns is a floor: a longer `retryAfter` of the error (a 429's or a 503's) wins.
 *
 * @since 0.1.0
 * @category models
 */
export type Policy = Schedule.Schedule<unknown, AiError.AiError>

/**
 * Up to 3 retries, exponential from 500ms with jitter, no single wait over 10 seconds (unless `Retry-After` asks for more).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultPolicy: Policy = Schedule.exponential("500 millis").pipe(
  Schedule.jittered,
  Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(10)))),
  Schedule.upTo({ times: 3 })
)

/**
 * Never retries.
 *
 * @since 0.1.0
 * @category constants
 */
export const none: Policy = Schedule.recurs(0)

/**
 * The longest `Retry-After` a retry waits for by default (one minute); see {@link Options.maxRetryAfter}.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxRetryAfter: Duration.Duration = Duration.minutes(1)

/**
 * How {@link retry} retries.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Default {@link defaultPolicy}. */
  readonly policy?: Policy | undefined
  /**
   * The longest wait a provider's `Retry-After` may ask for (default
   * {@link defaultMaxRetryAfter}). An error asking for longer is not retried:
   * it fails the stream, carrying its `retryAfter`, and the application decides.
   */
  readonly maxRetryAfter?: Duration.Input | undefined
  /** When the turn must be over: a retry that would start after it fails at once with the deadline's error. */
  readonly deadline?: ProviderTimeout.Deadline | undefined
}

const retryAfterOf = (error: AiError.AiError): Duration.Duration =>
  (error._tag === "RateLimited" || error._tag === "Unavailable") && error.retryAfter !== undefined
    ? error.retryAfter
    : Duration.zero

/**
 * Re-runs a model stream that failed with a retryable error (`AiError.isRetryable`)
 * before it emitted anything, as often as the policy allows, waiting the
 * policy's delay or the error's `retryAfter`, whichever is longer.
 *
 * @example
 * ```ts
 * import { AiError, ProviderRetry } from "@agentloop/core"
 * import { Effect, Schedule, Stream } from "effect"
 *
 * // A request that is rate limited once, then streams.
 * let attempts = 0
 * const request = Stream.suspend(() =>
 *   ++attempts === 1
 *     ? Stream.fail(new AiError.RateLimited({ provider: "example", message: "slow down" }))
 *     : Stream.make("Hello", " world")
 * )
 *
 * const program = request.pipe(
 *   ProviderRetry.retry({ policy: Schedule.recurs(2), maxRetryAfter: "1 second" }),
 *   Stream.runCollect
 * )
 * Effect.runPromise(program).then((chunks) => console.log(chunks.join(""), attempts)) // Hello world 2
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const retry: {
  (options?: Options): <A, R>(self: Stream.Stream<A, AiError.AiError, R>) => Stream.Stream<A, AiError.AiError, R>
  <A, R>(self: Stream.Stream<A, AiError.AiError, R>, options?: Options): Stream.Stream<A, AiError.AiError, R>
} = Function.dual(
  (args) => Stream.isStream(args[0]),
  <A, R>(self: Stream.Stream<A, AiError.AiError, R>, options?: Options) => {
    const cap = Duration.fromInputUnsafe(options?.maxRetryAfter ?? defaultMaxRetryAfter)
    return Stream.unwrap(Effect.map(Schedule.toStep(options?.policy ?? defaultPolicy), (step) => {
      const attempt = (): Stream.Stream<A, AiError.AiError, R> => {
        let emitted = false
        return self.pipe(
          Stream.mapArray((chunk) => {
            emitted = true
            return chunk
          }),
          Stream.catch((error) => {
            const asked = retryAfterOf(error)
            return emitted || !AiError.isRetryable(error) || Duration.isGreaterThan(asked, cap)
              ? Stream.fail(error)
              : Stream.unwrap(Effect.flatMap(Clock.currentTimeMillis, (now) =>
                Pull.matchEffect(step(now, error), {
                  onSuccess: ([, delay]) => {
                    const wait = Duration.max(delay, asked)
                    const deadline = options?.deadline
                    return deadline !== undefined && now + Duration.toMillis(wait) >= deadline.at
                      ? Effect.succeed(Stream.fail(deadline.error))
                      : Effect.as(Effect.sleep(wait), attempt())
                  },
                  onDone: () => Effect.succeed(Stream.fail(error)),
                  onFailure: Effect.failCause
                })))
          })
        )
      }
      return attempt()
    }))
  }
)
