// @module-tag slow
/**
 * `Checkpointer` runs served as resumable Server-Sent Events by a real server
 * process, on files: a client process killed (`SIGKILL`) mid-run comes back
 * with the last id it saw; the server process killed mid-run is started again
 * and the run resumes for the client that comes back (taking over once the
 * dead server's lease lapses, the client following the log meanwhile); a
 * cancel reaches every client as `Halted` by `"person"`, and an
 * execution after gets the same termination. What each client saw plus what
 * it got after is the run's whole event sequence: no gap, no duplicate.
 */
import { MockLanguageModel } from "@agentloop/testing"
import * as TestProcess from "@agentloop/testing/TestProcess"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as EventStream from "../src/stream/EventStream.ts"
import * as EventStreamClient from "../src/stream/EventStreamClient.ts"
import { type Config, optionsOf } from "./crash/resumableChild.ts"
import { sources } from "./fixtures.ts"

const script = TestProcess.bundled(new URL("./crash/resumableChild.ts", import.meta.url).pathname, sources)

/** Node processes load the sources: seconds on a busy machine. The limit only ends a case that hangs. */
const hangs = 120_000

const Read = Schema.Struct({ id: Schema.String, tag: Schema.String })
type Read = typeof Read.Type

/** A client process's reads so far. */
const reads = (child: TestProcess.Child) =>
  child.messages.flatMap((message) => Schema.is(Read)(message) ? [message] : [])

/**
 * The recorded events of reads, each from the last id of the one before: those whose id changed (an unrecorded
 * event repeats the last id).
 */
const recorded = (entries: ReadonlyArray<Read>) =>
  entries.filter((entry, i) => entry.id !== "" && entry.id !== (entries[i - 1]?.id ?? ""))

/**
 * Reads `url` in this process, from `lastEventId` on: each event's id and tag, and how it ended. `saw` is
 * completed once it has read an event that `until` accepts.
 */
const readHere = (
  url: string,
  lastEventId?: string,
  saw?: { readonly until: (entry: Read) => boolean; readonly signal: Deferred.Deferred<void> }
) =>
  Effect.promise(async () => {
    const entries: Array<Read> = []
    try {
      for await (const { event, id } of EventStreamClient.entries(EventStream.agent, url, undefined, { lastEventId })) {
        entries.push({ id, tag: event._tag })
        if (saw?.until(entries.at(-1)!) === true) Deferred.doneUnsafe(saw.signal, Exit.void)
      }
      return { entries, ended: "end", source: undefined as string | undefined }
    } catch (error) {
      const tagged = error instanceof Error && "_tag" in error
      return {
        entries,
        ended: tagged ? String(error._tag) : String(error),
        source: tagged && "source" in error ? String(error.source) : undefined
      }
    }
  })

const post = (url: string) => Effect.promise(() => fetch(url, { method: "POST" }).then((response) => response.text()))

/** The server process on the checkpoints in `dir`, and its URL. */
const server = (dir: string) =>
  Effect.gen(function*() {
    const config: Config = { action: "serve", dir, url: "" }
    const child = yield* script.spawn(config)
    const url = String((yield* child.waitFor(TestProcess.has("url")))["url"])
    return { child, url }
  })

/** A client process reading `url` from `lastEventId` on. */
const client = (url: string, lastEventId?: string) =>
  script.spawn({ action: "read", dir: "", url, ...(lastEventId === undefined ? {} : { lastEventId }) })

const tempDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-resumable-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

/** The tags of a run of four turns of a call each, then an answer, as replayed. */
const wholeRun = [
  ...Array.from({ length: 4 }, () => ["TurnStarted", "TurnCompleted", "ToolResult", "Verdict"]).flat(),
  "TurnStarted",
  "TurnCompleted",
  "Verdict",
  "Finished"
]

