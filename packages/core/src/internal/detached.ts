/**
 * Waiting for work that may not stop when asked: a tool whose body is
 * uninterruptible (a blocking call, a `Effect.uninterruptible` region) would
 * hold its caller past a timeout or a deadline, since interrupting a fiber
 * waits for it to end.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"

/**
 * Runs `effect` in a fiber of its own and waits for it, at most `limit`
 * (`None` when the limit passed first; no limit by default). Interrupting the
 * wait, or the limit passing, interrupts that fiber and returns at once,
 * without waiting for it to end: a body that cannot be interrupted finishes on
 * its own, and what it returns is dropped. A body that ends before it first
 * waits (a synchronous tool) is answered at once: no timer, no race.
 */
export const detached = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  limit: Duration.Duration = Duration.infinity
): Effect.Effect<Option.Option<A>, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(effect, { startImmediately: true }), (fiber) => {
      const ended = fiber.pollUnsafe()
      if (ended !== undefined) return Effect.map(ended, Option.some)
      const joined = Fiber.join(fiber)
      return restore(
        Duration.isFinite(limit) ? Effect.timeoutOption(joined, limit) : Effect.map(joined, Option.some)
      ).pipe(
        Effect.tap((result) => Option.isNone(result) ? Effect.sync(() => fiber.interruptUnsafe()) : Effect.void),
        Effect.onInterrupt(() => Effect.sync(() => fiber.interruptUnsafe()))
      )
    })
  )
