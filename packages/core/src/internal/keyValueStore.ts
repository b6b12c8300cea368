/**
 * The store over a `KeyValueStore`: entry `i` of run `id` under
 * `<prefix><id>/<i>`, the log's length under `<prefix><id>/length` (written
 * after the entries), its fingerprint under `<prefix><id>/fingerprint`, and,
 * once it finished, when and with how many result entries under
 * `<prefix><id>/finished` (which `prune` looks for among the store's keys),
 * and, once an execution ended, when under `<prefix><id>/ended` (removed when
 * the next one starts: a run without it that nobody holds was cut off with
 * its process, or written by an earlier version, and the first `prune` that
 * looks dates it now).
 *
 * A key-value store has no lock and no atomic append, so the lease is held in
 * this process only (two fibers executing one run get `RunInProgress`; two
 * processes are not kept apart), and a store that rewrites a key in place can
 * lose the length when the process dies mid-write (and a compacting append,
 * which rewrites the first entries, can mix two logs). It suits memory, and
 * stores a single process owns.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { KeyValueStore } from "effect/persistence"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { CheckpointMismatch, RunInProgress } from "../CheckpointStore.ts"
import type { Log, OpenError, PruneOptions, Store } from "../CheckpointStore.ts"
import * as RunFingerprint from "../RunFingerprint.ts"
import * as RunId from "../RunId.ts"
import * as GroupCommit from "./groupCommit.ts"
import * as LogOffset from "./logOffset.ts"
import * as Retention from "./retention.ts"
import { failed } from "./storeFailure.ts"

const Length = Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))
const Time = Schema.NumberFromString.check(Schema.isInt())
const FingerprintJson = Schema.fromJsonString(RunFingerprint.Fingerprint)

let opened = 0

/** The run id a key names (see `key`), if it is one this store wrote. */
const runOf = (encoded: string): string | undefined => {
  try {
    return decodeURIComponent(encoded)
  } catch {
    return undefined
  }
}

