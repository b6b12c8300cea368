/**
 * The history of a step program's execution recorded in a `Checkpointer`:
 * its checkpoints, what its ledger held at any of them, and forks from any of
 * them.
 *
 * Each entry of an execution's ledger is a checkpoint: `step` when a step
 * completed (its output, and its execution's context then), `saved` when a
 * step's `checkpoint()` saved its context, `turn` once an `llm` step's model
 * answered, `tool` as each of its calls ended, `streamed` when the events the
 * program streamed were written on their own (many came with no step
 * completing), and `finished` with the program's output. Sub-agents (`spawn`) record in their parent's ledger,
 * under their own execution id. A ledger holds everything it needs, so
 * reading one takes its id only.
 *
 * {@link fork} copies an execution's checkpoints up to one of them into a new
 * execution id: executing the program again with that id skips the steps
 * recorded there and runs the rest, as after a crash at that checkpoint. The
 * original is not changed. `Step.stream` of an execution, a fork's included,
 * replays the events its checkpoints recorded before it goes on.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import * as AgentCheckpoint from "../agent/AgentCheckpoint.ts"
import type { Checkpointer } from "../Checkpointer.ts"
import type { CheckpointMismatch, OpenError } from "../CheckpointStore.ts"
import * as Cost from "../Cost.ts"
import * as InvalidOptions from "../InvalidOptions.ts"
import type * as Item from "../Item.ts"
import * as RunHistory from "../RunHistory.ts"
import * as TokenUsage from "../TokenUsage.ts"
import type { Toolkit } from "../Toolkit.ts"
import type { RecordedError } from "./ExecutionContext.ts"
import * as Entries from "./internal/entries.ts"
import { fingerprint } from "./internal/execute.ts"
import * as Marks from "./internal/marks.ts"
import * as Replay from "./internal/replay.ts"
import type * as StepAst from "./StepAst.ts"

/**
 * What an entry of an execution's ledger is.
 *
 * @since 0.2.0
 * @category models
 */
export type Kind = "step" | "saved" | "turn" | "started" | "tool" | "finished" | "streamed"

/**
 * One checkpoint of an execution: entry `index` of its ledger, what it is,
 * the execution it belongs to (the program's id, or a sub-agent's), the step
 * (its `stepId` and its `key`: its position in the program; none for
 * `finished`), when it was written (epoch milliseconds; `undefined` for
 * entries written before 0.2.0), that execution's usage and cost so far, the
 * output (of the step, or of the program) and the items it added to the
 * execution's item log.
 *
 * @since 0.2.0
 * @category models
 */
export interface Checkpoint {
  readonly index: number
  readonly kind: Kind
  readonly execution: string
  readonly stepId: string | undefined
  readonly key: string | undefined
  readonly time: number | undefined
  readonly tokens: TokenUsage.TokenUsage
  readonly cost: Cost.Cost
  readonly output: Schema.Json | undefined
  readonly items: ReadonlyArray<Item.Item>
}

/**
 * An execution's context as its ledger last wrote it: its item log, its user
 * state, its books and counters, and the errors its steps recorded.
 *
 * @since 0.2.0
 * @category models
 */
export interface Context {
  readonly items: ReadonlyArray<Item.Item>
  readonly state: Schema.Json | undefined
  readonly tokens: TokenUsage.TokenUsage
  readonly cost: Cost.Cost
  readonly stepCount: number
  readonly turns: number
  readonly errors: ReadonlyArray<RecordedError>
}

/**
 * What an execution's ledger held at a checkpoint: the steps completed (in
 * the order they completed, with their outputs), each execution's context as
 * last written, and the program's output once it ended.
 *
 * @since 0.2.0
 * @category models
 */
export interface State {
  readonly checkpoint: Checkpoint
  readonly completed: ReadonlyArray<{ readonly execution: string; readonly key: string; readonly output: Schema.Json }>
  readonly contexts: ReadonlyMap<string, Context>
  readonly output: Schema.Json | undefined
}

/**
 * Why an execution's history could not be read: no checkpoint, a store that
 * failed, or a ledger that does not decode.
 *
 * @since 0.2.0
 * @category errors
 */
