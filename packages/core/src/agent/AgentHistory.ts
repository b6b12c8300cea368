/**
 * The history of an `AgentLoop` run recorded in a `Checkpointer`: its
 * checkpoints, the run as it was at any of them, forks from any of them, and
 * the events a run executed again replays.
 *
 * Each entry of a run's log is a checkpoint (see `AgentCheckpoint`): `turn`
 * once the model answered turn `step`, `tool` as each of its calls ended,
 * `decision` once the turn was decided and the run went on, `finished` with
 * the result, and `fork` where a fork starts. The log records what changed,
 * not the input, so each function takes the run's options, as executing the
 * run again does (`runId` and `input` above all; `output` to decode a
 * structured result, `toolkit` to restore tool results).
 *
 * {@link fork} copies a run's checkpoints up to one of them into a new run,
 * optionally editing the history there (see {@link dropLastAnswer},
 * {@link replaceToolOutput}, {@link addMessage}); executing the new run with
 * the same options and its own `runId` goes on from there. The original is
 * not changed.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as Semaphore from "effect/Semaphore"
import type { Accounting } from "../Accounting.ts"
import { Checkpointer } from "../Checkpointer.ts"
import * as CheckpointStore from "../CheckpointStore.ts"
import type { CheckpointError, OpenError } from "../CheckpointStore.ts"
import type { Cost } from "../Cost.ts"
import * as InvalidOptions from "../InvalidOptions.ts"
import * as Item from "../Item.ts"
import * as RunHistory from "../RunHistory.ts"
import type { InvalidRunId } from "../RunId.ts"
import type * as Termination from "../Termination.ts"
import type { TokenUsage } from "../TokenUsage.ts"
import * as Toolkit from "../Toolkit.ts"
import * as Turn from "../Turn.ts"
import * as AgentCheckpoint from "./AgentCheckpoint.ts"
import type * as AgentEvent from "./AgentEvent.ts"
import * as AgentMachine from "./AgentMachine.ts"
import type { Options } from "./AgentOptions.ts"

/**
 * What an entry of a run's log is (`started`: a call of a tool that is not
 * idempotent about to run; `snapshot`: a decision written as the
 * run's whole state, which replaced the entries before it, see the
 * `compactAfter` option; `cancelled`: a person cancelled the run, see
 * {@link cancel}).
 *
 * @since 0.2.0
 * @category models
 */
export type Kind = "turn" | "started" | "tool" | "decision" | "snapshot" | "fork" | "finished" | "cancelled"

/**
 * One checkpoint of a run: entry `index` of its log, what it is, the turn it
 * belongs to (`step`: turns answered so far), when it was written (epoch
 * milliseconds; `undefined` for entries written before 0.2.0), the usage and
 * cost so far, and the items it added to the history (a turn's items, a tool
 * call's output, a decision's feedback, a fork's edit).
 *
 * @since 0.2.0
 * @category models
 */
export interface Checkpoint {
  readonly index: number
  readonly kind: Kind
  readonly step: number
  readonly time: number | undefined
  readonly usage: TokenUsage
  readonly cost: Cost
  readonly items: ReadonlyArray<Item.Item>
}

/**
 * A run as it was at a checkpoint: its history (what it had asked and been
 * answered, with the outputs of the calls that had ended), the turns it had
 * answered, its usage and cost, the calls of its last turn that had not ended
 * yet, and its result once it finished.
 *
 * @since 0.2.0
 * @category models
 */
export interface State<O> {
  readonly checkpoint: Checkpoint
  readonly history: ReadonlyArray<Item.Item>
  readonly turns: number
  readonly usage: TokenUsage
  readonly cost: Cost
  readonly pending: ReadonlyArray<Item.FunctionCall>
  readonly result: AgentEvent.RunResult<O> | undefined
}

/**
 * The options of a recorded run: those it was executed with, its `runId`
 * included.
 *
 * @since 0.2.0
 * @category models
 */
export type RunOptions<O, R, E, RU> = Options<O, R, E, RU> & { readonly runId: string }

/**
 * Why a run's history could not be read: no checkpoint, a store that failed,
 * options that cannot work, a log that does not decode, or a recorded tool
 * result the toolkit cannot restore.
 *
 * @since 0.2.0
 * @category errors
 */
