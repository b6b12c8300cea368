/**
 * The execution context: what a running step program knows about itself, and
 * how a step talks to the rest of it.
 *
 * Every function of a step (`execute`, `route`, `paths`, `merge`,
 * `prepareNext`, `onError`, `prompt`) gets the context as its last argument,
 * and code deeper down (a tool an `llm` step calls) finds it as a service:
 * `yield* ExecutionContext.ExecutionContext`. `Step.execute` makes one for the
 * program, and each `spawn` one for its sub-agent; the steps of a context
 * share its accounting, state and item log.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Tracer from "effect/Tracer"
import type { Cost } from "../Cost.ts"
import type { StepMeta } from "../StepMeta.ts"
import type { TokenUsage } from "../TokenUsage.ts"
import type * as Channel from "./Channel.ts"
import type { ItemLog } from "./ItemLog.ts"
import { Info } from "./StepError.ts"
import type { ExecutionCheckpointFailed, InvalidChannelValue, RecvTimeout } from "./StepError.ts"

/** An error an `every` step recorded and went on after: which step, what, and when (ms since the context started). */
export const RecordedError = Schema.Struct({
  stepId: Schema.String,
  error: Info,
  elapsed: Schema.Finite
})
export type RecordedError = typeof RecordedError.Type

/**
 * The context of a running step, with user state of type `S`.
 *
 * Counters and books are live: `tokens` and `cost` include every descendant's
 * (a spawned sub-agent's turns count in its parent's cost as they happen).
 * A step written for any state (`ExecutionContext<unknown>`) fits a program with
 * a typed state, so such a step should read the state, not set it.
 */
export interface ExecutionContext<out S = unknown> {
  /** The context's id: `Step.execute`'s `id` option (random by default), or `{parent id}/{spawn step id}` for a sub-agent. */
  readonly id: string
  /** The id of the step this context was handed to. */
  readonly stepId: string
  /** Steps of this context that have ended so far, successfully or not (a composite step counts once, and so does each of its children). */
  readonly stepCount: number
  /** Tokens used by this context and its descendants. */
  readonly tokens: TokenUsage
  /** Milliseconds since the context started, on the Effect clock. */
  readonly elapsed: number
  /** Cost in USD of this context and its descendants; `null` once a turn's model had no price (unknown is not free). */
  readonly cost: Cost
  /** The user state: `Step.execute`'s `state` option, or for a sub-agent its parent's state when it was spawned. */
  readonly state: S
  /** Replaces the state. */
  setState(state: S): void
  /** Replaces the state with `f` of it. */
  updateState(f: (state: S) => S): void
  /** The context that spawned this one (the context of its `spawn` step), or `null` for a program's own. */
  readonly parent: ExecutionContext | null
  /** Spawns between this context and the program's own: 0 for the program's. */
  readonly depth: number
  /** The span of the current step: `step.{kind} {id}`. */
  readonly span: Tracer.Span
  /** The conversation, for memory: `Step.execute`'s `threadId` (the context's id by default); a sub-agent's is its own id. */
  readonly threadId: string
  /** Who owns the conversation, for memory; a sub-agent keeps its parent's. */
  readonly resourceId: string | undefined
  /** The conversation its `llm` steps send to the model. */
  readonly itemLog: ItemLog
  /** What the last `llm` or `tool` step of this context reported: its tool calls, usage, cost and items. */
  readonly lastStepMeta: StepMeta | null
  /** Every error an `every` step of this context recorded and went on after, oldest first. */
  readonly errors: ReadonlyArray<RecordedError>
  /** Sends a value on a channel (see `Channel.send`). It is an Effect: yield it. */
  send<T>(channel: Channel.Channel<T>, value: T): Effect.Effect<void, InvalidChannelValue>
  /** Receives the next value of a channel, waiting at most `timeout` when given (see `Channel.recv`). */
  recv<T>(channel: Channel.Channel<T>, options?: Channel.RecvOptions): Effect.Effect<T, RecvTimeout>
  /** Takes a waiting value of a channel, or `null` when there is none. */
  tryRecv<T>(channel: Channel.Channel<T>): T | null
  /**
   * Ends the innermost `loop` around the current step, or the whole execution
   * when there is none, with `value` as its output: whatever still runs inside
   * it is interrupted. The value stands for that loop's (or program's) output,
   * so give one of its type.
   */
  complete(value: unknown): void
  /** Whether `complete` ended (or is ending) the innermost loop, or the execution. */
  readonly completed: boolean
  /** The value given to `complete`. */
  readonly completionValue: unknown
  /**
   * Interrupts this context's whole execution, every descendant included, at
   * once; the execution fails with `Aborted` carrying `reason`. For a spawned
   * sub-agent, its `spawn` step fails with it.
   */
  abort(reason?: string): void
  /**
   * Records the context as it is now (state, item log, usage and cost,
   * counters) with the execution's `Checkpointer`, so that an execution that
   * dies inside this step resumes it from this context: a long step saves its
   * progress in the state, and reads it back when it runs again. Does nothing
   * without a `Checkpointer` (or an execution `id`). The state must be JSON.
   */
  checkpoint(): Effect.Effect<void, ExecutionCheckpointFailed>
  /** Whether `abort` was called. */
  readonly aborted: boolean
  /** The reason given to `abort`. */
  readonly abortReason: string | undefined
}

/** The context of the current step, as a service: for code a step calls (a tool, a helper), provided to every step. */
export const ExecutionContext: Context.Service<ExecutionContext, ExecutionContext> = Context.Service<ExecutionContext>(
  "@agentloop/core/step/ExecutionContext"
)
