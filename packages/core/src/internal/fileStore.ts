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
 * - `lease.<n>` holds the lease's owner and expiry (see `fileLease`): only
 *   the holder of the newest lease writes the log, the mark, or the folder.
 *
 * The folder's names, listed as the lease is taken, say whether there is a
 * log to read and a mark to remove; a folder the executor has just made holds
 * nothing, and is not listed at all. A folder a prune removes while an
 * executor takes its lease is made again.
 *
 * `prune` forgets a finished run by renaming its folder aside (one step: the
 * run is there whole or gone) and then removing it, its lease disarmed first
 * (an executor may make the folder again at once: the prune's lease is not
 * released into it); a folder left aside by a crash is removed by the next
 * `prune`. Keeping only a run's result rewrites its log whole, as a new log is
 * created.
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
import { CheckpointMismatch } from "../CheckpointStore.ts"
import type { Log, OpenError, PruneOptions, Store } from "../CheckpointStore.ts"
import * as RunFingerprint from "../RunFingerprint.ts"
import * as RunId from "../RunId.ts"
import * as FileLease from "./fileLease.ts"
import * as GroupCommit from "./groupCommit.ts"
import * as LogFrame from "./logFrame.ts"
import * as LogOffset from "./logOffset.ts"
import { isReason } from "./platformReason.ts"
import * as Retention from "./retention.ts"
import { failed } from "./storeFailure.ts"
import * as WholeFile from "./wholeFile.ts"

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

const decodeFinished = Schema.decodeUnknownEffect(Retention.FinishedJson)
const encodeFinished = Schema.encodeEffect(Retention.FinishedJson)

const runFolder = /^[0-9a-f]{32}$/
const prunedFolder = /^[0-9a-f]{32}\.pruned-/

const encoder = new TextEncoder()

/** Why an append, or an open, did not write: its lease is another executor's now. */
const takenOver = () => new Error("its lease was taken over by another executor")

/** Entries as records of a log. */
const records = (entries: ReadonlyArray<string>) => entries.map((text) => ({ kind: "entry" as const, text }))