export type ReadError = RunHistory.ReadError | InvalidOptions.InvalidOptions | AgentCheckpoint.RecoveryError

/**
 * Folds a run's log `entries` with `machine`, its options', keeping what `each` makes of each entry: from the
 * run's start, or on from `from`, the progress of a fold of the entries before them.
 */
const foldWith = <O, R, E, RU, A, E2>(
  machine: AgentMachine.Machine<O, R, RU>,
  options: Options<O, R, E, RU>,
  id: string,
  entries: ReadonlyArray<string>,
  each: (folded: AgentCheckpoint.Folded<O>, index: number) => Effect.Effect<A, E2>,
  from: AgentCheckpoint.Progress<O> = AgentCheckpoint.begin(machine.initial)
) =>
  AgentCheckpoint.foldFrom(entries, from, {
    output: AgentCheckpoint.output(options),
    toolkit: options.toolkit ?? Toolkit.make(),
    runId: id,
    account: (state, completed) => Effect.map(machine.books(state, completed), (booked) => booked.state)
  }, each)

/** Folds a run's log `entries` with the machine of its options, keeping what `each` makes of each entry. */
const foldAll = <O, R, E, RU, A>(
  options: Options<O, R, E, RU>,
  id: string,
  entries: ReadonlyArray<string>,
  each: (folded: AgentCheckpoint.Folded<O>, index: number) => A
) =>
  Effect.flatMap(
    AgentMachine.make(options),
    (machine) => foldWith(machine, options, id, entries, (folded, index) => Effect.succeed(each(folded, index)))
  )

/** The run as it was at checkpoint `index` of `entries` (its log), once the index is checked. */
const foldTo = <O, R, E, RU>(
  options: Options<O, R, E, RU>,
  id: string,
  entries: ReadonlyArray<string>,
  index: number
) =>
  Effect.gen(function*() {
    const at = yield* RunHistory.checkIndex(id, entries.length, index)
    // Each entry is a checkpoint: the run at one is the fold of the entries up to it.
    const { last } = yield* foldAll(options, id, entries.slice(0, at + 1), () => undefined)
    return { at, folded: last! }
  })

const describe = <O>(folded: AgentCheckpoint.Folded<O>, index: number): Checkpoint => {
  const { entry, state } = folded
  const at = { index, time: entry.time, usage: state.usage, cost: state.cost }
  switch (entry._tag) {
    case "Answered":
      return { ...at, kind: "turn", step: entry.step, items: entry.turn.items }
    case "ToolStarted":
      return { ...at, kind: "started", step: entry.step, items: [] }
    case "ToolDone":
      return { ...at, kind: "tool", step: entry.step, items: [entry.record.output] }
    case "Decided":
      return { ...at, kind: "decision", step: entry.step, items: entry.history.append }
    case "Snapshot":
      return { ...at, kind: "snapshot", step: state.steps, items: [] }
    case "Forked":
      return { ...at, kind: "fork", step: state.steps, items: entry.history?.append ?? [] }
    case "Finished":
      return { ...at, kind: "finished", step: state.steps, items: [] }
    case "Cancelled":
      return { ...at, kind: "cancelled", step: state.steps, items: [] }
  }
}

const pending = <O>(folded: AgentCheckpoint.Folded<O>): ReadonlyArray<Item.FunctionCall> => {
  const answered = folded.answered
  if (answered === undefined || folded.finished !== undefined) return []
  return Turn.functionCalls(answered.completed.turn).filter((_, index) => !answered.done.has(index))
}

const stateOf = <O>(folded: AgentCheckpoint.Folded<O>, index: number): State<O> => ({
  checkpoint: describe(folded, index),
  history: AgentCheckpoint.history(folded),
  turns: folded.state.steps,
  usage: folded.state.usage,
  cost: folded.state.cost,
  pending: pending(folded),
  result: folded.finished
})

/**
 * The checkpoints of run `options.runId`, oldest first. Reads the log without
 * taking the run's lease, so a run in progress can be watched.
 *
 * @since 0.2.0
 * @category reading
 */
export const checkpoints = <O, R, E, RU>(
  options: RunOptions<O, R, E, RU>
): Effect.Effect<ReadonlyArray<Checkpoint>, ReadError, Checkpointer> =>
  Effect.gen(function*() {
    const entries = yield* RunHistory.read(options.runId)
    return (yield* foldAll(options, options.runId, entries, describe)).each
  })

