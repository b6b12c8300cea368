/**
 * What the holder of a file lease knows of it without looking at the files:
 * until when no other executor can have taken it over.
 *
 * Another executor takes a lease over only once the expiry it reads in the
 * lease's file has passed by its clock, read before the file, and clocks agree
 * within `margin`. So while `now` is before the expiry last written, less the
 * margin, the lease is still held, and an append need not look for a newer
 * lease file; after that it must, and the files tell. An expiry counts only
 * once it is on the disk in time: a renewal that lands when the lease may
 * already have lapsed never opens the window again, since a taker that read
 * the lapsed file before it landed may take the lease after it, at any time.
 * From then on every look is at the files.
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
  // The time until which no one can have taken the lease over: it only moves while it is ahead.
  let safeUntil = options.expiresAt - margin
  return {
    held: Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => now < safeUntil ? Effect.succeed(true) : Effect.map(superseded, (taken) => !taken)
    ),
    wrote: (expiresAt, writtenBy) => {
      if (writtenBy < safeUntil) safeUntil = Math.max(safeUntil, expiresAt - margin)
    }
  }
}
