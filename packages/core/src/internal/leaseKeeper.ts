/**
 * Keeps a lease while a scope is open: renews it every third of its duration,
 * notes when another owner took it over, and releases it when the scope
 * closes. A renewal that fails for a passing reason (a dropped connection) is
 * tried again at the next beat; the lease is only lost when someone else holds
 * it. A holder that removed what it leased disarms it: no more renewals, and
 * no release.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"

/** A lease that the scope keeps. */
export interface Kept {
  /** Whether another owner has taken the lease over. */
  readonly lost: () => boolean
  /** Stops renewing the lease, and releasing it when the scope closes: what it leased is gone. */
  readonly disarm: () => void
}

/** Keeps the lease that `renew` renews (false: another owner holds it) and `release` gives back. */
export const keep = (options: {
  readonly ttl: Duration.Duration
  readonly renew: Effect.Effect<boolean, unknown>
  readonly release: Effect.Effect<void, unknown>
}): Effect.Effect<Kept, never, Scope.Scope> =>
  Effect.gen(function*() {
    let lost = false
    let disarmed = false
    const beat = Effect.suspend(() =>
      disarmed ? Effect.void : Effect.flatMap(Effect.result(options.renew), (renewed) =>
        Effect.sync(() => {
          if (renewed._tag === "Success" && !renewed.success) lost = true
        }))
    )
    yield* Effect.addFinalizer(() => lost || disarmed ? Effect.void : Effect.ignore(options.release))
    yield* beat.pipe(
      Effect.repeat({
        schedule: Schedule.spaced(Duration.divideUnsafe(options.ttl, 3)),
        until: () => lost || disarmed
      }),
      Effect.delay(Duration.divideUnsafe(options.ttl, 3)),
      Effect.forkScoped
    )
    return {
      lost: () => lost,
      disarm: () => {
        disarmed = true
      }
    }
  })