/**
 * Run `options.runId` as it was at checkpoint `index` (`-1` for the last, as
 * `Array.at` counts): `CheckpointNotFound` when it has none there.
 *
 * @since 0.2.0
 * @category reading
 */
export const stateAt = <O, R, E, RU>(
  options: RunOptions<O, R, E, RU>,
  index: number
): Effect.Effect<State<O>, ReadError | RunHistory.CheckpointNotFound, Checkpointer> =>
  Effect.gen(function*() {
    const { at, folded } = yield* foldTo(options, options.runId, yield* RunHistory.read(options.runId), index)
    return stateOf(folded, at)
  })

/**
 * A run on a thread starts from the thread's history, which its own log does not hold: it cannot be forked, read as
 * events or cancelled on its log alone.
 */
const withoutThread = <O, R, E, RU>(options: Options<O, R, E, RU>) =>
  options.thread === undefined ? Effect.void : Effect.fail(InvalidOptions.make({
    field: "thread",
    value: options.thread,
    expected: "none: a run on a thread is not forked, read or cancelled on its own log (fork the thread: Thread.fork)"
  }))

/**
 * Why a fork failed: the source's history could not be read, the index is out
 * of range, the new run already has checkpoints, either run could not be
 * opened (the source is being executed, or the options are not the source's:
 * `CheckpointMismatch`), the edit is at a checkpoint with calls pending
 * (`UneditableCheckpoint`: the history there has calls without outputs,
 * which no model accepts; fork at the turn's last call, or later), or the
 * run is on a thread (`InvalidOptions`: fork the thread with `Thread.fork`).
 *
 * @since 0.2.0
 * @category errors
 */
export type ForkError =
  | ReadError
  | RunHistory.CheckpointNotFound
  | RunHistory.RunExists
  | OpenError
  | RunHistory.UneditableCheckpoint

/**
 * An edit of a run's history at a checkpoint: the history there, in and out.
 * Keep the items that stay as they are (the same objects), so the fork
 * records only what changed.
 *
 * @since 0.2.0
 * @category models
 */
export type Edit = (history: ReadonlyArray<Item.Item>) => ReadonlyArray<Item.Item>

/**
 * Starts run `options.runId` from checkpoint `at` of run `from` (`-1` for the
 * last), then executing it (`AgentLoop.run` with the same options) goes on
 * from there: between two turns, in the middle of a turn's tools, or finished.
 * With `edit`, the history at the checkpoint is edited first and the fork is
 * between two turns: its next turn asks the model with the edited history.
 *
 * The fork is recorded with the fingerprint of `options`, and the source run
 * is opened with it too: `options` must be those of the source run
 * (`CheckpointMismatch` otherwise), so the fork executes with them. The
 * source is not changed, but is opened (its lease taken, briefly): forking a
 * run that is being executed fails with `RunInProgress`.
 *
 * @example
 * ```ts
 * import { AgentHistory, AgentLoop, Checkpointer } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 *
 * const options = { input: "Name a colour", runId: "colour" }
 * const run = (runId: string, answer: string) =>
 *   Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run({ ...options, runId })).pipe(
 *     Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn(answer)]))))
 *   )
 *
 * const program = Effect.gen(function*() {
 *   yield* run("colour", "Blue")
 *   // Another answer to the same question: the last one dropped, the model asked again.
 *   yield* AgentHistory.fork({ ...options, runId: "colour-2", from: "colour", at: -1, edit: AgentHistory.dropLastAnswer })
 *   const again = yield* run("colour-2", "Green")
 *   console.log(again._tag === "Stopped" && again.output) // Green
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Checkpointer.layerMemory)))
 * ```
 *
 * @since 0.2.0
 * @category forking
 */
