/**
 * What the holder of a file lease knows of it without looking at the files:
 * until when no other executor can have taken it over.
 *
 * Another executor takes a lease over only once the expiry in its file has
 * passed by that executor's clock, and clocks agree within `margin`. So while
 * `now` is before the expiry last written, less the margin, the lease is
 * still held, and an append need not look for a newer lease file; after that
 * it must, and the files tell. An expiry counts only once it is on the disk
 * in time: a renewal that lands when the lease may already have lapsed counts
 * once the files confirm, after it, that no newer lease exists.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/** A lease's window, as its holder knows it. */
export interface LeaseWindow<E> {
  /** Whether the lease is still held: by the clock while in the window, else by `superseded`. */
  readonly held: Effect.Effect<boolean, E>
  /** Notes that `expiresAt` is in the lease's file, written before `writtenBy` (a time read once it was). */
  readonly wrote: (expiresAt: number, writtenBy: number) => void
}

/**
 * The window of a lease whose file says it expires at `expiresAt`, which no
 * one else could have taken over before that was written; `superseded` looks
 * at the files for a newer lease.
 */
export const make = <E>(options: {
  readonly expiresAt: number
  readonly margin: number
  readonly superseded: Effect.Effect<boolean, E>
}): LeaseWindow<E> => {
  const { margin, superseded } = options
  // The last expiry written to the lease's file, and the time until which no one can have taken the lease over.
  let written = options.expiresAt
  let safeUntil = written - margin
  const held = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    if (now < safeUntil) return Effect.succeed(true)
    // What the file holds now, at least: if no newer lease exists after this, none can before it lapses.
    const onDisk = written
    return Effect.map(superseded, (taken) => {
      if (!taken) safeUntil = Math.max(safeUntil, onDisk - margin)
      return !taken
    })
  })
  return {
    held,
    wrote: (expiresAt, writtenBy) => {
      written = expiresAt
      if (writtenBy < safeUntil) safeUntil = Math.max(safeUntil, expiresAt - margin)
    }
  }
}