export type ReadError = RunHistory.ReadError | Schema.SchemaError

/** A context as the ledger restores it, as this module shows it. */
const contextOf = ({ cost, errors, items, state, stepCount, tokens, turns }: Entries.Restorable): Context => ({
  items,
  state,
  tokens,
  cost,
  stepCount,
  turns,
  errors
})

/** The checkpoints of execution `id`'s ledger `entries`, and what the ledger held after the last one. */
const fold = (id: string, entries: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const read = Entries.reader()
    const contexts = new Map<string, Context>()
    const completed: Array<State["completed"][number]> = []
    let output: Schema.Json | undefined
    const checkpoints: Array<Checkpoint> = []
    for (const [index, text] of entries.entries()) {
      const { entry } = yield* Entries.decode(text)
      const books = (execution: string) => contexts.get(execution) ?? { tokens: TokenUsage.empty, cost: Cost.zero }
      const at = { index, time: entry.time }
      // A step's checkpoint: where it stands in the ledger, and what the entry added.
      const ofStep = (
        step: { readonly execution: string; readonly key: string },
        fields: Pick<Checkpoint, "kind" | "tokens" | "cost" | "output" | "items">
      ): Checkpoint => ({
        ...at,
        execution: step.execution,
        stepId: Marks.stepIdOf(step.key),
        key: step.key,
        ...fields
      })
      // A checkpoint of the program's own: its books hold its sub-agents' usage and cost too.
      const ofProgram = (kind: Kind, output: Schema.Json | undefined): Checkpoint => {
        const { cost, tokens } = books(id)
        return { ...at, kind, execution: id, stepId: undefined, key: undefined, tokens, cost, output, items: [] }
      }
      let checkpoint: Checkpoint
      switch (entry._tag) {
        case "Completed":
        case "Saved": {
          const context = contextOf(read(entry.execution, entry.context))
          contexts.set(entry.execution, context)
          const stepOutput = entry._tag === "Completed" ? entry.output : undefined
          if (entry._tag === "Completed") {
            completed.push({ execution: entry.execution, key: entry.key, output: entry.output })
          }
          checkpoint = ofStep(entry, {
            kind: entry._tag === "Completed" ? "step" : "saved",
            tokens: context.tokens,
            cost: context.cost,
            output: stepOutput,
            items: entry.context.log.append
          })
          break
        }
        case "Answered": {
          const before = books(entry.execution)
          checkpoint = ofStep(entry, {
            kind: "turn",
            tokens: TokenUsage.add(before.tokens, entry.turn.usage),
            cost: Cost.add(before.cost, entry.cost),
            output: undefined,
            items: entry.turn.items
          })
          break
        }
        case "ToolStarted":
        case "ToolDone": {
          const { cost, tokens } = books(entry.execution)
          checkpoint = entry._tag === "ToolStarted"
            ? ofStep(entry, { kind: "started", tokens, cost, output: undefined, items: [] })
            : ofStep(entry, { kind: "tool", tokens, cost, output: undefined, items: [entry.record.output] })
          break
        }
        case "Streamed":
          checkpoint = ofProgram("streamed", undefined)
          break
        case "Finished":
          output = entry.output
          checkpoint = ofProgram("finished", output)
          break
      }
      checkpoints.push(checkpoint)
    }
    const last = checkpoints.at(-1)
    const state: State | undefined = last === undefined ? undefined : { checkpoint: last, completed, contexts, output }
    return { checkpoints, state }
  })

/**
 * The checkpoints of execution `id`, oldest first. Reads the ledger without
 * taking the execution's lease, so one in progress can be watched.
 *
 * @example
 * ```ts
 * import { Checkpointer, Step, StepHistory } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * const double = Step.run({ id: "double", execute: (n: number) => n * 2 })
 * const program = Effect.gen(function*() {
 *   // An execution with an id records each completed step in the Checkpointer.
 *   console.log(yield* Step.execute(double, 21, { id: "job-1" })) // 42
 *   const checkpoints = yield* StepHistory.checkpoints("job-1")
 *   console.log(checkpoints.map((checkpoint) => checkpoint.kind)) // [ 'step', 'finished' ]
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Checkpointer.layerMemory)))
 * ```
 *
 * @since 0.2.0
 * @category reading
 */
