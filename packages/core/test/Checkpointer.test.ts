import { NodeSqliteClient } from "@agentloop/durable"
import { Reachable } from "@agentloop/testing"
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Queue, Schedule, Schema, Scope } from "effect"
import { KeyValueStore } from "effect/persistence"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as CheckpointStore from "../src/CheckpointStore.ts"
import { after, ahead, files, watchedFiles } from "./checkpointFixtures.ts"

const fingerprint = { input: "sha256:aa", tools: "add" }
const fresh = (name: string) => `${name}/${Math.random().toString(36).slice(2)}`

/** Opens run `id` in a scope of its own, appends `entries` one append each, and closes it; the entries it found. */
const appendAll = (id: string, entries: ReadonlyArray<string>, given: Record<string, string> = fingerprint) =>
  Effect.scoped(Effect.gen(function*() {
    const log = yield* (yield* Checkpointer.Checkpointer).open(id, given)
    for (const entry of entries) yield* log.append([entry])
    return log.entries
  }))

/** The behaviour every checkpointer layer must have. */
const conformance = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.effect("appends in order, reads back, keeps runs apart, clears", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        const id = fresh("run")
        expect(yield* checkpoints.read(id)).toStrictEqual([])
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* checkpoints.open(id, fingerprint)
          expect(log.entries).toStrictEqual([])
          yield* log.append(["{\"a\":1}"], { durable: false })
          yield* log.append([])
          yield* log.append(["{\"b\":2}", "{\"c\":\"three\\nlines\"}"])
        }))
        yield* appendAll(`${id}-other`, ["{\"z\":0}"])
        expect(yield* checkpoints.read(id)).toStrictEqual(["{\"a\":1}", "{\"b\":2}", "{\"c\":\"three\\nlines\"}"])
        // Opened again, the log has what was appended, and goes on after it.
        expect(yield* appendAll(id, ["{\"d\":4}"])).toHaveLength(3)
        expect(yield* checkpoints.read(id)).toHaveLength(4)
        yield* checkpoints.clear(id)
        expect(yield* checkpoints.read(id)).toStrictEqual([])
        expect(yield* checkpoints.read(`${id}-other`)).toStrictEqual(["{\"z\":0}"])
        // A cleared run starts afresh, with any fingerprint.
        expect(yield* appendAll(id, ["again"], { input: "sha256:bb" })).toStrictEqual([])
        yield* checkpoints.clear(id)
        yield* checkpoints.clear(`${id}-other`)
      }).pipe(Effect.provide(layer())))

    it.effect("reads from an entry on: past the end none, after a compaction or a prune from its new first entry", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        const id = fresh("offset")
        expect(yield* CheckpointStore.readFrom(checkpoints, id, 0)).toStrictEqual([])
        yield* appendAll(id, ["a", "b", "c"])
        expect(yield* CheckpointStore.readFrom(checkpoints, id, 0)).toStrictEqual(["a", "b", "c"])
        expect(yield* CheckpointStore.readFrom(checkpoints, id, 2)).toStrictEqual(["c"])
        expect(yield* CheckpointStore.readFrom(checkpoints, id, 3)).toStrictEqual([])
        expect(yield* CheckpointStore.readFrom(checkpoints, id, 10)).toStrictEqual([])
        // A compaction renumbers the log from 0 (a SQL store's positions count on: the offset is not a position).
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* checkpoints.open(id, fingerprint)
          yield* log.append(["snapshot"], { compact: true })
          yield* log.append(["d", "e"])
          yield* log.append(["result"], { finished: true })
        }))
        expect(yield* CheckpointStore.readFrom(checkpoints, id, 1)).toStrictEqual(["d", "e", "result"])
        yield* TestClock.adjust("1 second")
        yield* checkpoints.prune({ finishedBefore: 0, keep: "result" })
        expect(yield* CheckpointStore.readFrom(checkpoints, id, 0)).toStrictEqual(["result"])
        expect(yield* CheckpointStore.readFrom(checkpoints, id, 1)).toStrictEqual([])
        for (const from of [-1, 1.5, Number.NaN, Infinity]) {
          expect(yield* Effect.flip(CheckpointStore.readFrom(checkpoints, id, from))).toMatchObject({
            _tag: "InvalidOptions",
            field: "from"
          })
        }
        expect(yield* Effect.flip(CheckpointStore.readFrom(checkpoints, "", 0))).toMatchObject({ _tag: "InvalidRunId" })
        yield* checkpoints.clear(id)
      }).pipe(Effect.provide(layer())))

    it.effect("appends made at once are all kept, each once, in the order they were made", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        const id = fresh("parallel")
        const entries = Array.from({ length: 24 }, (_, i) => JSON.stringify({ call: i }))
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* checkpoints.open(id, fingerprint)
          yield* log.append(["first"])
          yield* Effect.forEach(entries, (entry) => log.append([entry]), { concurrency: "unbounded", discard: true })
        }))
        expect(yield* checkpoints.read(id)).toStrictEqual(["first", ...entries])
        yield* checkpoints.clear(id)
      }).pipe(Effect.provide(layer())))

    it.effect("an append of thousands of entries (a fork's) is kept whole, in order", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        const id = fresh("large")
        const entries = Array.from({ length: 1234 }, (_, i) => JSON.stringify({ entry: i }))
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* checkpoints.open(id, fingerprint)
          yield* log.append(["first"])
          yield* log.append(entries)
          yield* log.append(["last"])
        }))
        expect(yield* checkpoints.read(id)).toStrictEqual(["first", ...entries, "last"])
        yield* checkpoints.clear(id)
      }).pipe(Effect.provide(layer())))

    it.effect("one executor at a time: a second open of a run in progress fails with RunInProgress", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        const id = fresh("leased")
        yield* Effect.scoped(Effect.gen(function*() {
          yield* checkpoints.open(id, fingerprint)
          const second = yield* Effect.flip(Effect.scoped(checkpoints.open(id, fingerprint)))
          expect(second).toMatchObject({ _tag: "RunInProgress", id })
          expect(yield* Effect.flip(checkpoints.clear(id))).toMatchObject({ _tag: "RunInProgress" })
        }))
        // Released with the scope: the next executor gets it at once.
        expect(yield* appendAll(id, ["after"])).toStrictEqual([])
        yield* checkpoints.clear(id)
      }).pipe(Effect.provide(layer())))

    it.effect("a run executed with another fingerprint fails with CheckpointMismatch naming what differs", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        const id = fresh("fingerprinted")
        yield* appendAll(id, ["one"])
        const error = yield* Effect.flip(appendAll(id, ["two"], { input: "sha256:bb", tools: "add" }))
        expect(error).toMatchObject({
          _tag: "CheckpointMismatch",
          id,
          differences: [{ field: "input", recorded: "sha256:aa", given: "sha256:bb" }]
        })
        expect(error.message).toContain("input")
        expect(yield* checkpoints.read(id)).toStrictEqual(["one"])
        yield* checkpoints.clear(id)
      }).pipe(Effect.provide(layer())))

    it.effect("any valid run id works, long or in any script; an invalid one is InvalidRunId", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        for (const id of ["a".repeat(300), "長い実行識別子".repeat(30), "run/with spaces & %2F"]) {
          yield* appendAll(id, ["kept"])
          expect(yield* checkpoints.read(id)).toStrictEqual(["kept"])
          yield* checkpoints.clear(id)
        }
        for (const id of ["", "a".repeat(513), "nul\u0000byte", "lone \ud800"]) {
          expect(yield* Effect.flip(Effect.scoped(checkpoints.open(id, fingerprint)))).toMatchObject({
            _tag: "InvalidRunId"
          })
          expect(yield* Effect.flip(checkpoints.read(id))).toMatchObject({ _tag: "InvalidRunId" })
        }
      }).pipe(Effect.provide(layer())))
  })

