/**
 * A run's lease in the file store: `lease.<n>` files in the run's folder, each
 * holding its owner and expiry.
 *
 * A new lease is the next number, created whole by a hard link that fails when
 * the number exists, so of two executors taking a lapsed lease at once exactly
 * one wins; the taker then removes the files of the leases before its own. A
 * taker judges the newest lease lapsed by a time read before its file: had it
 * read the time after, a file read before a renewal landed would pass for
 * lapsed, however long the reading took. Its owner renews it every third of
 * its duration by replacing the file (a temporary file renamed over it).
 *
 * A lease is lost once a higher number exists, or once its own file is gone
 * or names another owner (owners are unique per hold): a run's folder that a
 * prune removed and an executor made again numbers its leases from 1 again.
 * Every renewal looks, and the release, so a takeover the window below did
 * not foresee ends at the next renewal, and the new holder's lease file is
 * never replaced; an append looks only once the lease may have lapsed (see
 * `leaseWindow`): before that, no one else can have taken it. A holder writes a
 * file into the run's folder (a lease's renewal, a log, a mark) through a
 * temporary file made there before it looks (see `WholeFile.place`), so no
 * file of its lands in a folder made again after the look.
 *
 * Lease files are not synced: a power cut stops every executor of the
 * machine, and a lease file it tore reads as lapsed.
 *
 * A released lease records when it was released (see
 * `Retention.releasedExpiry`), so the newest lease of a run nobody holds says
 * when its last execution ended (see {@link Leases.lapsed}).
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { RunInProgress } from "../CheckpointStore.ts"
import type { CheckpointError } from "../CheckpointStore.ts"
import * as LeaseKeeper from "./leaseKeeper.ts"
import * as LeaseWindow from "./leaseWindow.ts"
import { isReason } from "./platformReason.ts"
import * as Retention from "./retention.ts"
import { failed } from "./storeFailure.ts"
import * as WholeFile from "./wholeFile.ts"

const Lease = Schema.fromJsonString(Schema.Struct({ owner: Schema.String, expiresAt: Schema.Number }))
const decodeLease = Schema.decodeUnknownEffect(Lease)
const encodeLease = Schema.encodeEffect(Lease)

const leaseName = /^lease\.(\d+)$/
const encoder = new TextEncoder()
let opened = 0

/** A lease this executor holds on a run's folder, until the scope it was taken in closes. */
export interface Held {
  /** The lease's number. */
  readonly number: number
  /** The names in the run's folder when the lease was taken (none in a folder just made: it holds nothing). */
  readonly names: ReadonlyArray<string>
  /** Whether the lease is still this executor's. */
  readonly held: Effect.Effect<boolean, unknown>
  /**
   * Gives the lease up without a word: no more renewals, and no release when the scope closes. For a holder about to
   * remove the run's folder, which an executor may make again at once, holding a lease of its own in it.
   */
  readonly disarm: () => void
}

/** The leases of the file store's run folders. */
export interface Leases {
  /**
   * Holds run `id`'s lease in folder `dir` until the scope closes; fails with `RunInProgress` when another
   * executor holds it. `make` makes the folder first (whether it made it, then empty: no one else can have taken its
   * lease), and again if it is removed (by a prune) while the lease is being taken.
   */
  readonly hold: (
    id: string,
    dir: string,
    make: Effect.Effect<boolean, CheckpointError>
  ) => Effect.Effect<Held, RunInProgress | CheckpointError, Scope.Scope>
  /** Holds run `id`'s lease in folder `dir` as `hold` does, if the folder is there: `undefined` once it is not. */
  readonly holdIfThere: (
    id: string,
    dir: string
  ) => Effect.Effect<Held | undefined, RunInProgress | CheckpointError, Scope.Scope>
  /** When the newest lease in folder `dir` lapsed, if it did (nobody holds it), and its number. */
  readonly lapsed: (dir: string) => Effect.Effect<{ readonly number: number; readonly at: number } | undefined, unknown>
}

/** The numbers of the lease files among `names`, lowest first. */
const leaseNumbers = (names: ReadonlyArray<string>) =>
  names.flatMap((name) => {
    const match = leaseName.exec(name)
    return match === null ? [] : [Number(match[1])]
  }).sort((a, b) => a - b)