export const checkpoints = (id: string): Effect.Effect<ReadonlyArray<Checkpoint>, ReadError, Checkpointer> =>
  Effect.map(
    Effect.flatMap(RunHistory.read(id), (entries) => fold(id, entries)),
    (folded) => folded.checkpoints
  )

/**
 * What execution `id`'s ledger held at checkpoint `index` (`-1` for the last):
 * `CheckpointNotFound` when it has none there.
 *
 * @since 0.2.0
 * @category reading
 */
export const stateAt = (
  id: string,
  index: number
): Effect.Effect<State, ReadError | RunHistory.CheckpointNotFound, Checkpointer> =>
  Effect.gen(function*() {
    const entries = yield* RunHistory.read(id)
    const at = yield* RunHistory.checkIndex(id, entries.length, index)
    // Each entry is a checkpoint: the ledger at one is the fold of the entries up to it.
    const { state } = yield* fold(id, entries.slice(0, at + 1))
    return state!
  })

/**
 * Why a fork failed: the source's ledger could not be read, the index is out
 * of range, the new execution already has checkpoints, either could not be
 * opened (the source is being executed, or the program, input or tools are
 * not the source's: `CheckpointMismatch`), or the source ran on a thread
 * (`InvalidOptions`, field `thread`: fork the thread with `Thread.fork`).
 *
 * @since 0.2.0
 * @category errors
 */
export type ForkError =
  | ReadError
  | RunHistory.CheckpointNotFound
  | RunHistory.RunExists
  | RunHistory.UneditableCheckpoint
  | OpenError
  | InvalidOptions.InvalidOptions

/**
 * `error`, opening execution `from` for a fork, as the fork's failure: a
 * program that ran on a thread started from the thread's history, which its
 * ledger does not hold, and its fingerprint says so (see
 * `Thread.runFingerprint`); a fork, which has no thread, is refused for it.
 */
const refusedOnThread = (
  from: string,
  error: CheckpointMismatch
): Effect.Effect<never, CheckpointMismatch | InvalidOptions.InvalidOptions> => {
  const thread = error.id === from
    ? error.differences.find((difference) => difference.field === "thread" && difference.given === null)
    : undefined
  if (thread === undefined) return Effect.fail(error)
  return Effect.fail(InvalidOptions.make({
    field: "thread",
    value: thread.recorded,
    expected: `none: execution "${from}" ran on a thread, and a program on a thread is not forked on its own ` +
      "ledger (fork the thread: Thread.fork)"
  }))
}

/** An entry of execution `from`'s ledger as execution `id`'s: its execution, or sub-agent (`<from>/…`), renamed. */
const renamed = (entry: Entries.Entry, from: string, id: string): Entries.Entry => {
  const rename = (execution: string) =>
    execution === from || execution.startsWith(`${from}/`) ? `${id}${execution.slice(from.length)}` : execution
  const events = entry.events?.map((mark) => Marks.renamed(mark, rename))
  const marked = events === undefined ? entry : { ...entry, events }
  return marked._tag === "Finished" || marked._tag === "Streamed"
    ? marked
    : { ...marked, execution: rename(marked.execution) }
}

/**
 * An edit of an execution's context at a checkpoint: the context there, in
 * and out (keep the items that stay the same objects, so the fork records
 * only what changed).
 *
 * @since 0.2.0
 * @category models
 */
export type Edit = (context: Context) => Context

/**
 * `entries` with the last context execution `execution` recorded in them
 * edited; `undefined` when it recorded none.
 */