/** Builds the store over the `KeyValueStore` in context. */
export const make = (prefix: string): Effect.Effect<Store, never, KeyValueStore.KeyValueStore> =>
  Effect.gen(function*() {
    const store = yield* KeyValueStore.KeyValueStore
    const key = (id: string, suffix: string) => `${prefix}${encodeURIComponent(id)}/${suffix}`
    const held = new Map<string, string>()
    const finishedSuffix = "/finished"
    const fingerprintSuffix = "/fingerprint"

    /** When run `id`'s last execution ended, if that is known (see the module's documentation). */
    const ended = (id: string) =>
      Effect.flatMap(
        store.get(key(id, "ended")),
        (text) => text === undefined ? Effect.undefined : Schema.decodeUnknownEffect(Time)(text)
      )

    /** Records that run `id`'s last execution ended now. */
    const endNow = (id: string) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => store.set(key(id, "ended"), String(now)))

    const finished = (id: string) =>
      Effect.flatMap(
        store.get(key(id, "finished")),
        (text) => text === undefined ? Effect.undefined : Schema.decodeUnknownEffect(Retention.FinishedJson)(text)
      )

    const length = (id: string) =>
      Effect.flatMap(
        store.get(key(id, "length")),
        (text) => text === undefined ? Effect.succeed(0) : Schema.decodeUnknownEffect(Length)(text)
      )

    /** Run `id`'s entries from entry `from` on. */
    const entries = (id: string, from = 0) =>
      Effect.flatMap(
        length(id),
        (count) =>
          Effect.forEach(Array.from({ length: Math.max(0, count - from) }, (_, i) => from + i), (i) =>
            Effect.flatMap(store.get(key(id, String(i))), (entry) =>
              entry === undefined
                ? Effect.fail(new Error(`entry ${i} of ${count} is missing`))
                : Effect.succeed(entry)))
      )

    /** Makes run `id`'s log, of `count` entries, `kept` alone: written from the first position, the rest removed. */
    const rewrite = (id: string, kept: ReadonlyArray<string>, count: number) =>
      Effect.gen(function*() {
        yield* Effect.forEach(kept, (entry, i) => store.set(key(id, String(i)), entry), { discard: true })
        yield* store.set(key(id, "length"), String(kept.length))
        yield* Effect.forEach(
          Array.from({ length: Math.max(0, count - kept.length) }, (_, i) => kept.length + i),
          (i) => store.remove(key(id, String(i))),
          { discard: true }
        )
      })

    /** Holds run `id` in this process until the scope closes. */
    const hold = (id: string) =>
      Effect.acquireRelease(
        Effect.suspend(() => {
          const owner = held.get(id)
          if (owner !== undefined) return Effect.fail(new RunInProgress({ id, owner, expiresAt: null }))
          const mine = `this process#${++opened}`
          held.set(id, mine)
          return Effect.succeed(mine)
        }),
        (mine) => Effect.sync(() => held.get(id) === mine && held.delete(id))
      )

    const open = (
      id: string,
      fingerprint: RunFingerprint.Fingerprint
    ): Effect.Effect<Log, OpenError, Scope.Scope> =>
      Effect.gen(function*() {
        yield* RunId.validate(id)
        yield* hold(id)
        // While it executes, its end is not known; it is once the scope closes (before the run is let go).
        yield* store.remove(key(id, "ended")).pipe(Effect.mapError(failed("open", id)))
        yield* Effect.addFinalizer(() => Effect.ignore(endNow(id)))
        const text = yield* store.get(key(id, "fingerprint")).pipe(Effect.mapError(failed("open", id)))
        if (text === undefined) {
          yield* Effect.flatMap(
            Schema.encodeEffect(FingerprintJson)(fingerprint),
            (encoded) => store.set(key(id, "fingerprint"), encoded)
          ).pipe(Effect.mapError(failed("open", id)))
        } else {
          const recorded = yield* Schema.decodeUnknownEffect(FingerprintJson)(text).pipe(
            Effect.mapError(failed("open", id))
          )
          const differences = RunFingerprint.differences(recorded, fingerprint)
          if (differences.length > 0) return yield* new CheckpointMismatch({ id, differences })
        }
        const before = yield* entries(id).pipe(Effect.mapError(failed("open", id)))
        let count = before.length
        let marked = (yield* finished(id).pipe(Effect.mapError(failed("open", id)))) !== undefined
        const append = GroupCommit.make((batch: ReadonlyArray<string>, group) =>
          Effect.gen(function*() {
            // A run that goes on is no longer finished: unmarked before anything is written.
            if (marked && group.finished === undefined) yield* store.remove(key(id, "finished"))
            if (group.compact) {
              yield* rewrite(id, batch, count)
              count = batch.length
            } else {
              yield* Effect.forEach(batch, (entry, i) => store.set(key(id, String(count + i)), entry), {
                discard: true
              })
              yield* store.set(key(id, "length"), String(count + batch.length))
              count += batch.length
            }
            marked = group.finished !== undefined
            if (group.finished !== undefined) {
              const finishedAt = yield* Clock.currentTimeMillis
              const record = { id, finishedAt, result: group.finished }
              yield* store.set(key(id, "finished"), yield* Schema.encodeEffect(Retention.FinishedJson)(record))
            }
          }).pipe(Effect.mapError(failed("append", id)))
        )
        return { entries: before, append }
      })

    const readEntries = (id: string, from: number) =>
      Effect.flatMap(RunId.validate(id), () => entries(id, from).pipe(Effect.mapError(failed("read", id))))

    const read = (id: string) => readEntries(id, 0)

    const readFrom = (id: string, from: number) => Effect.andThen(LogOffset.check(from), readEntries(id, from))

    /** Removes every key of run `id`, its finished mark first; its lease is held. */
    const forget = (id: string) =>
      Effect.flatMap(length(id), (count) =>
        Effect.forEach(
          ["finished", "length", "fingerprint", "ended", ...Array.from({ length: count }, (_, i) => String(i))],
          (suffix) => store.remove(key(id, suffix)),
          { discard: true }
        ))

    const clear = (id: string) =>
      Effect.scoped(Effect.gen(function*() {
        yield* RunId.validate(id)
        yield* hold(id)
        yield* forget(id).pipe(Effect.mapError(failed("clear", id)))
      }))

    /** Keeps only the last `result` entries of run `id`: whether there was anything else; its lease is held. */
    const cut = (id: string, result: number) =>
      Effect.gen(function*() {
        const all = yield* entries(id)
        if (all.length <= result) return false
        yield* rewrite(id, all.slice(all.length - result), all.length)
        return true
      })

    /** Prunes run `id` if the cutoff takes it and nobody holds it: whether it did. */
    const pruneRun = (id: string, cutoff: Retention.Cutoff) =>
      Effect.scoped(Effect.gen(function*() {
        const taken = yield* Effect.result(hold(id))
        if (taken._tag === "Failure") return false
        const record = yield* finished(id)
        if (record !== undefined) {
          if (cutoff.finished === undefined || record.finishedAt >= cutoff.finished) return false
          if (cutoff.keep === "result") return yield* cut(id, record.result)
          yield* forget(id)
          return true
        }
        if (cutoff.unfinished === undefined || !Retention.isRun(id)) return false
        const at = yield* ended(id)
        if (at === undefined) {
          yield* endNow(id)
          return false
        }
        if (at >= cutoff.unfinished) return false
        yield* forget(id)
        return true
      }))

    const prune = (options: PruneOptions) =>
      Effect.gen(function*() {
        const cutoff = yield* Retention.cutoff(options)
        const keys = yield* store.keys.pipe(Effect.mapError(failed("prune", prefix)))
        // Every run has a fingerprint; only the finished have a finished mark.
        const suffixes = cutoff.unfinished === undefined ? [finishedSuffix] : [finishedSuffix, fingerprintSuffix]
        const ids = new Set<string>()
        for (const name of keys) {
          const suffix = suffixes.find((suffix) => name.endsWith(suffix))
          if (!name.startsWith(prefix) || suffix === undefined) continue
          const id = runOf(name.slice(prefix.length, -suffix.length))
          if (id !== undefined) ids.add(id)
        }
        const runs: Array<string> = []
        for (const id of ids) {
          if (yield* pruneRun(id, cutoff).pipe(Effect.mapError(failed("prune", id)))) runs.push(id)
        }
        return { runs }
      })

    const result: Store = { open, read, readFrom, clear, prune }
    return result
  })