export const fork = <O, R, E, RU>(
  options: RunOptions<O, R, E, RU> & {
    /** The run to fork. */
    readonly from: string
    /** The checkpoint the fork starts from. */
    readonly at: number
    readonly edit?: Edit | undefined
  }
): Effect.Effect<void, ForkError, Checkpointer> =>
  Effect.gen(function*() {
    yield* withoutThread(options)
    const { from, edit, runId } = options
    const fingerprint = yield* AgentCheckpoint.fingerprint(options)
    const encode = AgentCheckpoint.encode(AgentCheckpoint.output(options), runId)
    yield* RunHistory.fork({
      from,
      to: runId,
      fingerprint,
      entries: (recorded) =>
        Effect.gen(function*() {
          const { at, folded: there } = yield* foldTo(options, from, recorded, options.at)
          if (edit !== undefined && pending(there).length > 0) {
            return yield* new RunHistory.UneditableCheckpoint({
              id: from,
              index: at,
              reason: `calls of turn ${there.state.steps} have not ended there`
            })
          }
          const before = AgentCheckpoint.history(there)
          const forked = yield* encode({
            _tag: "Forked",
            from,
            index: at,
            ...(edit === undefined ? {} : { history: AgentCheckpoint.change(before, edit(before)) })
          })
          return [...recorded.slice(0, at + 1), forked]
        })
    })
  })

/**
 * The events a run executed again replays for one entry of its log, folded
 * (see `AgentCheckpoint.fold`): for a turn's, `TurnStarted` and
 * `TurnCompleted` (with `accounting` of the run then); for a call's, its
 * `ToolResult`; for a decision's, its `Verdict` and `Feedback`; for the
 * result's, `Finished`. The model's deltas and tools' progress are not
 * recorded: a replayed turn arrives whole, in its `TurnCompleted`.
 *
 * @since 0.2.0
 * @category replaying
 */
export const replay = <O>(
  folded: AgentCheckpoint.Folded<O>,
  accounting: (state: AgentMachine.State) => Effect.Effect<Accounting>
): Effect.Effect<ReadonlyArray<AgentEvent.AgentEvent<O>>> => {
  const { entry, state } = folded
  switch (entry._tag) {
    case "Answered": {
      const { cost, step, turn } = entry
      return Effect.map(accounting(state), (accounting) => [
        { _tag: "TurnStarted", step },
        { _tag: "TurnCompleted", step, turn, cost, accounting }
      ])
    }
    case "ToolDone":
      return Effect.succeed([{ _tag: "ToolResult", step: entry.step, ...entry.record }])
    case "Decided":
      return Effect.succeed(entry.events ?? [])
    // A call's start shows as its result; what a snapshot replaced is no longer recorded; a fork's start tells
    // nothing; a cancellation is the run's termination, not an event.
    case "ToolStarted":
    case "Snapshot":
    case "Forked":
    case "Cancelled":
      return Effect.succeed([])
    case "Finished":
      // The result as the fold read it: a submitted value brought to its finish tool's output version.
      return Effect.succeed([...(entry.events ?? []), { _tag: "Finished", result: folded.finished ?? entry.result }])
  }
}

/**
 * What a recorded run's log replays, read without executing the run: the
 * events {@link replay} makes of its entries, and how it ended: with its
 * `Finished` event (the last of `events`), with the `Halted` of a person's
 * cancellation, or not yet (`undefined`: running, cut off, ended with an
 * error termination, or never recorded).
 *
 * @since 0.3.0
 * @category models
 */
export interface Replayed<O> {
  readonly events: ReadonlyArray<AgentEvent.AgentEvent<O>>
  readonly ended: AgentEvent.Finished<O, unknown> | Termination.Halted | undefined
}

/**
 * Why a recorded run's events could not be read: a store that failed, an
 * invalid run id, options that cannot work (a run on a thread, whose history
 * starts from its thread's), a log that does not decode, or a recorded tool
 * result the toolkit cannot restore.
 *
 * @since 0.3.0
 * @category errors
 */
export type EventsError =
  | CheckpointError
  | InvalidRunId
  | InvalidOptions.InvalidOptions
  | AgentCheckpoint.RecoveryError

/**
 * The events executing run `options.runId` again would replay first (see
 * {@link replay}), read from its log without taking its lease and without
 * executing anything: a UI shows a run another executor is running, or one
 * that ended, this way ({@link follow} reads on as its log grows). A run
 * never recorded has none. Runs on a thread are refused (`InvalidOptions`):
 * their history starts from their thread's.
 *
 * @since 0.3.0
 * @category reading
 */
export const events = <O, R, E, RU>(
  options: RunOptions<O, R, E, RU>
): Effect.Effect<Replayed<O>, EventsError, Checkpointer> => Effect.flatMap(follow(options), (follower) => follower.read)

