/**
 * Conversations that outlive a run: a thread id groups `AgentLoop` runs and
 * step programs (their `thread` option), and a run on a thread starts from
 * the items the thread's previous runs added, so a chat server keeps one
 * conversation per user without resending it. A step program's run is its
 * execution: its own item log starts from the thread's history, and what it
 * added goes to the thread when it ends well; runs of both kinds may share a
 * thread.
 *
 * A thread is a log of its own in the `Checkpointer`, under the reserved id
 * `ThreadId.logId(id)` (`@agentloop/thread/<id>`), with one entry per event:
 * `Started` when a run begins on it, `Ran` with what the run changed once it
 * finished well, and `Compacted` (or `Forked`) with the whole history when it
 * was shortened (or copied from another thread). The history is the fold of
 * those entries; a run that has not finished (running, crashed, or ended with
 * an error termination) adds nothing to it.
 *
 * A run on a thread holds the thread's lease for as long as it executes: a
 * second run on the same thread at the same time is refused at once with
 * `CheckpointFailed`, `RunInProgress` as its cause (naming the thread's log),
 * so two runs never interleave; a finished run streamed again replays
 * without it. A run executed again with the same `runId` (after a crash, an
 * interruption or an error termination) starts from the same history as
 * before and adds its items once; a run that a later run on the thread
 * superseded cannot be resumed (`ThreadSuperseded`): its items would no
 * longer follow the history it answered.
 *
 * @since 0.2.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { Checkpointer, CheckpointError } from "../Checkpointer.ts"
import { CheckpointMismatch } from "../CheckpointStore.ts"
import type { Log, OpenError } from "../CheckpointStore.ts"
import * as Compactor from "../Compactor.ts"
import * as Item from "../Item.ts"
import * as RunFingerprint from "../RunFingerprint.ts"
import type { InvalidRunId } from "../RunId.ts"
import { apply, change, HistoryChange } from "./AgentCheckpoint.ts"
import type { ThreadOptions } from "./AgentOptions.ts"
import { indexLogId, logId } from "./ThreadId.ts"

/**
 * A run whose items a later run on the same thread superseded: it started,
 * did not finish, and another run started on the thread after it. Executing
 * it again would add items that no longer follow the history it answered, so
 * it is refused; run it again under a new `runId`.
 *
 * @since 0.2.0
 * @category errors
 */
export class ThreadSuperseded extends Schema.TaggedError<ThreadSuperseded>()("ThreadSuperseded", {
  thread: Schema.String,
  run: Schema.String,
  by: Schema.String
}) {
  override get message() {
    return `run "${this.run}" on thread "${this.thread}" was superseded by run "${this.by}": use another run id`
  }
}

/**
 * A fork's target thread already has a history: a fork starts a new thread.
 *
 * @since 0.2.0
 * @category errors
 */
export class ThreadExists extends Schema.TaggedError<ThreadExists>()("ThreadExists", {
  thread: Schema.String
}) {
  override get message() {
    return `thread "${this.thread}" already exists: fork into a new thread id, or clear it first`
  }
}

/** A run began on the thread. */
const Started = Schema.TaggedStruct("Started", { run: Schema.String })

/** A run finished well: how it changed the history it started from. */
const Ran = Schema.TaggedStruct("Ran", { run: Schema.String, history: HistoryChange })

/** The history was compacted to `history`. */
const Compacted = Schema.TaggedStruct("Compacted", { history: Item.History })

/** The thread was forked from thread `from`, whose history was `history`. */
const Forked = Schema.TaggedStruct("Forked", { from: Schema.String, history: Item.History })

/**
 * The schema of a thread's log entries.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Entry = Schema.Union([Started, Ran, Compacted, Forked])

/**
 * @since 0.2.0
 * @category models
 */
export type Entry = typeof Entry.Type

const codec = Schema.fromJsonString(Schema.toCodecJson(Entry))
const decodeEntry = Schema.decodeUnknownEffect(codec)
const encodeEntry = Schema.encodeEffect(codec)

/**
 * The fingerprint every thread's log is opened with: what a thread holds is
 * in its entries.
 *
 * @since 0.2.0
 * @category constants
 */