/** Builds the leases over the `FileSystem` and `Path` in context: `lease` long, taken by `owner` (made unique per hold). */
export const make = (options: {
  readonly lease: Duration.Duration
  readonly owner: string
}): Effect.Effect<Leases, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const ttl = Duration.toMillis(options.lease)

    const readLease = (dir: string, number: number) =>
      Effect.flatMap(fs.readFileString(path.join(dir, `lease.${number}`)), decodeLease)

    /**
     * Takes run `id`'s lease as `owner`: the number of the lease taken, the expiry written in it, and the names
     * in the folder when it was taken (none in a folder just made: it holds nothing). `make` makes the folder, and
     * again when it is gone (a prune removed it); without it, a folder that is gone has no lease to take (`undefined`).
     */
    const acquire = (
      id: string,
      dir: string,
      owner: string,
      make: Effect.Effect<boolean, CheckpointError> | undefined
    ): Effect.Effect<
      { readonly number: number; readonly expiresAt: number; readonly names: ReadonlyArray<string> } | undefined,
      RunInProgress | CheckpointError
    > =>
      Effect.gen(function*() {
        let made = make === undefined ? false : yield* make
        for (let attempt = 0; attempt < 5; attempt++) {
          // Read before the lease's file: an expiry that passed by then had lapsed, however long the reading took
          // (judged by a time read after it, a file read before a renewal landed would pass for lapsed).
          const now = yield* Clock.currentTimeMillis
          const listed = made
            ? []
            : yield* Effect.catchIf(fs.readDirectory(dir), isReason("NotFound"), () => Effect.undefined)
          made = false
          if (listed === undefined) {
            if (make === undefined) return undefined
            made = yield* make
            continue
          }
          const names = listed
          const numbers = leaseNumbers(names)
          const top = numbers.at(-1) ?? 0
          if (top > 0) {
            const held = yield* Effect.result(readLease(dir, top))
            // Removed by a new owner cleaning up: look again.
            if (held._tag === "Failure" && isReason("NotFound")(held.failure)) continue
            // Lease files are not synced: one a power cut tore is lapsed (its holder died with the machine).
            if (held._tag === "Failure" && held.failure._tag !== "SchemaError") return yield* Effect.fail(held.failure)
            if (held._tag === "Success" && held.success.expiresAt > now) {
              return yield* new RunInProgress({ id, owner: held.success.owner, expiresAt: held.success.expiresAt })
            }
          }
          const expiresAt = now + ttl
          const taken = yield* Effect.result(
            Effect.flatMap(
              encodeLease({ owner, expiresAt }),
              (text) =>
                WholeFile.write(fs, path.join(dir, `lease.${top + 1}`), encoder.encode(text), {
                  place: "link",
                  sync: false
                })
            )
          )
          // Taken first, or the folder was removed since it was listed: look again.
          if (
            taken._tag === "Failure" &&
            (isReason("AlreadyExists")(taken.failure) || isReason("NotFound")(taken.failure))
          ) {
            continue
          }
          if (taken._tag === "Failure") return yield* Effect.fail(taken.failure)
          yield* Effect.forEach(
            numbers,
            (number) => Effect.ignore(fs.remove(path.join(dir, `lease.${number}`))),
            { discard: true }
          )
          return { number: top + 1, expiresAt, names }
        }
        return yield* Effect.fail(
          new Error("the lease changed hands, or the run's folder was removed, five times while it was being taken")
        )
      }).pipe(Effect.mapError((error) => error instanceof RunInProgress ? error : failed("open", id)(error)))

    /**
     * Whether lease `number`, taken by `owner`, was taken over: a newer lease exists (any newer number, not only the
     * next: whoever takes a lease removes the files of the ones before it, so after two takeovers the next number is
     * gone again), its own file is gone or names another owner (a run's folder removed by a prune and made again
     * numbers its leases from 1 again), or the folder is gone.
     */
    const superseded = (dir: string, number: number, owner: string) =>
      Effect.gen(function*() {
        const names = yield* fs.readDirectory(dir)
        if (leaseNumbers(names).some((newer) => newer > number) || !names.includes(`lease.${number}`)) return true
        return (yield* readLease(dir, number)).owner !== owner
      }).pipe(
        // Gone since the listing, or not whole: not this owner's file, which is only ever replaced whole.
        Effect.catchIf(
          (error) => isReason("NotFound")(error) || error._tag === "SchemaError",
          () => Effect.succeed(true)
        )
      )

    /**
     * Sets lease `number`'s expiry to `expiresAt` if `held` says it is still this owner's, looking once the new file
     * is written beside it (see `WholeFile.place`): it never lands in a folder made again after the look, nor makes
     * the file again once a new owner removed it. Whether it was set; the window learns of the expiry written.
     */
    const extend = (
      dir: string,
      number: number,
      owner: string,
      window: LeaseWindow.LeaseWindow<unknown>,
      held: Effect.Effect<boolean, unknown>,
      expiresAt: Effect.Effect<number>
    ) =>
      Effect.gen(function*() {
        const expiry = yield* expiresAt
        const text = yield* encodeLease({ owner, expiresAt: expiry })
        const file = path.join(dir, `lease.${number}`)
        if (!(yield* WholeFile.write(fs, file, encoder.encode(text), { place: "rename", sync: false, when: held }))) {
          return false
        }
        window.wrote(expiry, yield* Clock.currentTimeMillis)
        return true
      }).pipe(
        // The folder is gone, and the temporary file with it: a prune forgot the run since.
        Effect.catchIf(isReason("NotFound"), () => Effect.succeed(false))
      )

    const holdWith = (id: string, dir: string, make: Effect.Effect<boolean, CheckpointError> | undefined) =>
      Effect.gen(function*() {
        const owner = `${options.owner}#${++opened}.${Math.random().toString(36).slice(2, 8)}`
        const acquired = yield* acquire(id, dir, owner, make)
        if (acquired === undefined) return undefined
        const { expiresAt, names, number } = acquired
        const taken = superseded(dir, number, owner)
        // Clocks agree within a third of the lease: an append looks at the lease files only once it may have lapsed.
        const window = LeaseWindow.make({ expiresAt, margin: ttl / 3, superseded: taken })
        // A renewal and the release look every time, off the appends' path: a takeover the window did not foresee
        // (clocks that disagree by more than they should) ends at the next renewal, and its lease is never replaced.
        const own = Effect.map(taken, (taken) => !taken)
        const kept = yield* LeaseKeeper.keep({
          ttl: options.lease,
          renew: extend(dir, number, owner, window, own, Effect.map(Clock.currentTimeMillis, (now) => now + ttl)),
          // Released, the lease says when the execution ended (see `lapsed`).
          release: extend(dir, number, owner, window, own, Retention.releasedExpiry)
        })
        const held: Held = {
          number,
          names,
          held: Effect.suspend(() => kept.lost() ? Effect.succeed(false) : window.held),
          disarm: kept.disarm
        }
        return held
      })

    const lapsed = (dir: string) =>
      Effect.gen(function*() {
        // Read before the lease's file, as a taker does.
        const now = yield* Clock.currentTimeMillis
        const number = leaseNumbers(yield* fs.readDirectory(dir)).at(-1)
        if (number === undefined) return undefined
        const lease = yield* Effect.catchIf(readLease(dir, number), isReason("NotFound"), () => Effect.undefined)
        // Gone: a new owner is taking it.
        if (lease === undefined || lease.expiresAt > now) return undefined
        const at = Retention.endedAt(lease.expiresAt)
        if (at !== undefined) return { number, at }
        // Released by an earlier version, which wrote 0: its file was written then.
        const info = yield* Effect.catchIf(
          fs.stat(path.join(dir, `lease.${number}`)),
          isReason("NotFound"),
          () => Effect.undefined
        )
        return info?.mtime._tag === "Some" ? { number, at: info.mtime.value.getTime() } : undefined
      })

    const leases: Leases = {
      // Made when it is gone: it is never `undefined`.
      hold: (id, dir, make) => Effect.map(holdWith(id, dir, make), (held) => held!),
      holdIfThere: (id, dir) => holdWith(id, dir, undefined),
      lapsed
    }
    return leases
  })