/**
 * What a {@link Follower} read: the events of the entries appended to the
 * run's log since its last read (every entry's on its first), and how the
 * run ended (see {@link Replayed}). `restarted`: the log was compacted or
 * pruned since the last read, so its entries were read from its start
 * again, and `events` are those of the whole log as it is now: some of them
 * were read before.
 *
 * @since 0.3.0
 * @category models
 */
export interface Followed<O> extends Replayed<O> {
  readonly restarted: boolean
}

/**
 * Reads a recorded run's events as its log grows (see {@link follow}): each
 * `read` reads only the entries appended since the one before, and folds
 * them on from where it stopped. Reads run one at a time.
 *
 * @since 0.3.0
 * @category models
 */
export interface Follower<O> {
  readonly read: Effect.Effect<Followed<O>, EventsError, Checkpointer>
}

/**
 * What a follower's reads folded so far, the last entry they read (read again and compared, to see that the log is
 * the one they read), and the last event they replayed.
 */
interface Reached<O> {
  readonly progress: AgentCheckpoint.Progress<O>
  readonly last: string | undefined
  readonly lastEvent: AgentEvent.AgentEvent<O> | undefined
}

/**
 * A reader of run `options.runId`'s events as another executor records them
 * (see {@link events}): its first `read` reads the whole log, and each after
 * reads the entries appended since (with `CheckpointStore.readFrom`, the
 * last one read before included, to compare) and decodes only those, so
 * following a long run costs what it appends, not its length at every look.
 * A log compacted or pruned in between (its entry there is another, or it
 * is shorter) is read from its start again (`restarted`).
 *
 * @example
 * ```ts
 * import { AgentHistory, AgentLoop, Checkpointer } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 *
 * const options = { input: "Say hello", runId: "followed-1" }
 *
 * const program = Effect.gen(function*() {
 *   const follower = yield* AgentHistory.follow(options)
 *   console.log((yield* follower.read).events.length) // 0: not recorded yet
 *   yield* Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run(options))
 *   const read = yield* follower.read
 *   console.log(read.events.map((event) => event._tag), read.ended?._tag)
 *   // [ 'TurnStarted', 'TurnCompleted', 'Verdict', 'Finished' ] Finished
 *   console.log((yield* follower.read).events.length) // 0: nothing new
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")])
 * Effect.runPromise(program.pipe(
 *   Effect.provide(AgentLoop.layer.pipe(Layer.provide(model))),
 *   Effect.provide(Checkpointer.layerMemory)
 * ))
 * ```
 *
 * @since 0.3.0
 * @category reading
 */
export const follow = <O, R, E, RU>(options: RunOptions<O, R, E, RU>): Effect.Effect<Follower<O>> =>
  Effect.sync(() => {
    const lock = Semaphore.makeUnsafe(1)
    let before: Reached<O> | undefined
    const { runId } = options

    /** The entries after those read before, and whether they are the whole log again (it was compacted or pruned). */
    const entries = (store: CheckpointStore.Store) =>
      Effect.gen(function*() {
        const count = before?.progress.count ?? 0
        if (count === 0) return { entries: yield* CheckpointStore.readFrom(store, runId, 0), restarted: false }
        const again = yield* CheckpointStore.readFrom(store, runId, count - 1)
        if (again[0] === before?.last) return { entries: again.slice(1), restarted: false }
        return { entries: yield* CheckpointStore.readFrom(store, runId, 0), restarted: true }
      })

    const read = Effect.gen(function*() {
      yield* withoutThread(options)
      const found = yield* entries(yield* Checkpointer)
      const from = found.restarted ? undefined : before
      const machine = yield* AgentMachine.make(options)
      const { each, progress } = yield* foldWith(
        machine,
        options,
        runId,
        found.entries,
        (folded) => replay(folded, machine.accounting),
        from?.progress
      )
      const replayed = each.flat()
      const ending = replayed.at(-1) ?? from?.lastEvent
      before = { progress, last: found.entries.at(-1) ?? from?.last, lastEvent: ending }
      const position = AgentCheckpoint.position(progress.last, machine.initial)
      return {
        events: replayed,
        restarted: found.restarted,
        ended: ending?._tag === "Finished"
          ? ending
          : position._tag === "Cancelled"
          ? AgentCheckpoint.cancellation(position.reason, yield* machine.accounting(position.state))
          : undefined
      }
    })
    return { read: lock.withPermits(1)(read) }
  })