const postgresReachable = await Reachable.listening(5432)
if (!postgresReachable) console.warn("Checkpointer: SKIPPING the PostgreSQL tests: nothing listens on 127.0.0.1:5432")

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-checkpoints-"))
afterAll(() => Fs.rmSync(directory, { recursive: true, force: true }))

/** The one log file under `dir`. */
const logFile = (dir: string): string => {
  const logs = Fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((name) => name.endsWith("log"))
  expect(logs).toHaveLength(1)
  return Path.join(dir, logs[0]!)
}

const readWith = (layer: Layer.Layer<Checkpointer.Checkpointer>, id: string) =>
  Effect.flatMap(Checkpointer.Checkpointer, (c) => c.read(id)).pipe(Effect.provide(layer))

describe("Checkpointer", () => {
  conformance("in memory", () => Checkpointer.layerMemory)
  conformance("on the file system", () => files(directory))
  conformance(
    "on SQLite",
    () =>
      Checkpointer.layerSql().pipe(
        Layer.provide(NodeSqliteClient.layer({ filename: Path.join(directory, "checkpoints.db") }))
      )
  )

  describe("on the file system", () => {
    it.effect("a log survives the layer that wrote it (a new process)", () =>
      Effect.gen(function*() {
        yield* appendAll("survivor", ["1", "2"]).pipe(Effect.provide(files(directory)))
        expect(yield* readWith(files(directory), "survivor")).toStrictEqual(["1", "2"])
      }))

    it.effect("a torn last record (a crash mid-append) is cut off: the entries before it stay, appends go on", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "torn-"))
        yield* appendAll("torn", ["one", "two", "three"]).pipe(Effect.provide(files(dir)))
        const file = logFile(dir)
        Fs.truncateSync(file, Fs.statSync(file).size - 2)
        // A reader skips the torn record; the next writer cuts it off and appends after the last whole one.
        expect(yield* readWith(files(dir), "torn")).toStrictEqual(["one", "two"])
        expect(yield* appendAll("torn", ["four"]).pipe(Effect.provide(files(dir)))).toStrictEqual(["one", "two"])
        expect(yield* readWith(files(dir), "torn")).toStrictEqual(["one", "two", "four"])
      }))

    it.effect("a damaged length is reported when whole records follow it, and a zero-filled tail is a torn tail", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "length-"))
        yield* appendAll("length", ["one", "two", "three"]).pipe(Effect.provide(files(dir)))
        const file = logFile(dir)
        const bytes = Fs.readFileSync(file)
        // The length of the record of "two" (9 bytes of frame header before its payload) made to run past the end.
        const lengthAt = bytes.indexOf("two") - 9
        const longer = Buffer.from(bytes)
        longer.writeUInt32LE(0x00ffffff, lengthAt)
        Fs.writeFileSync(file, longer)
        const damaged = yield* Effect.flip(readWith(files(dir), "length"))
        expect(damaged).toMatchObject({ _tag: "CheckpointError", operation: "read" })
        expect(damaged.message).toContain(`the record at byte ${lengthAt} is damaged`)
        // A crash that left the file longer than what was written (zeros where the last append was going) loses
        // nothing acknowledged: the zeros are cut off.
        Fs.writeFileSync(file, Buffer.concat([bytes, Buffer.alloc(64)]))
        expect(yield* readWith(files(dir), "length")).toStrictEqual(["one", "two", "three"])
        expect(yield* appendAll("length", ["four"]).pipe(Effect.provide(files(dir)))).toStrictEqual([
          "one",
          "two",
          "three"
        ])
        expect(yield* readWith(files(dir), "length")).toStrictEqual(["one", "two", "three", "four"])
      }))

    it.effect("readFrom passes over the entries before its offset unread; a torn tail or a damaged length is found as read finds it", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "from-"))
        const readFrom = (from: number) =>
          Effect.flatMap(Checkpointer.Checkpointer, (store) => CheckpointStore.readFrom(store, "from", from)).pipe(
            Effect.provide(files(dir))
          )
        yield* appendAll("from", ["one", "two", "three"]).pipe(Effect.provide(files(dir)))
        const file = logFile(dir)
        const bytes = Fs.readFileSync(file)
        // A byte of the first entry's text changed: the entries before the offset are not read, so not checked.
        const flipped = Buffer.from(bytes)
        flipped[bytes.indexOf("one")] = "O".charCodeAt(0)
        Fs.writeFileSync(file, flipped)
        expect(yield* readFrom(1)).toStrictEqual(["two", "three"])
        expect(yield* readFrom(3)).toStrictEqual([])
        expect(yield* Effect.flip(readFrom(0))).toMatchObject({ _tag: "CheckpointError", operation: "read" })
        // A torn last record is cut off, as by a whole read.
        Fs.writeFileSync(file, bytes.subarray(0, bytes.length - 2))
        expect(yield* readFrom(1)).toStrictEqual(["two"])
        expect(yield* readFrom(2)).toStrictEqual([])
        // A length before the offset that leads elsewhere: the log is read whole, and the damage reported.
        const longer = Buffer.from(bytes)
        longer.writeUInt32LE(4, bytes.indexOf("one") - 9)
        Fs.writeFileSync(file, longer)
        const damaged = yield* Effect.flip(readFrom(2))
        expect(damaged).toMatchObject({ _tag: "CheckpointError", operation: "read" })
        expect(damaged.message).toContain("damaged")
      }))

    it.effect("an emptied or damaged log is reported, never read as an empty one", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "damaged-"))
        yield* appendAll("damaged", ["one", "two", "three"]).pipe(Effect.provide(files(dir)))
        const file = logFile(dir)
        const bytes = Fs.readFileSync(file)
        // A byte of the second record changed: records follow it, so it is not a torn tail.
        const flipped = Buffer.from(bytes)
        const at = bytes.indexOf("two")
        flipped[at] = flipped[at]! ^ 0xff
        Fs.writeFileSync(file, flipped)
        const damaged = yield* Effect.flip(appendAll("damaged", ["four"]).pipe(Effect.provide(files(dir))))
        expect(damaged).toMatchObject({ _tag: "CheckpointError", operation: "open" })
        expect(damaged.message).toContain("damaged")
        Fs.writeFileSync(file, "")
        const emptied = yield* Effect.flip(appendAll("damaged", ["four"]).pipe(Effect.provide(files(dir))))
        expect(emptied).toMatchObject({ _tag: "CheckpointError", operation: "open" })
        expect(emptied.message).toContain("truncated")
        expect(yield* Effect.flip(readWith(files(dir), "damaged"))).toMatchObject({
          _tag: "CheckpointError",
          operation: "read"
        })
      }))

    it.effect("each durable append group syncs the log once; entries appended with durable: false wait for the next", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "syncs-"))
        let syncs = 0
        let beforeClose = 0
        // The syncs of the log (a new log is written as a temporary file, which its append handle stays open on).
        const store = watchedFiles(dir, (call, name) => {
          if (call === "sync" && name.startsWith("log")) syncs++
        })
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* (yield* Checkpointer.Checkpointer).open("syncs", fingerprint)
          // Created whole: synced once.
          expect(syncs).toBe(1)
          yield* log.append(["answered"])
          expect(syncs).toBe(2)
          yield* Effect.forEach(["done 1", "done 2", "done 3"], (entry) => log.append([entry]), {
            concurrency: "unbounded"
          })
          expect(syncs).toBeLessThanOrEqual(4)
          const before = syncs
          yield* log.append(["decided"], { durable: false })
          expect(syncs).toBe(before)
          yield* log.append(["answered again"])
          expect(syncs).toBe(before + 1)
          yield* log.append(["decided again"], { durable: false })
          beforeClose = syncs
        })).pipe(Effect.provide(store))
        // The log's close synced what was left.
        expect(syncs).toBe(beforeClose + 1)
        expect(yield* readWith(files(dir), "syncs")).toHaveLength(7)
        // After a compaction too, whose new log the appends go to.
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* (yield* Checkpointer.Checkpointer).open("syncs", fingerprint)
          yield* log.append(["snapshot"], { compact: true })
          yield* log.append(["decided after it"], { durable: false })
          beforeClose = syncs
        })).pipe(Effect.provide(store))
        expect(syncs).toBe(beforeClose + 1)
        expect(yield* readWith(files(dir), "syncs")).toStrictEqual(["snapshot", "decided after it"])
      }))

    it.effect("a new run's folder is synced into the store's folder, once (and the store's folder, made with its first run, into its parent)", () =>
      Effect.gen(function*() {
        const parent = Fs.mkdtempSync(Path.join(directory, "folders-"))
        const synced: Array<string> = []
        const store = watchedFiles(Path.join(parent, "store"), (call, name) => {
          if (call === "sync") synced.push(name)
        })
        for (const [id, entry] of [["first", "one"], ["second", "one"], ["first", "two"]] as const) {
          yield* appendAll(id, [entry]).pipe(Effect.provide(store))
        }
        expect(synced.filter((name) => name === "store")).toHaveLength(2)
        expect(synced.filter((name) => name === Path.basename(parent))).toHaveLength(1)
        expect(yield* readWith(files(Path.join(parent, "store")), "first")).toStrictEqual(["one", "two"])
      }))

    it.effect("a new run's open reads nothing back, and each append is one write, and one sync when durable", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "calls-"))
        const calls: Array<string> = []
        // A file by its name once in place (a new log's append handle is the one it was written through).
        const store = watchedFiles(dir, (call, name) => {
          calls.push(`${call} ${name.replace(/\.tmp-.*/, "")}`)
        })
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* (yield* Checkpointer.Checkpointer).open("calls", fingerprint)
          // Its folder is new: no listing, no log to read, no mark to look for.
          expect(calls.filter((call) => /^(readDirectory|readFile|readFileString|exists|stat) /.test(call)))
            .toStrictEqual([])
          calls.length = 0
          yield* log.append(["answered"])
          yield* log.append(["decided"], { durable: false })
          expect(calls).toStrictEqual(["writeAll log", "sync log", "writeAll log"])
        })).pipe(Effect.provide(store))
      }))

    it.effect("a writer whose lease was taken over fails its next append instead of writing into the new log", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "taken-"))
        yield* Effect.scoped(Effect.gen(function*() {
          const first = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open("taken", fingerprint)).pipe(
            Effect.provide(files(dir))
          )
          yield* first.append(["first's"])
          // A minute later, the first executor having stalled all along (no renewal): its lease lapsed, and a
          // second one takes the run over.
          const second = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open("taken", fingerprint)).pipe(
            Effect.provide(files(dir)),
            after(60_000)
          )
          expect(second.entries).toStrictEqual(["first's"])
          yield* second.append(["second's"])
          const refused = yield* Effect.flip(first.append(["first's, late"]).pipe(after(60_000)))
          expect(refused).toMatchObject({ _tag: "CheckpointError", operation: "append" })
          expect(refused.message).toContain("taken over")
        }))
        expect(yield* readWith(files(dir), "taken")).toStrictEqual(["first's", "second's"])
      }))

    it.effect("a writer whose lease was taken over twice fails its next append too (the next lease's file is gone)", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "taken-twice-"))
        const open = Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open("taken-twice", fingerprint)).pipe(
          Effect.provide(files(dir))
        )
        yield* Effect.scoped(Effect.gen(function*() {
          const first = yield* open
          yield* first.append(["first's"])
          // The first stalls; a minute later a second takes the run over, and stalls in turn; a minute after that, a
          // third takes it over and removes the lease files before its own, the second's included.
          const second = yield* open.pipe(after(60_000))
          yield* second.append(["second's"])
          const third = yield* open.pipe(after(120_000))
          yield* third.append(["third's"])
          for (const stalled of [first, second]) {
            const refused = yield* Effect.flip(stalled.append(["late"]).pipe(after(130_000)))
            expect(refused.message).toContain("taken over")
          }
        }))
        expect(yield* readWith(files(dir), "taken-twice")).toStrictEqual(["first's", "second's", "third's"])
      }))

    it.effect("a writer that stalled while its run was forgotten and executed anew writes nothing into the new run's folder", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "made-again-"))
        const open = Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open("again", fingerprint)).pipe(
          Effect.provide(files(dir))
        )
        // The first executor's clock (its renewals', its release's): it stops while the executor stalls.
        const stall = { ms: 0 }
        const stalled = yield* Scope.make()
        const first = yield* open.pipe(Scope.provide(stalled), ahead(stall))
        yield* first.append(["first's"], { finished: true }).pipe(ahead(stall))
        // The first executor stalls. A minute later a prune forgets the finished run, folder and all, and a second
        // executor executes it anew: a new folder, whose lease is number 1 again.
        expect(yield* Checkpointer.prune({ finishedBefore: 1 }).pipe(Effect.provide(files(dir)), after(60_000)))
          .toStrictEqual({ runs: ["again"] })
        yield* Effect.scoped(Effect.gen(function*() {
          const second = yield* open.pipe(after(60_000))
          yield* second.append(["second's"])
          // The first wakes up: its appends fail, its compaction too, and its release writes nothing.
          stall.ms = 61_000
          for (const options of [{}, { compact: true }]) {
            const refused = yield* Effect.flip(first.append(["first's, late"], options).pipe(ahead(stall)))
            expect(refused.message).toContain("taken over")
          }
          yield* Scope.close(stalled, Exit.void)
          // The second still holds the run.
          expect(yield* Effect.flip(Effect.scoped(open.pipe(after(62_000))))).toMatchObject({ _tag: "RunInProgress" })
        }))
        expect(yield* readWith(files(dir), "again")).toStrictEqual(["second's"])
      }))

    it.effect("a holder's release looks at the files, even in its window: it leaves alone the lease of a run executed anew by clocks far ahead", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "release-"))
        const open = Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open("released", fingerprint)).pipe(
          Effect.provide(files(dir))
        )
        const first = yield* Scope.make()
        const log = yield* open.pipe(Scope.provide(first))
        yield* log.append(["first's"], { finished: true })
        // By clocks a minute ahead of the first executor's, its lease lapsed: a prune forgets its run, and a second
        // executor executes it anew, in a new folder whose lease is number 1 again.
        expect(yield* Checkpointer.prune({ finishedBefore: 1 }).pipe(Effect.provide(files(dir)), after(60_000)))
          .toStrictEqual({ runs: ["released"] })
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Effect.flatMap(open.pipe(after(60_000)), (second) => second.append(["second's"]))
          // The first ends its run, its lease still in its window by its own clock: its release writes nothing.
          yield* Scope.close(first, Exit.void)
          expect(yield* Effect.flip(Effect.scoped(open.pipe(after(62_000))))).toMatchObject({ _tag: "RunInProgress" })
        }))
        expect(yield* readWith(files(dir), "released")).toStrictEqual(["second's"])
      }))

    it.effect("a writer that stalls just before it writes a new log, while its run is forgotten and executed anew, leaves the new log alone", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "stalls-"))
        const open = Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open("stalls", fingerprint))
        const stall = { ms: 0 }
        const second = yield* Scope.make()
        let stalling = false
        // The first executor's compaction, having found its lease held, stalls a minute before it makes its new
        // log's file: meanwhile a prune forgets the run, and a second executor executes it anew.
        const writer = watchedFiles(dir, (call, name) => {
          if (!stalling || call !== "open" || !name.startsWith("log.tmp-")) return
          stalling = false
          return {
            before: Effect.gen(function*() {
              stall.ms = 60_000
              const pruned = yield* Checkpointer.prune({ unfinishedBefore: 1 }).pipe(Effect.provide(files(dir)))
              expect(pruned).toStrictEqual({ runs: ["stalls"] })
              const log = yield* open.pipe(Effect.provide(files(dir)), Scope.provide(second))
              yield* log.append(["second's"])
            }).pipe(after(60_000), Effect.orDie)
          }
        })
        yield* Effect.scoped(Effect.gen(function*() {
          const first = yield* open.pipe(Effect.provide(writer), ahead(stall))
          yield* first.append(["first's"]).pipe(ahead(stall))
          stalling = true
          const refused = yield* Effect.flip(first.append(["first's snapshot"], { compact: true }).pipe(ahead(stall)))
          expect(refused.message).toContain("taken over")
        }))
        expect(yield* readWith(files(dir), "stalls")).toStrictEqual(["second's"])
        yield* Scope.close(second, Exit.void)
      }))

    it.effect("a taker that read the lease's file before a renewal landed finds the run in progress, however late it goes on", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "late-taker-"))
        const renewed = yield* Queue.unbounded<void>()
        const read = yield* Deferred.make<void>()
        const resume = yield* Deferred.make<void>()
        // The holder's renewals, told as they land.
        const holding = watchedFiles(
          dir,
          (call, name) =>
            call === "rename" && name.startsWith("lease.1.tmp-")
              ? { after: Queue.offer(renewed, undefined) }
              : undefined
        )
        // The taker stalls once it read the lease's file (the expiry it holds then), before it goes on.
        let stalled = false
        const taking = watchedFiles(dir, (call, name) =>
          call === "readFileString" && name === "lease.1" && !stalled
            ? (stalled = true, { after: Effect.andThen(Deferred.succeed(read, undefined), Deferred.await(resume)) })
            : undefined)
        yield* Effect.scoped(Effect.gen(function*() {
          const holder = yield* Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open("late", fingerprint)).pipe(
            Effect.provide(holding)
          )
          yield* holder.append(["holder's"])
          const taker = yield* Effect.forkChild(Effect.exit(Effect.scoped(
            Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open("late", fingerprint)).pipe(
              Effect.flatMap((log) => log.append(["taker's"])),
              Effect.provide(taking)
            )
          )))
          yield* Deferred.await(read)
          // Meanwhile the holder renews in time, every third of its 10 s lease, and the clock passes the expiry the
          // taker read.
          for (let renewal = 0; renewal < 3; renewal++) {
            yield* TestClock.adjust(3_334)
            yield* Queue.take(renewed)
            // Woken from within the renewal's last call: let the renewal end before the clock moves on.
            yield* Effect.yieldNow
          }
          yield* Deferred.succeed(resume, undefined)
          const taken = yield* Fiber.join(taker)
          expect(taken).toMatchObject({ _tag: "Failure", cause: { reasons: [{ error: { _tag: "RunInProgress" } }] } })
          yield* holder.append(["holder's, later"])
        }))
        expect(yield* readWith(files(dir), "late")).toStrictEqual(["holder's", "holder's, later"])
      }))

    it.effect("a takeover the window did not foresee (a taker's clock far ahead) ends at the holder's next renewal", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "unforeseen-"))
        const renewed = yield* Deferred.make<void>()
        // The holder's renewal, told once it is over: the lease's new file renamed into place, or removed.
        let renewing = false
        const holding = watchedFiles(
          dir,
          (call, name) =>
            renewing && (call === "rename" || call === "remove") && name.startsWith("lease.1.tmp-")
              ? { after: Deferred.succeed(renewed, undefined) }
              : undefined
        )
        const open = Effect.flatMap(Checkpointer.Checkpointer, (c) => c.open("unforeseen", fingerprint))
        yield* Effect.scoped(Effect.gen(function*() {
          const holder = yield* open.pipe(Effect.provide(holding))
          yield* holder.append(["holder's"])
          // By a clock 11 s ahead, the holder's lease lapsed: a taker takes the run over at once.
          const taker = yield* open.pipe(Effect.provide(files(dir)), after(11_000))
          yield* taker.append(["taker's"])
          // The holder's first renewal, well within what it counts as its window, looks, and finds the lease taken.
          renewing = true
          yield* TestClock.adjust(3_334)
          yield* Deferred.await(renewed)
          // Woken from within the renewal's last call: let the renewal end before going on.
          yield* Effect.yieldNow
          const refused = yield* Effect.flip(holder.append(["holder's, late"]))
          expect(refused.message).toContain("taken over")
        }))
        expect(yield* readWith(files(dir), "unforeseen")).toStrictEqual(["holder's", "taker's"])
      }))

    it.effect("an append looks for a newer lease only once its own may have lapsed", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "window-"))
        let looks = 0
        const store = watchedFiles(dir, (call, name) => {
          // The run's folder listed, for a newer lease file.
          if (call === "readDirectory" && /^[0-9a-f]{32}$/.test(name)) looks++
        })
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* (yield* Checkpointer.Checkpointer).open("window", fingerprint)
          for (const entry of ["one", "two", "three"]) yield* log.append([entry])
          expect(looks).toBe(0)
          // Late enough that the lease (10 s by default, not renewed meanwhile) may have lapsed: the files say.
          yield* log.append(["four"]).pipe(after(9_000))
          yield* log.append(["five"]).pipe(after(9_000))
          expect(looks).toBe(2)
        })).pipe(Effect.provide(store))
        expect(yield* readWith(files(dir), "window")).toStrictEqual(["one", "two", "three", "four", "five"])
      }))

    it.effect("lease files are never synced, and one a power cut tore reads as lapsed", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "torn-lease-"))
        const synced: Array<string> = []
        const store = watchedFiles(dir, (call, name) => {
          if (call === "sync") synced.push(name.replace(/\.tmp-.*/, ".tmp"))
        })
        yield* appendAll("torn-lease", ["one"]).pipe(Effect.provide(store))
        expect(synced.filter((name) => name.startsWith("lease"))).toStrictEqual([])
        // The machine lost power while a lease was being taken: its file is there, empty.
        const [run] = Fs.readdirSync(dir)
        Fs.writeFileSync(Path.join(dir, run!, "lease.7"), "")
        expect(yield* appendAll("torn-lease", ["two"]).pipe(Effect.provide(files(dir)))).toStrictEqual(["one"])
        // And a lease file cut short in the middle of its text.
        Fs.writeFileSync(Path.join(dir, run!, "lease.9"), "{\"owner\":\"pid 1\",\"expi")
        expect(yield* appendAll("torn-lease", ["three"]).pipe(Effect.provide(files(dir)))).toStrictEqual(["one", "two"])
      }))

    it.effect("no log is rewritten in place: the file only grows, and no temporary file is left", () =>
      Effect.gen(function*() {
        const dir = Fs.mkdtempSync(Path.join(directory, "append-only-"))
        const sizes: Array<number> = []
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* (yield* Checkpointer.Checkpointer).open("grows", fingerprint)
          const file = logFile(dir)
          const inode = Fs.statSync(file).ino
          for (const entry of ["a", "b", "c"]) {
            yield* log.append([entry])
            sizes.push(Fs.statSync(file).size)
            expect(Fs.statSync(file).ino).toBe(inode)
          }
        })).pipe(Effect.provide(files(dir)))
        expect(sizes).toStrictEqual([...sizes].sort((a, b) => a - b))
        expect(new Set(sizes).size).toBe(3)
        expect(Fs.readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((name) => name.includes(".tmp-")))
          .toStrictEqual([])
      }))
  })

  it.effect("a store without readFrom (one written before it) is read whole and cut, offsets checked alike", () =>
    Effect.gen(function*() {
      const { readFrom: _, ...store } = yield* Checkpointer.Checkpointer
      const reads: Array<string> = []
      const older: CheckpointStore.Store = {
        ...store,
        read: (id) => Effect.tap(store.read(id), () => Effect.sync(() => reads.push(id)))
      }
      yield* appendAll("run-old", ["a", "b", "c"])
      expect(yield* CheckpointStore.readFrom(older, "run-old", 1)).toStrictEqual(["b", "c"])
      expect(yield* CheckpointStore.readFrom(older, "run-old", 4)).toStrictEqual([])
      expect(reads).toStrictEqual(["run-old", "run-old"])
      expect(yield* Effect.flip(CheckpointStore.readFrom(older, "run-old", -1))).toMatchObject({
        _tag: "InvalidOptions",
        field: "from"
      })
      expect(reads).toHaveLength(2)
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a store that fails is a CheckpointError naming the operation and the run", () =>
    Effect.gen(function*() {
      const broken = Layer.succeed(
        KeyValueStore.KeyValueStore,
        KeyValueStore.makeStringOnly({
          get: () => Effect.fail(new KeyValueStore.KeyValueStoreError({ method: "get", message: "disk gone" })),
          set: () => Effect.fail(new KeyValueStore.KeyValueStoreError({ method: "set", message: "disk gone" })),
          remove: () => Effect.void,
          clear: Effect.void,
          size: Effect.succeed(0),
          keys: Effect.succeed([])
        })
      )
      const error = yield* Effect.flip(
        appendAll("run-x", ["{}"]).pipe(
          Effect.provide(Checkpointer.layerKeyValueStore().pipe(Layer.provide(broken)))
        )
      )
      expect(error).toMatchObject({ _tag: "CheckpointError", operation: "open", id: "run-x" })
      expect(error.message).toContain("disk gone")
    }))

  describe.skipIf(!postgresReachable)("on PostgreSQL", () => {
    const table = `agentloop_checkpoints_test_${process.pid}`
    const application = `agentloop-checkpointer-test-${process.pid}`
    const connection = { host: "127.0.0.1", port: 5432, database: "test", username: "postgres" }
    const client = PgClient.layer({ ...connection, applicationName: application })
    const admin = PgClient.layer(connection)
    const postgres = (retry?: Schedule.Schedule<unknown, unknown>) =>
      Checkpointer.layerSql({ table, retry }).pipe(Layer.provide(client))
    afterAll(() =>
      Effect.runPromise(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.all([
            sql`DROP TABLE IF EXISTS ${sql(table)}`,
            sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`
          ])).pipe(Effect.provide(admin))
      )
    )
    conformance("on PostgreSQL", () => postgres())

    it.live(
      "processes that open a new table at once all open it (each on its own connection)",
      () =>
        Effect.gen(function*() {
          const tables = Array.from({ length: 4 }, (_, i) => `${table}_race_${i}`)
          const open = (name: string) =>
            Effect.scoped(
              Layer.build(Checkpointer.layerSql({ table: name }).pipe(Layer.provide(PgClient.layer(connection))))
            )
          // Three openers per table, racing to create its tables and indexes: PostgreSQL refuses all but one maker.
          const opened = yield* Effect.forEach(
            tables,
            (name) => Effect.all([open(name), open(name), open(name)], { concurrency: 3 }).pipe(Effect.result),
            { concurrency: 1 }
          )
          yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
            Effect.forEach(
              tables,
              (name) =>
                Effect.all([sql`DROP TABLE IF EXISTS ${sql(name)}`, sql`DROP TABLE IF EXISTS ${sql(`${name}_runs`)}`])
            )).pipe(Effect.provide(admin))
          expect(opened.map((result) => result._tag)).toStrictEqual(tables.map(() => "Success"))
        }),
      30_000
    )

    const Count = Schema.Array(
      Schema.Struct({ waiting: Schema.Union([Schema.Number, Schema.NumberFromString, Schema.BigInt]) })
    )
    /**
     * Appends `entry` while its connection is dropped: the entries table is locked, so the append's statement
     * waits in the server, whose backend is then terminated; the table is unlocked after.
     */
    const appendThroughDrop = (log: CheckpointStore.Log, entry: string) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const locked = yield* Deferred.make<void>()
        const unlock = yield* Deferred.make<void>()
        const lock = yield* Effect.forkChild(sql.withTransaction(Effect.gen(function*() {
          yield* sql`LOCK TABLE ${sql(table)} IN ACCESS EXCLUSIVE MODE`
          yield* Deferred.succeed(locked, undefined)
          yield* Deferred.await(unlock)
        })))
        yield* Deferred.await(locked)
        const append = yield* Effect.forkChild(log.append([entry]))
        yield* Effect.flatMap(
          sql`SELECT count(*) AS waiting FROM pg_stat_activity
            WHERE application_name = ${application} AND wait_event_type = 'Lock'`,
          Schema.decodeUnknownEffect(Count)
        ).pipe(
          Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: ([row]) => Number(row?.waiting) > 0 }),
          Effect.timeout("20 seconds")
        )
        yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ${application}`
        yield* Deferred.succeed(unlock, undefined)
        yield* Fiber.join(lock)
        return yield* Fiber.join(append)
      }).pipe(Effect.provide(admin))

    it.live("a connection dropped mid-append is retried: the entry lands once", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        const id = fresh("dropped")
        yield* Effect.scoped(Effect.gen(function*() {
          const log = yield* checkpoints.open(id, fingerprint)
          yield* log.append(["before"])
          yield* appendThroughDrop(log, "during")
          yield* log.append(["after"])
        }))
        expect(yield* checkpoints.read(id)).toStrictEqual(["before", "during", "after"])
        yield* checkpoints.clear(id)
      }).pipe(Effect.provide(postgres())), 30_000)

    it.live("without retries, the same drop fails the append (the test does drop the connection)", () =>
      Effect.gen(function*() {
        const checkpoints = yield* Checkpointer.Checkpointer
        const id = fresh("dropped-for-good")
        const error = yield* Effect.flip(Effect.scoped(Effect.gen(function*() {
          const log = yield* checkpoints.open(id, fingerprint)
          yield* appendThroughDrop(log, "during")
        })))
        expect(error).toMatchObject({ _tag: "CheckpointError", operation: "append" })
        yield* checkpoints.clear(id)
      }).pipe(Effect.provide(postgres(Schedule.recurs(0)))))
  })
})