const editLast = (
  entries: ReadonlyArray<Entries.Entry>,
  execution: string,
  edit: Edit
): ReadonlyArray<Entries.Entry> | undefined => {
  const last = entries.findLastIndex((entry) =>
    (entry._tag === "Completed" || entry._tag === "Saved") && entry.execution === execution
  )
  const entry = entries[last]
  if (entry === undefined || (entry._tag !== "Completed" && entry._tag !== "Saved")) return undefined
  // The item log each execution had written before it: the base of the edited entry's change.
  const logs = new Map<string, ReadonlyArray<Item.Item>>()
  const read = Entries.reader(logs)
  for (const before of entries.slice(0, last)) {
    if (before._tag === "Completed" || before._tag === "Saved") read(before.execution, before.context)
  }
  const base = logs.get(execution) ?? []
  const unedited = read(execution, entry.context)
  const { items, state, ...books } = edit(contextOf(unedited))
  const { state: _, ...kept } = entry.context
  const context = {
    ...kept,
    ...books,
    log: AgentCheckpoint.change(base, items),
    ...(state === undefined ? {} : { state })
  }
  // A turn of the execution after it recorded its accounting against the context before the edit: it is written
  // out whole, so that the fork replays its `TurnCompleted` as it was streamed.
  const after = entries.slice(last + 1).map((later): Entries.Entry => {
    if (later._tag !== "Answered" || later.execution !== execution) return later
    const recorded = later.turnCompleted
    if (later.step === undefined || recorded === undefined) return later
    const { lastItems, ...accounting } = Replay.accountingOf(
      unedited,
      { turn: later.turn, cost: later.cost, step: later.step },
      recorded
    )
    return { ...later, turnCompleted: { ...accounting, lastItems } }
  })
  return [...entries.slice(0, last), { ...entry, context }, ...after]
}

/**
 * Starts execution `id` from checkpoint `at` of execution `from` (`-1` for
 * the last): its ledger is `from`'s up to that checkpoint (its sub-agents'
 * execution ids renamed after `id`), so executing
 * `step` on `input` with `id` (and the same `toolkit`) skips the steps
 * recorded there and runs the rest. The fork is recorded with the program's
 * fingerprint, and `from` is opened with it too: the program, input and
 * tools must be the source's (`CheckpointMismatch` otherwise). `from` is not
 * changed, but is opened (its lease taken, briefly). A program that ran on a
 * thread is not forked on its own (`InvalidOptions`, field `thread`): it
 * started from the thread's history, which its ledger does not hold; fork the
 * thread (`Thread.fork`) and run the program on the fork.
 *
 * With `edit`, the last context the program's execution recorded up to the
 * checkpoint (when a step completed, or saved its context) is edited first:
 * its item log, its state, its books. The steps that run in the fork start
 * from it. A checkpoint before any such record cannot be edited
 * (`UneditableCheckpoint`).
 *
 * @since 0.2.0
 * @category forking
 */
export const fork = <RT = never>(
  step: StepAst.Any,
  input: unknown,
  options: {
    /** The new execution's id. */
    readonly id: string
    /** The execution to fork. */
    readonly from: string
    /** The checkpoint the fork starts from. */
    readonly at: number
    readonly toolkit?: Toolkit<RT> | undefined
    readonly edit?: Edit | undefined
  }
): Effect.Effect<void, ForkError, Checkpointer> =>
  Effect.gen(function*() {
    const { at, from, id } = options
    yield* RunHistory.fork({
      from,
      to: id,
      fingerprint: yield* fingerprint(step, input, options.toolkit),
      entries: (recorded) =>
        Effect.gen(function*() {
          const index = yield* RunHistory.checkIndex(from, recorded.length, at)
          // Each entry keeps the version of the state it was written at.
          const kept = yield* Effect.forEach(
            recorded.slice(0, index + 1),
            (text) =>
              Effect.map(Entries.decode(text), ({ entry, version }) => ({ entry: renamed(entry, from, id), version }))
          )
          const entries = kept.map(({ entry }) => entry)
          const edited = options.edit === undefined ? entries : editLast(entries, id, options.edit)
          if (edited === undefined) {
            return yield* new RunHistory.UneditableCheckpoint({
              id: from,
              index,
              reason: "no step had recorded the execution's context there"
            })
          }
          return yield* Effect.forEach(edited, (entry, i) => Entries.encode({ entry, version: kept[i]!.version }))
        })
    }).pipe(Effect.catchTag("CheckpointMismatch", (error) => refusedOnThread(from, error)))
  })
