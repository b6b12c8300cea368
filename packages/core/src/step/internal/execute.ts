/**
 * A program's execution: its context, its frame, its first step, and, with a
 * `Checkpointer` and an execution id, its ledger.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import * as ThreadId from "../../agent/ThreadId.ts"
import { Checkpointer } from "../../Checkpointer.ts"
import type * as CheckpointVersion from "../../CheckpointVersion.ts"
import * as InvalidOptions from "../../InvalidOptions.ts"
import * as RunFingerprint from "../../RunFingerprint.ts"
import type { Toolkit } from "../../Toolkit.ts"
import type { ExecutionContext } from "../ExecutionContext.ts"
import type * as Step from "../StepAst.ts"
import { ExecutionCheckpointFailed } from "../StepError.ts"
import type * as StepEvent from "../StepEvent.ts"
import * as Ledger from "./ledger.ts"
import * as Marks from "./marks.ts"
import * as Outputs from "./outputs.ts"
import type { Sink } from "./runner.ts"
import { makeExecution, runChild, runFrame } from "./runtime.ts"
import * as Threads from "./thread.ts"
import { validate } from "./validate.ts"

/** How `execute` and `stream` run a program. */
export interface Options<RT = never> {
  /** The tools `llm` steps may offer (each step picks among them with its `tools`). */
  readonly toolkit?: Toolkit<RT> | undefined
  /** The conversation, for memory (default: the execution's id). */
  readonly threadId?: string | undefined
  /** Who owns the conversation, for memory. */
  readonly resourceId?: string | undefined
  /**
   * The execution's id: its context's `id`, the prefix of its sub-agents'
   * (default: a random one). With a `Checkpointer` in context, it is also the
   * key of the execution's record: executing again with the same id resumes it.
   */
  readonly id?: string | undefined
  /**
   * The version of the program's state, and how a state recorded at an older
   * version reaches it (see the `CheckpointVersion` module): each record
   * carries the version it was written at (version 1 without this option),
   * and resuming an execution recorded at a version no migration brings to
   * this one fails with `ExecutionCheckpointFailed`, its cause a
   * `CheckpointVersionMismatch`, before any step runs.
   */
  readonly stateVersioning?: CheckpointVersion.Versioning | undefined
  /**
   * The conversation the program belongs to (see `Thread`), with a
   * `Checkpointer` in context: the program's item log starts from the items
   * the thread's earlier runs (`AgentLoop` runs and step programs) added, and
   * the items the program adds go to the thread once it ends well. A thread
   * id, or the id with the size past which the thread's history is compacted
   * first (by the `Compactor` in context). The execution's `id` is its run on
   * the thread: executed again, it starts from the same history and adds its
   * items once. `threadId` (memory's) is another thing.
   *
   * @since 0.3.0
   */
  readonly thread?: Threads.ThreadOption | undefined
}

/** The options of a program whose steps read a user state of type `S`: its initial value. */
export interface StateOptions<S> {
  readonly state: S
}

/** What a program's execution needs: its steps' services and its tools', the context aside (each step has its own). */
export type ExecutionServices<R, RT> = Exclude<R | RT, ExecutionContext>

/** What shapes a program's record: its input, its first step, and the tools its steps may offer. */
export const fingerprint = (step: Step.Any, input: unknown, toolkit: Toolkit<unknown> | undefined) =>
  Effect.map(RunFingerprint.digest(RunFingerprint.stableJson(input)), (digest): RunFingerprint.Fingerprint => ({
    input: digest,
    program: `${step.kind} ${step.id}`,
    tools: [...(toolkit?.byName.keys() ?? [])].join(", ")
  }))

/** Where `Step.stream` sends a program's events. */
export type Emit = (event: StepEvent.StepEvent) => Effect.Effect<void>

/**
 * The sink of a recorded execution: each event it makes is noted in its
 * ledger and streamed, unless it is one the ledger replayed already (an
 * execution that goes on makes the events of what it replays again: a loop
 * asks its predicate again, a step cut off starts again).
 */
const recording = (ledger: Ledger.Ledger, stream: Emit | undefined): Sink => ({
  emit: (event, key) => {
    if (!Marks.isMarked(event)) {
      ledger.placed(event)
      if (stream !== undefined) return Effect.map(stream(event), () => ledger.delivered(event))
      ledger.delivered(event)
      return Effect.void
    }
    if (ledger.awaited.size > 0 && ledger.awaited.delete(Marks.identity(event, key))) return Effect.void
    // A note that could not be written ends the program, as any record does (see `program`).
    const noted = Effect.orDie(ledger.note({ event, key }))
    return stream === undefined ? noted : Effect.andThen(noted, stream(event))
  }
})

