/**
 * The file store: a folder per run, named after a digest of the run id, with
 * the run's log and its lease.
 *
 * - `log` is append-only: a head record (the run id and its fingerprint), then
 *   one framed record per entry (see `logFrame`). A log is created whole (a
 *   temporary file, synced, renamed into place, the file kept open for the
 *   appends) and then only appended to: each group of appends is one write
 *   and one sync. Nothing is ever rewritten in place, so a crash at any point
 *   leaves every acknowledged entry intact and at most a torn last record,
 *   which the next writer cuts off. A compacting append (or a prune that
 *   keeps a run's result) creates a new log whole the same way, renamed over
 *   the old one.
 * - `finished`, once the run finished: when, and how many of the log's last
 *   entries are its result (see `retention`). It is written whole after the
 *   finishing append is synced, and removed before an append that goes on
 *   after it, so it never marks a run that is not finished.
 * - `lease.<n>` holds the lease's owner and expiry. A new lease is the next
 *   number, created whole by a hard link that fails when the number exists, so
 *   of two executors taking a lapsed lease at once exactly one wins. Its owner
 *   renews it by replacing the file (a temporary file renamed over it); a
 *   lease is lost once a higher number exists. Its holder looks for one only
 *   once its lease may have lapsed (see `leaseWindow`): before that, no one
 *   else can have taken it. Lease files are not synced: a power cut stops
 *   every executor of the machine, and a lease file it tore reads as lapsed.
 *
 * The folder's names, listed as the lease is taken, say whether there is a
 * log to read and a mark to remove; a folder the executor has just made holds
 * nothing, and is not listed at all.
 *
 * `prune` forgets a finished run by renaming its folder aside (one step: the
 * run is there whole or gone) and then removing it; a folder left aside by a
 * crash is removed by the next `prune`. Keeping only a run's result rewrites
 * its log whole, as a new log is created.
 *
 * A released lease records when it was released (its expiry is set to minus
 * that time: lapsed by every clock), and one whose holder died lapses at its
 * last renewal plus the lease's duration, so the newest lease of a run nobody
 * holds says when its last execution ended (one released by an earlier
 * version, which wrote 0, by its file's modification time). `prune` forgets
 * a run that did not finish, and whose last execution ended before its
 * cutoff, by taking the next lease (only if no other was taken since it
 * looked) and removing the log (one step); the folder keeps that lease, so a
 * writer that stalled past its own finds it taken at its next append. Such a
 * folder without a log (a run forgotten this way, or cleared) is removed once
 * its lease is as old as the cutoff.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Path from "effect/Path"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { CheckpointError, CheckpointMismatch, RunInProgress } from "../CheckpointStore.ts"
import type { Log, OpenError, PruneOptions, Store } from "../CheckpointStore.ts"
import * as RunFingerprint from "../RunFingerprint.ts"
import * as RunId from "../RunId.ts"
import * as GroupCommit from "./groupCommit.ts"
import * as LeaseKeeper from "./leaseKeeper.ts"
import * as LeaseWindow from "./leaseWindow.ts"
import * as LogFrame from "./logFrame.ts"
import * as Retention from "./retention.ts"
import { failed } from "./storeFailure.ts"

/** How the file store is set up. */
export interface Options {
  readonly directory: string
  readonly lease: Duration.Duration
  /** Who takes leases: a name for people (a host and process), made unique per open. */
  readonly owner: string
  /** Whether each append is synced to disk before it succeeds. */
  readonly sync: boolean
}

const Head = Schema.fromJsonString(Schema.Struct({
  version: Schema.Literal(1),
  id: Schema.String,
  fingerprint: RunFingerprint.Fingerprint
}))
const decodeHead = Schema.decodeUnknownEffect(Head)
const encodeHead = Schema.encodeEffect(Head)

const Lease = Schema.fromJsonString(Schema.Struct({ owner: Schema.String, expiresAt: Schema.Number }))
const decodeLease = Schema.decodeUnknownEffect(Lease)
const encodeLease = Schema.encodeEffect(Lease)

