/**
 * Waiting for work that may not stop when asked: a tool whose body is
 * uninterruptible (a blocking call, a `Effect.uninterruptible` region) would
 * hold its caller past a timeout or a deadline, since interrupting a fiber
 * waits for it to end.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"

/**
 * Runs `effect` in a fiber of its own and waits for it. Interrupting the wait
 * interrupts that fiber and returns at once, without waiting for it to end: a
 * body that cannot be interrupted finishes on its own, and what it returns is
 * dropped.
 */
export const detached = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      Effect.forkDetach(effect, { startImmediately: true }),
      (fiber) =>
        restore(Fiber.join(fiber)).pipe(
          Effect.onInterrupt(() => Effect.sync(() => fiber.interruptUnsafe()))
        )
    )
  )