export const fingerprint: RunFingerprint.Fingerprint = { thread: "agentloop thread" }

/** A thread's entries folded: its history, and what run `run` (when given) did on it. */
interface Folded {
  readonly history: ReadonlyArray<Item.Item>
  /** The history run `run` started from, if it started on the thread. */
  readonly base: ReadonlyArray<Item.Item> | undefined
  readonly finished: boolean
  /** The run that started on the thread last. */
  readonly lastStarted: string | undefined
}

const fold = (
  thread: string,
  entries: ReadonlyArray<string>,
  run?: string
): Effect.Effect<Folded, CheckpointError> =>
  Effect.gen(function*() {
    let history: ReadonlyArray<Item.Item> = []
    let base: ReadonlyArray<Item.Item> | undefined
    let finished = false
    let lastStarted: string | undefined
    for (const [index, text] of entries.entries()) {
      const entry = yield* decodeEntry(text).pipe(Effect.mapError((error) =>
        new CheckpointError({
          operation: "read",
          id: logId(thread),
          message: `entry ${index} of thread "${thread}" is damaged: ${error.message}`,
          cause: error
        })
      ))
      switch (entry._tag) {
        case "Started":
          if (entry.run === run) base = history
          lastStarted = entry.run
          break
        // A run's change is always to the history it started from: no other run wrote in between.
        case "Ran":
          history = apply(history, entry.history)
          if (entry.run === run) finished = true
          break
        case "Compacted":
        case "Forked":
          history = entry.history
          break
      }
    }
    return { history, base, finished, lastStarted }
  })

const encode = (thread: string, entries: ReadonlyArray<Entry>) =>
  Effect.forEach(entries, (entry) => encodeEntry(entry)).pipe(Effect.mapError((error) =>
    new CheckpointError({
      operation: "append",
      id: logId(thread),
      message: `an entry of thread "${thread}" could not be encoded: ${error.message}`,
      cause: error
    })
  ))

/** A thread got its first entry. */
const Added = Schema.TaggedStruct("Added", { thread: Schema.String })

/** A thread was deleted. */
const Removed = Schema.TaggedStruct("Removed", { thread: Schema.String })

/**
 * The schema of the entries of the log that lists the threads
 * (`ThreadId.indexLogId`).
 *
 * @since 0.2.0
 * @category schemas
 */
export const IndexEntry = Schema.Union([Added, Removed])

/**
 * @since 0.2.0
 * @category models
 */
export type IndexEntry = typeof IndexEntry.Type

const indexCodec = Schema.fromJsonString(Schema.toCodecJson(IndexEntry))
const decodeIndexEntry = Schema.decodeUnknownEffect(indexCodec)
const encodeIndexEntry = Schema.encodeEffect(indexCodec)

/**
 * How long a writer of the threads' list waits for another one: it holds the
 * list's lease for one append, so a wait is short, unless its holder died
 * (then until its lease lapses).
 */
const indexBusy = Schedule.max([Schedule.spaced(Duration.millis(20)), Schedule.during(Duration.seconds(15))])

/**
 * Runs `f` with the log of the threads' list open, waiting while another
 * writer holds it.
 */