describe.concurrent("ResumableStream from a server process", () => {
  it.live(
    "a client killed mid-run comes back with its last id: what it saw and what it gets is the whole run",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { url } = yield* server(dir)
        const events = `${url}/runs/walk/events`
        const first = yield* client(events)
        yield* first.waitFor(() => recorded(reads(first)).length >= 5)
        yield* first.kill
        const seen = reads(first)

        const rest = yield* readHere(events, seen.at(-1)!.id)
        expect(rest.ended).toBe("end")
        const whole = yield* readHere(events)
        expect(whole.ended).toBe("end")
        expect(whole.entries.map((entry) => entry.tag)).toStrictEqual(wholeRun)
        expect(recorded([...seen, ...rest.entries])).toStrictEqual(whole.entries)
      }).pipe(Effect.scoped),
    hangs
  )

  it.live(
    "the server killed mid-run and started again: a client back with its last id gets the rest, and no turn is asked twice",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const before = yield* server(dir)
        const events = (base: string) => `${base}/runs/resumed/events`
        const saw = yield* Deferred.make<void>()
        const reader = yield* Effect.forkChild(readHere(events(before.url), undefined, {
          until: (entry) => entry.id === "2.1",
          signal: saw
        }))
        // Killed while the second turn's call runs: the turn's answer is recorded.
        yield* Deferred.await(saw)
        yield* before.child.kill
        const cut = yield* Fiber.join(reader)
        expect(cut.ended).toBe("EventStreamError")
        const seen = cut.entries

        const after = yield* server(dir)
        // The new server follows the run's log until the dead one's lease lapses, then executes it from its checkpoints.
        const rest = yield* readHere(events(after.url), seen.at(-1)!.id)
        expect(rest.ended).toBe("end")
        const whole = yield* readHere(events(after.url))
        expect(whole.entries.map((entry) => entry.tag)).toStrictEqual(wholeRun)
        expect(recorded([...seen, ...rest.entries])).toStrictEqual(whole.entries)
        // Each of the five turns was asked once, by one server or the other.
        const asked = [...before.child.messages, ...after.child.messages].flatMap((message) =>
          typeof message["asked"] === "number" ? [message["asked"]] : []
        )
        expect(asked).toStrictEqual([1, 2, 3, 4, 5])
      }).pipe(Effect.scoped),
    hangs
  )

  it.live(
    "a cancel reaches every client as Halted by person; a client and an execution after get the same",
    () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { url } = yield* server(dir)
        const events = `${url}/runs/hang-1/events`
        const saw = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
        const readers = yield* Effect.forEach(saw, (signal) =>
          Effect.forkChild(readHere(events, undefined, {
            until: (entry) => entry.tag === "TurnCompleted",
            signal
          })))
        yield* Effect.forEach(saw, Deferred.await)
        expect(yield* post(`${url}/runs/hang-1/cancel`)).toBe("cancelled\n")
        for (const reader of readers) {
          const read = yield* Fiber.join(reader)
          expect(read).toMatchObject({ ended: "Halted", source: "person" })
          expect(
            recorded(read.entries).map((entry) => entry.tag)
          ).toStrictEqual(["TurnStarted", "TurnCompleted"])
        }
        const later = yield* readHere(events)
        expect(later.ended).toBe("Halted")
        expect(later.source).toBe("person")
        expect(yield* post(`${url}/runs/hang-1/cancel`)).toBe("already ended\n")

        // Executed again here, on the same files: the same termination, and the model is not asked.
        const fiber = yield* Effect.forkChild(
          Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run(optionsOf("hang-1"))).pipe(
            Effect.flip,
            Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer([])))),
            Effect.provide(
              Checkpointer.layerFileSystem(dir).pipe(Layer.provide(NodeFileSystem.layer), Layer.provide(NodePath.layer))
            )
          )
        )
        expect(yield* Fiber.join(fiber)).toMatchObject({
          _tag: "Halted",
          source: "person",
          reason: "the user pressed stop"
        })
      }).pipe(Effect.scoped),
    hangs
  )
})