/**
 * Runs `step` on `input` as a new execution, sending its events to `stream`
 * (`Step.execute` and `Step.stream` give it their types), once the program is
 * checked (see `validate`: nothing runs when it cannot). With a
 * `Checkpointer` in context and an `id`, every completed step is recorded
 * with the events streamed before it, an execution run again streams what
 * its ledger recorded then skips the steps it recorded, and one that ended
 * streams what it recorded and returns its recorded output without running
 * anything.
 */
export const program = (
  step: Step.Any,
  input: unknown,
  options: (Options<unknown> & { readonly state?: unknown }) | undefined,
  stream: Emit | undefined
): Effect.Effect<unknown, unknown, unknown> =>
  Effect.gen(function*() {
    const refused = validate(step) ?? InvalidOptions.first(
      InvalidOptions.check("stateVersioning", options?.stateVersioning, InvalidOptions.versioning),
      InvalidOptions.outputVersioning(options?.toolkit?.tools ?? []),
      InvalidOptions.check("id", options?.id, ThreadId.notThreadLog),
      InvalidOptions.check("thread", options?.thread, ThreadId.option)
    )
    if (refused !== undefined) return yield* Effect.fail(refused)
    const clock = yield* Clock.Clock
    const id = options?.id ??
      `exec_${Math.abs(yield* Random.nextInt).toString(36)}_${clock.currentTimeMillisUnsafe().toString(36)}`
    // The ledger's lease, and the thread's, are held until the program ends. A program that started on its thread
    // before is known by the history it started from: its ledger is read first, and a finished one replays without
    // the thread's lease (another run may hold it). A new one starts from the thread's history as it is then.
    const thread = options?.thread === undefined ? undefined : yield* Threads.run(options.thread, id)
    const fresh = thread === undefined || thread.fingerprint !== undefined ? undefined : yield* thread.open
    const checkpointer = options?.id === undefined ? Option.none() : yield* Effect.serviceOption(Checkpointer)
    const ledger = Option.isNone(checkpointer)
      ? undefined
      : yield* Ledger.load(
        checkpointer.value,
        id,
        { ...(yield* fingerprint(step, input, options?.toolkit)), ...(thread?.fingerprint ?? fresh?.fingerprint) },
        options?.stateVersioning,
        stream !== undefined
      )
    // A recorded execution first streams what it recorded.
    if (ledger !== undefined && stream !== undefined) yield* Effect.forEach(ledger.replayed, stream, { discard: true })
    if (ledger?.finished !== undefined) return yield* Outputs.decodeOutput(id, step, ledger.finished)
    const session = fresh ?? (thread === undefined ? undefined : yield* thread.open)
    const sink = ledger !== undefined
      ? recording(ledger, stream)
      : stream === undefined
      ? undefined
      : { emit: (event: StepEvent.StepEvent) => stream(event) }
    const execution = makeExecution({
      id,
      threadId: options?.threadId ?? id,
      resourceId: options?.resourceId,
      parent: undefined,
      parentContext: null,
      clock,
      input,
      state: options?.state,
      history: session?.history
    })
    const output = yield* runFrame(
      execution.frame,
      runChild(step, input, {
        execution,
        toolkit: options?.toolkit,
        sink,
        frame: execution.frame,
        path: "",
        occurrences: new Map(),
        ledger
      })
    )
    // The thread gets the program's items before its ledger says it finished: executed again, a program whose
    // ledger finished runs nothing, and its thread has its items.
    if (session !== undefined) yield* session.finished(execution.itemLog.items)
    if (ledger !== undefined) yield* ledger.finish(yield* Outputs.encodeOutput(id, step, output))
    return output
  }).pipe(
    Effect.scoped,
    // A step that could not be recorded dies with the reason (so no step's error handling retries
    // it); the program fails with it, typed.
    Effect.catchCause((cause) => {
      const defect = Cause.findDefect(cause)
      return defect._tag === "Success" && defect.success instanceof ExecutionCheckpointFailed
        ? Effect.fail(defect.success)
        : Effect.failCause(cause)
    })
  )