/** Builds the file store over the `FileSystem` and `Path` in context. */
export const make = (options: Options): Effect.Effect<Store, never, FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const leases = yield* FileLease.make({ lease: options.lease, owner: options.owner })

    const folder = (id: string) =>
      Effect.map(RunFingerprint.digest(id), (digest) => path.join(options.directory, digest.slice("sha256:".length)))

    /** Removes folder `aside`, set aside by a prune, and all it holds; another prune may be removing it too. */
    const removeAside = (aside: string) => fs.remove(aside, { recursive: true, force: true })

    /** Removes `file`, unless it is not there. */
    const removeIfThere = (file: string) => Effect.catchIf(fs.remove(file), isReason("NotFound"), () => Effect.void)

    /** Syncs a folder, so that a file renamed into it stays there after a power cut (where the platform can). */
    const syncFolder = (dir: string) =>
      options.sync
        ? Effect.ignore(Effect.scoped(Effect.flatMap(fs.open(dir, { flag: "r" }), (handle) => handle.sync)))
        : Effect.void

    /**
     * Creates the log of folder `dir` whole, of `head` and `entries`, in place of any log there, if `held` says the
     * folder's lease is still this executor's once the log is written: a temporary file written (and synced),
     * renamed into place (into the folder `held` looked at: see `WholeFile.place`), the folder synced. The file
     * stays open, in the scope, for appends; `undefined` when the lease was taken over.
     */
    const writeLog = (
      dir: string,
      head: string,
      entries: ReadonlyArray<string>,
      held: Effect.Effect<boolean, unknown>
    ) =>
      Effect.gen(function*() {
        const file = path.join(dir, "log")
        const temporary = WholeFile.temporaryFor(file)
        const written = Effect.gen(function*() {
          const handle = yield* fs.open(temporary, { flag: "ax" })
          yield* handle.writeAll(LogFrame.encode([{ kind: "head", text: head }, ...records(entries)]))
          if (options.sync) yield* handle.sync
          return handle
        })
        const handle = yield* WholeFile.place(fs, file, temporary, written, { place: "rename", when: held })
        if (handle === undefined) return undefined
        yield* syncFolder(dir)
        return handle
      })

    /**
     * Makes run folder `dir`: whether this call made it (then it is empty, and no one else has taken its lease). A
     * folder made is synced into the store's folder, as a log is into its run's: after a power cut, the run's
     * synced log is in a folder that is there.
     */
    const makeFolder = (dir: string) => {
      const make = Effect.catchIf(
        Effect.as(fs.makeDirectory(dir), true),
        isReason("AlreadyExists"),
        () => Effect.succeed(false)
      )
      // The store's own folder is made with its first run, and synced into its parent.
      const made = Effect.catchIf(
        make,
        isReason("NotFound"),
        () =>
          fs.makeDirectory(options.directory, { recursive: true }).pipe(
            Effect.andThen(syncFolder(path.dirname(options.directory))),
            Effect.andThen(make)
          )
      )
      return Effect.tap(made, (isNew) => isNew ? syncFolder(options.directory) : Effect.void)
    }

    /**
     * The records of the log at `file`, if there is one; fails when it is damaged or not run `id`'s. The first
     * `skip` entries may be left out (`skipped` says how many were: see `LogFrame.decode`).
     */
    const load = (id: string, file: string, skip = 0) =>
      Effect.gen(function*() {
        const bytes = yield* Effect.catchIf(
          fs.readFile(file),
          isReason("NotFound"),
          () => Effect.succeed(undefined)
        )
        if (bytes === undefined) return undefined
        const decoded = LogFrame.decode(bytes, skip)
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
          skipped: decoded.skipped,
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
        const lease = yield* leases.hold(id, dir, makeFolder(dir).pipe(Effect.mapError(failed("open", id))))
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
        }
        // The log's appends go to `handle`, open in a scope closed after the last sync below (a compaction
        // replaces the file, and opens the new one in the same scope).
        const files = yield* Scope.fork(yield* Effect.scope)
        const opening = Effect.gen(function*() {
          if (log === undefined) return yield* writeLog(dir, head, [], lease.held)
          const handle = yield* fs.open(file, { flag: "a" })
          // A torn last record is cut off through the file opened before the look: the folder's own log.
          if (log.torn === undefined) return handle
          return (yield* lease.held) ? yield* Effect.as(handle.truncate(log.torn), handle) : undefined
        })
        const opened = yield* Scope.provide(files)(opening).pipe(Effect.mapError(failed("open", id)))
        if (opened === undefined) return yield* Effect.fail(failed("open", id)(takenOver()))
        let handle = opened
        const marker = path.join(dir, "finished")
        let marked = lease.names.includes("finished")
        // Entries appended with `durable: false` since the last sync: synced with the next durable append, or here.
        let unsynced = false
        yield* Effect.addFinalizer(() => options.sync && unsynced ? Effect.ignore(handle.sync) : Effect.void)
        const append = GroupCommit.make((entries: ReadonlyArray<string>, group) =>
          Effect.gen(function*() {
            if (!(yield* lease.held)) return yield* Effect.fail(takenOver())
            // A run that goes on is no longer finished: unmarked before anything is written.
            if (marked && group.finished === undefined) yield* removeIfThere(marker)
            marked = false
            if (group.compact) {
              // A new log, whole and synced, renamed over the old one: a crash leaves one or the other.
              const written = yield* Scope.provide(files)(writeLog(dir, head, entries, lease.held))
              if (written === undefined) return yield* Effect.fail(takenOver())
              handle = written
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
              const placed = yield* WholeFile.write(fs, marker, encoder.encode(text), {
                place: "rename",
                sync: options.sync,
                when: lease.held
              })
              if (!placed) return yield* Effect.fail(takenOver())
              marked = true
            }
          }).pipe(Effect.mapError(failed("append", id)))
        )
        return { entries: log?.entries ?? [], append }
      })

    /** Run `id`'s entries from entry `from` on: the log is one file, read whole, the entries before `from` passed over. */
    const readEntries = (id: string, from: number) =>
      Effect.gen(function*() {
        yield* RunId.validate(id)
        const file = path.join(yield* folder(id), "log")
        const log = yield* load(id, file, from).pipe(Effect.mapError(failed("read", id)))
        return log === undefined ? [] : log.entries.slice(from - log.skipped)
      })

    const read = (id: string) => readEntries(id, 0)

    const readFrom = (id: string, from: number) => Effect.andThen(LogOffset.check(from), readEntries(id, from))

    const clear = (id: string) =>
      Effect.scoped(Effect.gen(function*() {
        yield* RunId.validate(id)
        const dir = yield* folder(id)
        if ((yield* leases.holdIfThere(id, dir)) === undefined) return
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

    /** Run `id`'s lease in folder `dir`, for a prune: `undefined` when another executor holds it, or the folder is gone. */
    const leaseToPrune = (id: string, dir: string) =>
      Effect.catchTag(leases.holdIfThere(id, dir), "RunInProgress", () => Effect.undefined)

    /**
     * Removes run folder `dir`, under `lease`, unless the lease was taken over: renamed aside in one step (after a
     * crash the run is there whole or gone; a folder left aside is removed by the next `prune`), then removed. The
     * lease is disarmed first: an executor may make the folder again at once, and take a lease of its own in it,
     * which this one's renewal or release must not touch. Whether it was removed.
     */
    const forget = (dir: string, lease: FileLease.Held) =>
      Effect.gen(function*() {
        if (!(yield* lease.held)) return false
        lease.disarm()
        const aside = `${dir}.pruned-${Math.random().toString(36).slice(2)}`
        yield* fs.rename(dir, aside)
        yield* removeAside(aside)
        return true
      })

    /** Prunes the finished run `seen` in folder `dir` if it finished before `before` and nobody holds it: its id if it did. */
    const pruneFinished = (
      dir: string,
      seen: typeof Retention.FinishedJson.Type,
      before: number,
      keep: Retention.Cutoff["keep"]
    ) =>
      Effect.scoped(Effect.gen(function*() {
        if (seen.finishedAt >= before) return undefined
        const lease = yield* leaseToPrune(seen.id, dir)
        if (lease === undefined) return undefined
        // Read again under the lease: the run may have gone on, or finished again, since.
        const record = yield* readFinished(dir)
        if (record === undefined || record.finishedAt >= before) return undefined
        if (keep === "nothing") return (yield* forget(dir, lease)) ? record.id : undefined
        const file = path.join(dir, "log")
        const log = yield* load(record.id, file)
        if (log === undefined || log.entries.length <= record.result) return undefined
        const head = yield* encodeHead({ version: 1, id: record.id, fingerprint: log.fingerprint })
        const written = yield* writeLog(dir, head, log.entries.slice(log.entries.length - record.result), lease.held)
        return written === undefined ? undefined : record.id
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

    /**
     * Forgets the run in folder `dir` if it did not finish, is not a thread's, and its last execution ended before
     * `before`: its id if it did. A folder without a log is removed (not counted) on the same terms.
     */
    const pruneUnfinished = (dir: string, before: number) =>
      Effect.scoped(Effect.gen(function*() {
        const ended = yield* leases.lapsed(dir)
        if (ended === undefined || ended.at >= before) return undefined
        const file = path.join(dir, "log")
        const id = yield* readId(file)
        if (id !== undefined && !Retention.isRun(id)) return undefined
        const lease = yield* leaseToPrune(id ?? dir, dir)
        // Another lease taken since it looked: the run was executed again, and ended later.
        if (lease === undefined || lease.number !== ended.number + 1) return undefined
        if (yield* fs.exists(path.join(dir, "finished"))) return undefined
        if (id === undefined) {
          if (!(yield* fs.exists(file))) yield* forget(dir, lease)
          return undefined
        }
        if (!(yield* lease.held)) return undefined
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
            yield* removeAside(dir).pipe(Effect.mapError(failed("prune", dir)))
          } else if (runFolder.test(name)) {
            const id = yield* pruneRun(dir, cutoff).pipe(
              // Gone as it was looked at: another prune (another process's) forgot the run.
              Effect.catchIf(isReason("NotFound"), () => Effect.undefined),
              Effect.mapError(failed("prune", dir))
            )
            if (id !== undefined) runs.push(id)
          }
        }
        return { runs }
      })

    const store: Store = { open, read, readFrom, clear, prune }
    return store
  })
