/**
 * The waits of a provider request and their bounds: how long for the
 * response, how long for each chunk of its body while the consumer waits for
 * it, and the turn's deadline over all of them. Every limit ends in
 * `AiError.Timeout`.
 *
 * The body's limits are kept by one watchdog fiber per request rather than a
 * timer per chunk: when one passes, the watchdog aborts the request, and the
 * read that was waiting fails with the timeout.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import * as Stream from "effect/Stream"
import * as AiError from "../AiError.ts"

/**
 * A point in time (`Clock` epoch milliseconds) past which a turn fails with `error`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Deadline {
  readonly at: number
  readonly error: AiError.Timeout
}

/**
 * A `Timeout` whose message names the limit, e.g. `no response within 1m`.
 *
 * @since 0.1.0
 * @category errors
 */
export const error = (provider: string, message: (duration: string) => string, duration: Duration.Input) =>
  new AiError.Timeout({ provider, message: message(Duration.format(Duration.fromInputUnsafe(duration))) })

/**
 * Bounds the wait for a response by `requestTimeout` and by the deadline, whichever comes first.
 *
 * @example
 * ```ts
 * import { ProviderTimeout } from "@agentloop/core"
 * import { Clock, Effect } from "effect"
 *
 * // A request that waits longer than its timeout fails with a typed AiError.Timeout.
 * const program = Effect.gen(function*() {
 *   const clock = yield* Clock.Clock
 *   const error = yield* Effect.never.pipe(
 *     ProviderTimeout.request({ provider: "example", requestTimeout: "20 millis", deadline: undefined, clock }),
 *     Effect.flip
 *   )
 *   console.log(error._tag) // Timeout
 * })
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const request = (options: {
  readonly provider: string
  readonly requestTimeout: Duration.Input | undefined
  readonly deadline: Deadline | undefined
  readonly clock: Clock.Clock
}) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | AiError.Timeout, R> => {
  const { deadline, requestTimeout } = options
  const own = requestTimeout === undefined ? Infinity : Duration.toMillis(Duration.fromInputUnsafe(requestTimeout))
  const left = deadline === undefined ? Infinity : deadline.at - options.clock.currentTimeMillisUnsafe()
  if (!Number.isFinite(own) && !Number.isFinite(left)) return effect
  const timeout = deadline !== undefined && left < own
    ? deadline.error
    : error(options.provider, (d) => `no response within ${d}`, requestTimeout ?? Duration.infinity)
  return Effect.timeoutOrElse(effect, {
    duration: Math.max(0, Math.min(own, left)),
    orElse: () => Effect.fail(timeout)
  })
}

/**
 * The body with its waits bounded: while the consumer waits for a chunk, no
 * more than `idleTimeout`, and nothing past the deadline. `abort` ends the
 * request; the watchdog runs it when a limit passes.
 *
 * @since 0.1.0
 * @category combinators
 */
export const watch = Effect.fnUntraced(function*<E>(
  body: Stream.Stream<Uint8Array, E>,
  options: {
    readonly provider: string
    readonly idleTimeout: Duration.Input | undefined
    readonly deadline: Deadline | undefined
    readonly clock: Clock.Clock
    readonly abort: Effect.Effect<void>
  }
) {
  const { clock, deadline, idleTimeout, provider } = options
  if (idleTimeout === undefined && deadline === undefined) return body
  const idle = idleTimeout === undefined ? Infinity : Duration.toMillis(Duration.fromInputUnsafe(idleTimeout))
  let waitingSince: number | undefined
  let timedOut: AiError.Timeout | undefined
  /** Notes a limit that has passed; returns how long until the next one could. */
  const check = (): number => {
    const now = clock.currentTimeMillisUnsafe()
    if (deadline !== undefined && now >= deadline.at) timedOut = deadline.error
    else if (idleTimeout !== undefined && waitingSince !== undefined && now - waitingSince >= idle) {
      timedOut = error(provider, (d) => `no data for ${d} while streaming`, idleTimeout)
    }
    // Nothing to watch until the consumer pulls: look again after a full idle period.
    const idleLeft = waitingSince === undefined ? idle : waitingSince + idle - now
    return Math.min(idleLeft, deadline === undefined ? Infinity : deadline.at - now)
  }
  const watchdog: Effect.Effect<void> = Effect.suspend(() => {
    const wait = check()
    return timedOut !== undefined ? options.abort : Effect.andThen(Effect.sleep(wait), watchdog)
  })
  yield* Effect.forkScoped(watchdog)
  return Stream.transformPull(body, (pull) =>
    Effect.succeed(
      Effect.suspend(() => {
        waitingSince = clock.currentTimeMillisUnsafe()
        return pull
      }).pipe(
        Effect.map((chunk) => {
          waitingSince = undefined
          return chunk
        }),
        // An aborted body fails, or with some clients just ends: either way, it timed out.
        Pull.catchDone((): Pull.Pull<never, E | AiError.Timeout> =>
          timedOut === undefined ? Cause.done() : Effect.fail(timedOut)
        ),
        Effect.mapError((failure) => timedOut ?? failure)
      )
    ))
})