const withIndex = <A, E, R>(
  f: (log: Log) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | OpenError, Checkpointer | R> =>
  Effect.scoped(
    Effect.flatMap(Checkpointer, (store) => store.open(indexLogId, fingerprint)).pipe(
      Effect.retry({ while: (error: OpenError) => error._tag === "RunInProgress", schedule: indexBusy }),
      Effect.flatMap(f)
    )
  )

const writeIndex = (log: Log, entry: IndexEntry) =>
  encodeIndexEntry(entry).pipe(
    Effect.mapError((error) =>
      new CheckpointError({
        operation: "append",
        id: indexLogId,
        message: `an entry of the threads' list could not be encoded: ${error.message}`,
        cause: error
      })
    ),
    Effect.flatMap((text) => log.append([text]))
  )

/**
 * The ids of the threads in the `Checkpointer`, oldest first. The store
 * itself cannot list its logs: threads are listed in a log of their own
 * (`ThreadId.indexLogId`), written when a thread gets its first entry and when
 * it is deleted. A crash between a thread's first run and its first entry
 * may leave a listed thread with no history.
 *
 * @since 0.2.0
 * @category reading
 */
export const list: Effect.Effect<ReadonlyArray<string>, CheckpointError | InvalidRunId, Checkpointer> = Effect.gen(
  function*() {
    const entries = yield* (yield* Checkpointer).read(indexLogId)
    const threads = new Set<string>()
    for (const [index, text] of entries.entries()) {
      const entry = yield* decodeIndexEntry(text).pipe(Effect.mapError((error) =>
        new CheckpointError({
          operation: "read",
          id: indexLogId,
          message: `entry ${index} of the threads' list is damaged: ${error.message}`,
          cause: error
        })
      ))
      if (entry._tag === "Added") threads.add(entry.thread)
      else threads.delete(entry.thread)
    }
    return [...threads]
  }
)

/**
 * Thread `thread`'s history: the items its finished runs added, as its last
 * compaction left them; none for a thread never run. Reads without taking the
 * thread's lease: a run executing on it adds nothing until it finishes.
 *
 * @example
 * ```ts
 * import { AgentLoop, Checkpointer, Thread } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   // A run on thread "user-42" adds its items to the thread once it finishes.
 *   yield* agent.run({ input: "My name is Ada.", thread: "user-42" })
 *   const history = yield* Thread.read("user-42")
 *   console.log(history.map((item) => item.type)) // [ 'message', 'message' ]
 *   yield* Thread.fork("user-42", "user-42-draft")
 *   console.log(yield* Thread.list) // [ 'user-42', 'user-42-draft' ]
 * })
 *
 * Effect.runPromise(program.pipe(
 *   Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Hello, Ada.")])))),
 *   Effect.provide(Checkpointer.layerMemory)
 * ))
 * ```
 *
 * @since 0.2.0
 * @category reading
 */
export const read = (
  thread: string
): Effect.Effect<ReadonlyArray<Item.Item>, CheckpointError | InvalidRunId, Checkpointer> =>
  Effect.flatMap(Checkpointer, (store) => store.read(logId(thread))).pipe(
    Effect.flatMap((entries) => fold(thread, entries)),
    Effect.map((folded) => folded.history)
  )

/**
 * A run on a thread as the thread's log tells it: the history the run
 * started from, and whether the thread holds the items it added (it finished
 * well).
 *
 * @since 0.3.0
 * @category models
 */
export interface RunStart {
  readonly history: ReadonlyArray<Item.Item>
  readonly added: boolean
}

/**
 * How run `run` started on thread `thread`, read without taking the thread's
 * lease (a run executing on it meanwhile is no obstacle); `undefined` when it
 * did not start there. A run's start does not change once written, unless the
 * thread is cleared.
 *
 * @since 0.3.0
 * @category reading
 */
export const started = (
  thread: string,
  run: string
): Effect.Effect<RunStart | undefined, CheckpointError | InvalidRunId, Checkpointer> =>
  Effect.flatMap(Checkpointer, (store) => store.read(logId(thread))).pipe(
    Effect.flatMap((entries) => fold(thread, entries, run)),
    Effect.map((folded) => folded.base === undefined ? undefined : { history: folded.base, added: folded.finished })
  )

/**
 * What a run on a thread adds to its own fingerprint: it is the same run only
 * from the same history.
 *
 * @since 0.3.0
 * @category running
 */
export const runFingerprint = (history: ReadonlyArray<Item.Item>): Effect.Effect<RunFingerprint.Fingerprint> =>
  Effect.map(RunFingerprint.digest(RunFingerprint.stableJson(history)), (digest) => ({ thread: digest }))

/**
 * Starts thread `to` as a copy of thread `from`'s history; `from` is
 * untouched, and each goes on on its own. Fails with `ThreadExists` when `to`
 * has a history already, and with `RunInProgress` while a run executes on it.
 *
 * @since 0.2.0
 * @category forking
 */
export const fork = (
  from: string,
  to: string
): Effect.Effect<void, OpenError | ThreadExists, Checkpointer> =>
  Effect.scoped(Effect.gen(function*() {
    const history = yield* read(from)
    const store = yield* Checkpointer
    const log = yield* store.open(logId(to), fingerprint)
    if (log.entries.length > 0) return yield* new ThreadExists({ thread: to })
    const forked = yield* encode(to, [{ _tag: "Forked", from, history }])
    yield* withIndex((index) => writeIndex(index, { _tag: "Added", thread: to }))
    yield* log.append(forked)
  }))

/**
 * Deletes thread `thread`: a run on it starts afresh. Its runs' own
 * checkpoints stay (see `Checkpointer`'s `clear`). Fails with `RunInProgress`
 * while a run executes on it.
 *
 * @since 0.2.0
 * @category deleting
 */
export const clear = (thread: string): Effect.Effect<void, OpenError, Checkpointer> =>
  // With the list's lease held, so that a run that starts the thread again lists it after.
  withIndex((index) =>
    Effect.flatMap(Checkpointer, (store) => store.clear(logId(thread))).pipe(
      Effect.andThen(writeIndex(index, { _tag: "Removed", thread }))
    )
  )

/**
 * A run's hold on its thread, while it executes.
 *
 * @since 0.2.0
 * @category models
 */
export interface Session {
  /** The history the run starts from, before its own input. */
  readonly history: ReadonlyArray<Item.Item>
  /** Records the run's final history on the thread, once (again, it does nothing). */
  readonly finished: (history: ReadonlyArray<Item.Item>) => Effect.Effect<void, CheckpointError>
}

/**
 * A `thread` option as the thread's options: an id alone is the thread,
 * never compacted ahead.
 *
 * @since 0.3.0
 * @category running
 */
export const options = (thread: string | ThreadOptions): ThreadOptions =>
  typeof thread === "string" ? { id: thread } : thread

/**
 * Opens thread `options.id` for run `run`, holding the thread's lease until
 * the scope closes. A new run starts from the thread's history, compacted
 * first when it holds more than `maxItems` items; a run executed again starts
 * from the history it started from the first time. `resumed` is the run's
 * start as {@link started} read it, when the caller went on from it: if the
 * thread no longer holds it (it was cleared meanwhile), the run is refused
 * with `CheckpointMismatch` (field `thread`) rather than started afresh from
 * another history.
 *
 * @since 0.2.0
 * @category running
 */
export const open = (
  options: ThreadOptions,
  run: string,
  resumed?: RunStart | undefined
): Effect.Effect<
  Session,
  OpenError | ThreadSuperseded | Compactor.CompactionError,
  Checkpointer | Scope.Scope
> =>
  Effect.gen(function*() {
    const thread = options.id
    const store = yield* Checkpointer
    const log = yield* store.open(logId(thread), fingerprint)
    const folded = yield* fold(thread, log.entries, run)
    let done = folded.finished
    const recorded = folded.base
    if (resumed !== undefined && recorded === undefined) {
      const [before, now] = yield* Effect.all([runFingerprint(resumed.history), runFingerprint(folded.history)])
      const differences = RunFingerprint.differences(before, now)
      if (differences.length > 0) return yield* new CheckpointMismatch({ id: run, differences })
    }
    if (recorded !== undefined && !done && folded.lastStarted !== run) {
      return yield* new ThreadSuperseded({ thread, run, by: folded.lastStarted! })
    }
    let history = recorded ?? folded.history
    if (recorded === undefined) {
      const writes: Array<Entry> = []
      if (options.maxItems !== undefined && history.length > options.maxItems) {
        const compactor = yield* Compactor.Compactor
        history = yield* compactor.compact(history)
        writes.push({ _tag: "Compacted", history })
      }
      writes.push({ _tag: "Started", run })
      const texts = yield* encode(thread, writes)
      if (log.entries.length === 0) yield* withIndex((index) => writeIndex(index, { _tag: "Added", thread }))
      yield* log.append(texts)
    }
    const base = history
    return {
      history: base,
      finished: (final) =>
        Effect.suspend(() => {
          if (done) return Effect.void
          return encode(thread, [{ _tag: "Ran", run, history: change(base, final) }]).pipe(
            Effect.flatMap((texts) => log.append(texts)),
            Effect.tap(() => Effect.sync(() => (done = true)))
          )
        })
    }
  })