/**
 * Why a run could not be cancelled: {@link EventsError}, or its log could
 * not be opened (`RunInProgress`: an executor runs it, which must stop first;
 * `CheckpointMismatch`: the options are not the run's) or written.
 *
 * @since 0.3.0
 * @category errors
 */
export type CancelError = EventsError | OpenError

/**
 * Records that a person cancelled run `options.runId`, saying `reason`
 * (default `"cancelled"`): executing it again does not go on, and fails with
 * `Halted` whose `source` is `"person"` (after replaying its events). Answers
 * whether this call cancelled it: `false` for a run that had finished or was
 * cancelled before, which is left as it is. A run never recorded is recorded
 * as cancelled, so it never runs.
 *
 * The run's log is opened, its lease taken, with the fingerprint of
 * `options`: a run being executed fails with `RunInProgress` (stop it first:
 * `ResumableStream.cancel` interrupts a run its server executes, then
 * records this), and other options with `CheckpointMismatch`. Runs on a
 * thread are refused (`InvalidOptions`).
 *
 * @example
 * ```ts
 * import { AgentHistory, AgentLoop, Checkpointer } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 *
 * const options = { input: "Write a long essay", runId: "essay-1" }
 * const program = Effect.gen(function*() {
 *   console.log(yield* AgentHistory.cancel(options, { reason: "not needed any more" })) // true
 *   // Executed after, the run fails at once with the person's cancellation: the model is not asked.
 *   const agent = yield* AgentLoop.AgentLoop
 *   const halted = yield* Effect.flip(agent.run(options))
 *   console.log(halted._tag === "Halted" && `${halted.source}: ${halted.reason}`) // person: not needed any more
 * })
 *
 * Effect.runPromise(program.pipe(
 *   Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer([])))),
 *   Effect.provide(Checkpointer.layerMemory)
 * ))
 * ```
 *
 * @since 0.3.0
 * @category cancelling
 */
export const cancel = <O, R, E, RU>(
  options: RunOptions<O, R, E, RU>,
  cancelOptions: { readonly reason?: string | undefined } = {}
): Effect.Effect<boolean, CancelError, Checkpointer> =>
  Effect.scoped(Effect.gen(function*() {
    yield* withoutThread(options)
    const { runId } = options
    const checkpointer = yield* Checkpointer
    const log = yield* checkpointer.open(runId, yield* AgentCheckpoint.fingerprint(options))
    const { last } = yield* foldAll(options, runId, log.entries, () => undefined)
    if (last?.finished !== undefined || last?.cancelled !== undefined) return false
    const entry = yield* AgentCheckpoint.encode(AgentCheckpoint.output(options), runId)({
      _tag: "Cancelled",
      reason: cancelOptions.reason ?? "cancelled"
    })
    // Like a result, it ends the run: `prune` expires it, or keeps it alone.
    yield* log.append([entry], { finished: true })
    return true
  }))

/**
 * Removes the model's last answer from the end of a history: the items it
 * wrote after the last item it did not (a message of the user, the system or
 * the developer, or a tool's output). Forking with it asks the model again.
 *
 * @since 0.2.0
 * @category edits
 */
export const dropLastAnswer: Edit = (history) => {
  let end = history.length
  while (end > 0 && isModelItem(history[end - 1]!)) end--
  return history.slice(0, end)
}

const isModelItem = (item: Item.Item): boolean =>
  item.type === "function_call" || item.type === "reasoning" || (item.type === "message" && item.role === "assistant")

/**
 * Replaces the output the model reads for call `callId` with `output`.
 *
 * @since 0.2.0
 * @category edits
 */
export const replaceToolOutput = (callId: string, output: string): Edit => (history) =>
  history.map((item) => item.type === "function_call_output" && item.call_id === callId ? { ...item, output } : item)

/**
 * Adds a user message with `text` at the end of the history.
 *
 * @since 0.2.0
 * @category edits
 */
export const addMessage = (text: string): Edit => (history) => [...history, Item.userMessage(text, "user_fork")]