const decodeFinished = Schema.decodeUnknownEffect(Retention.FinishedJson)
const encodeFinished = Schema.encodeEffect(Retention.FinishedJson)

const leaseName = /^lease\.(\d+)$/
const runFolder = /^[0-9a-f]{32}$/
const prunedFolder = /^[0-9a-f]{32}\.pruned-/

const isReason = (reason: string) => (error: unknown): boolean =>
  typeof error === "object" && error !== null && "reason" in error && typeof error.reason === "object" &&
  error.reason !== null && "_tag" in error.reason && error.reason._tag === reason

const encoder = new TextEncoder()
let opened = 0

/** Entries as records of a log. */
const records = (entries: ReadonlyArray<string>) => entries.map((text) => ({ kind: "entry" as const, text }))

/** Builds the file store over the `FileSystem` and `Path` in context. */
export const make = (options: Options): Effect.Effect<Store, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const ttl = Duration.toMillis(options.lease)

    const folder = (id: string) =>
      Effect.map(RunFingerprint.digest(id), (digest) => path.join(options.directory, digest.slice("sha256:".length)))

    /** A name for a temporary file beside `file`, to be renamed or linked into its place. */
    const temporaryFor = (file: string) => `${file}.tmp-${Math.random().toString(36).slice(2)}`

    /** Writes `bytes` to `file` whole: a temporary file beside it (synced if `sync`), renamed or linked into place. */
    const writeWhole = (file: string, bytes: Uint8Array, place: "rename" | "link", sync: boolean) =>
      Effect.gen(function*() {
        const temporary = temporaryFor(file)
        yield* Effect.scoped(Effect.gen(function*() {
          const handle = yield* fs.open(temporary, { flag: "wx" })
          yield* handle.writeAll(bytes)
          if (sync) yield* handle.sync
        }))
        if (place === "rename") return yield* fs.rename(temporary, file)
        yield* fs.link(temporary, file).pipe(Effect.ensuring(Effect.ignore(fs.remove(temporary))))
      })

    /** Removes `file`, unless it is not there. */
    const removeIfThere = (file: string) => Effect.catchIf(fs.remove(file), isReason("NotFound"), () => Effect.void)

    /** Syncs a folder, so that a file renamed into it stays there after a power cut (where the platform can). */
    const syncFolder = (dir: string) =>
      options.sync
        ? Effect.ignore(Effect.scoped(Effect.flatMap(fs.open(dir, { flag: "r" }), (handle) => handle.sync)))
        : Effect.void

    /**
     * Creates the log of folder `dir` whole, of `head` and `entries`, in place of any log there: a temporary file
     * written (and synced), renamed into place, the folder synced. The file stays open, in the scope, for appends.
     */
    const writeLog = (dir: string, head: string, entries: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const file = path.join(dir, "log")
        const temporary = temporaryFor(file)
        const handle = yield* fs.open(temporary, { flag: "ax" })
        yield* handle.writeAll(LogFrame.encode([{ kind: "head", text: head }, ...records(entries)]))
        if (options.sync) yield* handle.sync
        yield* fs.rename(temporary, file)
        yield* syncFolder(dir)
        return handle
      })

    /** Makes folder `dir`: whether this call made it (then it is empty, and no one else has taken its lease). */
    const makeFolder = (dir: string) => {
      const make = Effect.catchIf(
        Effect.as(fs.makeDirectory(dir), true),
        isReason("AlreadyExists"),
        () => Effect.succeed(false)
      )
      // The store's own folder is made with its first run.
      return Effect.catchIf(
        make,
        isReason("NotFound"),
        () => Effect.andThen(fs.makeDirectory(options.directory, { recursive: true }), make)
      )
    }

    /** The numbers of the lease files among `names`, lowest first. */
    const leaseNumbers = (names: ReadonlyArray<string>) =>
      names.flatMap((name) => {
        const match = leaseName.exec(name)
        return match === null ? [] : [Number(match[1])]
      }).sort((a, b) => a - b)

    const readLease = (dir: string, number: number) =>
      Effect.flatMap(fs.readFileString(path.join(dir, `lease.${number}`)), decodeLease)

    /**
     * Takes run `id`'s lease as `owner`: the number of the lease taken, the expiry written in it, and the names
     * in the folder when it was taken (none when `made`: the folder was just made, and holds nothing).
     */
    const acquire = (
      id: string,
      dir: string,
      owner: string,
      made: boolean
    ): Effect.Effect<
      { readonly number: number; readonly expiresAt: number; readonly names: ReadonlyArray<string> },
      RunInProgress | CheckpointError
    > =>
      Effect.gen(function*() {
        for (let attempt = 0; attempt < 5; attempt++) {
          const names = made && attempt === 0 ? [] : yield* fs.readDirectory(dir)
          const numbers = leaseNumbers(names)
          const top = numbers.at(-1) ?? 0
          if (top > 0) {
            const held = yield* Effect.result(readLease(dir, top))
            // Removed by a new owner cleaning up: look again.
            if (held._tag === "Failure" && isReason("NotFound")(held.failure)) continue
            // Lease files are not synced: one a power cut tore is lapsed (its holder died with the machine).
            if (held._tag === "Failure" && held.failure._tag !== "SchemaError") return yield* Effect.fail(held.failure)
            const now = yield* Clock.currentTimeMillis
            if (held._tag === "Success" && held.success.expiresAt > now) {
              return yield* new RunInProgress({ id, owner: held.success.owner, expiresAt: held.success.expiresAt })
            }
          }
          const expiresAt = (yield* Clock.currentTimeMillis) + ttl
          const taken = yield* Effect.result(
            Effect.flatMap(
              encodeLease({ owner, expiresAt }),
              (text) => writeWhole(path.join(dir, `lease.${top + 1}`), encoder.encode(text), "link", false)
            )
          )
          if (taken._tag === "Failure" && isReason("AlreadyExists")(taken.failure)) continue
          if (taken._tag === "Failure") return yield* Effect.fail(taken.failure)
          yield* Effect.forEach(
            numbers,
            (number) => Effect.ignore(fs.remove(path.join(dir, `lease.${number}`))),
            { discard: true }
          )
          return { number: top + 1, expiresAt, names }
        }
        return yield* Effect.fail(new Error("the lease changed hands five times while it was being taken"))
      }).pipe(Effect.mapError((error) => error instanceof RunInProgress ? error : failed("open", id)(error)))

    /**
     * Whether a lease newer than `number` exists (or the run's folder is gone): then it was taken over. Any newer
     * number, not only the next: whoever takes a lease removes the files of the ones before it, so after two
     * takeovers the next number is gone again.
     */
    const superseded = (dir: string, number: number) =>
      Effect.catchIf(
        Effect.map(fs.readDirectory(dir), (names) => leaseNumbers(names).some((newer) => newer > number)),
        isReason("NotFound"),
        () => Effect.succeed(true)
      )

    /** Sets lease `number`'s expiry, unless it was taken over: whether it is still held. */
    const extend = (
      dir: string,
      number: number,
      owner: string,
      window: LeaseWindow.LeaseWindow<unknown>,
      expiresAt: Effect.Effect<number>
    ) =>
      Effect.gen(function*() {
        if (!(yield* window.held)) return false
        const expiry = yield* expiresAt
        const text = yield* encodeLease({ owner, expiresAt: expiry })
        yield* writeWhole(path.join(dir, `lease.${number}`), encoder.encode(text), "rename", false)
        window.wrote(expiry, yield* Clock.currentTimeMillis)
        return true
      })

    /**
     * Holds run `id`'s lease until the scope closes; fails with `RunInProgress` when another executor holds it.
     * `made`: this executor just made the folder (see `acquire`).
     */
    const hold = (id: string, dir: string, made = false) =>
      Effect.gen(function*() {
        const owner = `${options.owner}#${++opened}.${Math.random().toString(36).slice(2, 8)}`
        const { expiresAt, names, number } = yield* acquire(id, dir, owner, made)
        // Clocks agree within a third of the lease: the lease files are looked at only once it may have lapsed.
        const window = LeaseWindow.make({ expiresAt, margin: ttl / 3, superseded: superseded(dir, number) })
        const kept = yield* LeaseKeeper.keep({
          ttl: options.lease,
          renew: extend(dir, number, owner, window, Effect.map(Clock.currentTimeMillis, (now) => now + ttl)),
          // Released, the lease says when the execution ended (see `prune`).
          release: extend(dir, number, owner, window, Retention.releasedExpiry)
        })
        return { number, kept, window, names }
      })

    /** The records of the log at `file`, if there is one; fails when it is damaged or not run `id`'s. */
    const load = (id: string, file: string) =>
      Effect.gen(function*() {
        const bytes = yield* Effect.catchIf(
          fs.readFile(file),
          isReason("NotFound"),
          () => Effect.succeed(undefined)
        )
        if (bytes === undefined) return undefined
        const decoded = LogFrame.decode(bytes)
        if ("corrupt" in decoded) return yield* Effect.fail(new Error(`its log is damaged: ${decoded.corrupt}`))
        const [head, ...entries] = decoded.records
        if (head?.kind !== "head") {
          return yield* Effect.fail(
            new Error(`its log (${bytes.length} bytes) has no head: the file was truncated or is not a log`)
          )
        }
        const recorded = yield* decodeHead(head.text)
        if (recorded.id !== id) {
          return yield* Effect.fail(new Error(`its log file belongs to run "${recorded.id}" (a digest collision)`))
        }
        return {
          fingerprint: recorded.fingerprint,
          entries: entries.map((entry) => entry.text),
          torn: decoded.length < bytes.length ? decoded.length : undefined
        }
      })

    const open = (
      id: string,
      fingerprint: RunFingerprint.Fingerprint
    ): Effect.Effect<Log, OpenError, Scope.Scope> =>
      Effect.gen(function*() {
        yield* RunId.validate(id)
        const dir = yield* folder(id)
        const made = yield* makeFolder(dir).pipe(Effect.mapError(failed("open", id)))
        const lease = yield* hold(id, dir, made)
        const file = path.join(dir, "log")
        // What the folder held when the lease was taken: only the lease's holder writes the log and the mark.
        const log = lease.names.includes("log")
          ? yield* load(id, file).pipe(Effect.mapError(failed("open", id)))
          : undefined
        // The head of a new log, and of the log a compaction writes.
        const head = yield* encodeHead({ version: 1, id, fingerprint: log?.fingerprint ?? fingerprint }).pipe(
          Effect.mapError(failed("open", id))
        )
        if (log !== undefined) {
          const differences = RunFingerprint.differences(log.fingerprint, fingerprint)
          if (differences.length > 0) return yield* new CheckpointMismatch({ id, differences })
          if (log.torn !== undefined) yield* fs.truncate(file, log.torn).pipe(Effect.mapError(failed("open", id)))
        }
        // The log's appends go to `handle`, open in a scope closed after the last sync below (a compaction
        // replaces the file, and opens the new one in the same scope).
        const files = yield* Scope.fork(yield* Effect.scope)
        const opening = log === undefined ? writeLog(dir, head, []) : fs.open(file, { flag: "a" })
        let handle = yield* Scope.provide(files)(opening).pipe(Effect.mapError(failed("open", id)))
        const marker = path.join(dir, "finished")
        let marked = lease.names.includes("finished")
        // Entries appended with `durable: false` since the last sync: synced with the next durable append, or here.
        let unsynced = false
        yield* Effect.addFinalizer(() => options.sync && unsynced ? Effect.ignore(handle.sync) : Effect.void)
        const append = GroupCommit.make((entries: ReadonlyArray<string>, group) =>
          Effect.gen(function*() {
            if (lease.kept.lost() || !(yield* lease.window.held)) {
              return yield* Effect.fail(new Error("its lease was taken over by another executor"))
            }
            // A run that goes on is no longer finished: unmarked before anything is written.
            if (marked && group.finished === undefined) yield* removeIfThere(marker)
            marked = false
            if (group.compact) {
              // A new log, whole and synced, renamed over the old one: a crash leaves one or the other.
              handle = yield* Scope.provide(files)(writeLog(dir, head, entries))
              unsynced = false
            } else {
              yield* handle.writeAll(LogFrame.encode(records(entries)))
              // The result is on the disk before the mark that points at it.
              const durable = group.durable || group.finished !== undefined
              unsynced = !durable
              if (options.sync && durable) yield* handle.sync
            }
            if (group.finished !== undefined) {
              const finishedAt = yield* Clock.currentTimeMillis
              const text = yield* encodeFinished({ id, finishedAt, result: group.finished })
              yield* writeWhole(marker, encoder.encode(text), "rename", options.sync)
              marked = true
            }
          }).pipe(Effect.mapError(failed("append", id)))
        )
        return { entries: log?.entries ?? [], append }
      })

    const read = (id: string) =>
      Effect.gen(function*() {
        yield* RunId.validate(id)
        const log = yield* load(id, path.join(yield* folder(id), "log")).pipe(Effect.mapError(failed("read", id)))
        return log?.entries ?? []
      })

    const clear = (id: string) =>
      Effect.scoped(Effect.gen(function*() {
        yield* RunId.validate(id)
        const dir = yield* folder(id)
        if (!(yield* fs.exists(dir).pipe(Effect.mapError(failed("clear", id))))) return
        yield* hold(id, dir)
        yield* removeIfThere(path.join(dir, "finished")).pipe(
          Effect.andThen(removeIfThere(path.join(dir, "log"))),
          Effect.mapError(failed("clear", id))
        )
      }))

    /** The finished mark of the run in folder `dir`, if it has one. */
    const readFinished = (dir: string) =>
      Effect.catchIf(
        Effect.flatMap(fs.readFileString(path.join(dir, "finished")), decodeFinished),
        isReason("NotFound"),
        () => Effect.undefined
      )

    /** Prunes the finished run `seen` in folder `dir` if it finished before `before` and nobody holds it: its id if it did. */
    const pruneFinished = (
      dir: string,
      seen: typeof Retention.FinishedJson.Type,
      before: number,
      keep: Retention.Cutoff["keep"]
    ) =>
      Effect.scoped(Effect.gen(function*() {
        if (seen.finishedAt >= before) return undefined
        const taken = yield* Effect.result(hold(seen.id, dir))
        if (taken._tag === "Failure") {
          return taken.failure._tag === "RunInProgress" ? undefined : yield* Effect.fail(taken.failure)
        }
        // Read again under the lease: the run may have gone on, or finished again, since.
        const record = yield* readFinished(dir)
        if (record === undefined || record.finishedAt >= before) return undefined
        if (keep === "nothing") {
          const aside = `${dir}.pruned-${Math.random().toString(36).slice(2)}`
          yield* fs.rename(dir, aside)
          yield* fs.remove(aside, { recursive: true })
          return record.id
        }
        const file = path.join(dir, "log")
        const log = yield* load(record.id, file)
        if (log === undefined || log.entries.length <= record.result) return undefined
        const head = yield* encodeHead({ version: 1, id: record.id, fingerprint: log.fingerprint })
        yield* writeLog(dir, head, log.entries.slice(log.entries.length - record.result))
        return record.id
      }))

    /** The id in the head of the log at `file` (read alone, not the entries), if there is a log. */
    const readId = (file: string) =>
      Effect.scoped(Effect.gen(function*() {
        const handle = yield* Effect.catchIf(
          fs.open(file, { flag: "r" }),
          isReason("NotFound"),
          () => Effect.undefined
        )
        if (handle === undefined) return undefined
        const size = Number((yield* handle.stat).size)
        const header = yield* handle.readAlloc(LogFrame.headerLength, { position: 0n })
        // A length that runs past the end is damage: the head is written whole, with the log.
        const length = header._tag === "Some" && header.value.length === LogFrame.headerLength
          ? LogFrame.recordLength(header.value)
          : size + 1
        const bytes = length > size ? undefined : yield* handle.readAlloc(length, { position: 0n })
        const decoded = bytes?._tag === "Some" ? LogFrame.decode(bytes.value) : undefined
        const head = decoded !== undefined && "records" in decoded ? decoded.records[0] : undefined
        if (head?.kind !== "head") {
          return yield* Effect.fail(new Error("its log has no whole head: the file is damaged or is not a log"))
        }
        return (yield* decodeHead(head.text)).id
      }))

    /** When the newest lease in folder `dir` lapsed, if it did (nobody holds it), and its number. */
    const lapsed = (dir: string) =>
      Effect.gen(function*() {
        const number = leaseNumbers(yield* fs.readDirectory(dir)).at(-1)
        if (number === undefined) return undefined
        const lease = yield* Effect.catchIf(readLease(dir, number), isReason("NotFound"), () => Effect.undefined)
        // Gone: a new owner is taking it.
        if (lease === undefined || lease.expiresAt > (yield* Clock.currentTimeMillis)) return undefined
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

    /**
     * Forgets the run in folder `dir` if it did not finish, is not a thread's, and its last execution ended before
     * `before`: its id if it did. A folder without a log is removed (not counted) on the same terms.
     */
    const pruneUnfinished = (dir: string, before: number) =>
      Effect.scoped(Effect.gen(function*() {
        const ended = yield* lapsed(dir)
        if (ended === undefined || ended.at >= before) return undefined
        const file = path.join(dir, "log")
        const id = yield* readId(file)
        if (id !== undefined && !Retention.isRun(id)) return undefined
        const taken = yield* Effect.result(hold(id ?? dir, dir))
        if (taken._tag === "Failure") {
          return taken.failure._tag === "RunInProgress" ? undefined : yield* Effect.fail(taken.failure)
        }
        // Another lease taken since it looked: the run was executed again, and ended later.
        if (taken.success.number !== ended.number + 1) return undefined
        if (yield* fs.exists(path.join(dir, "finished"))) return undefined
        if (id === undefined) {
          if (yield* fs.exists(file)) return undefined
          const aside = `${dir}.pruned-${Math.random().toString(36).slice(2)}`
          yield* fs.rename(dir, aside)
          yield* fs.remove(aside, { recursive: true })
          return undefined
        }
        yield* fs.remove(file)
        yield* syncFolder(dir)
        return id
      }))

    /** Prunes the run in folder `dir` if the cutoff takes it and nobody holds it: its id if it did. */
    const pruneRun = (dir: string, cutoff: Retention.Cutoff) =>
      Effect.flatMap(readFinished(dir), (seen) =>
        seen !== undefined
          ? cutoff.finished === undefined ? Effect.undefined : pruneFinished(dir, seen, cutoff.finished, cutoff.keep)
          : cutoff.unfinished === undefined
          ? Effect.undefined
          : pruneUnfinished(dir, cutoff.unfinished))

    const prune = (given: PruneOptions) =>
      Effect.gen(function*() {
        const cutoff = yield* Retention.cutoff(given)
        const names = yield* fs.readDirectory(options.directory).pipe(
          Effect.catchIf(isReason("NotFound"), () => Effect.succeed([])),
          Effect.mapError(failed("prune", options.directory))
        )
        const runs: Array<string> = []
        for (const name of names) {
          const dir = path.join(options.directory, name)
          if (prunedFolder.test(name)) {
            // Set aside by a prune that crashed before removing it.
            yield* fs.remove(dir, { recursive: true }).pipe(Effect.mapError(failed("prune", dir)))
          } else if (runFolder.test(name)) {
            const id = yield* pruneRun(dir, cutoff).pipe(Effect.mapError(failed("prune", dir)))
            if (id !== undefined) runs.push(id)
          }
        }
        return { runs }
      })

    const store: Store = { open, read, clear, prune }
    return store
  })
