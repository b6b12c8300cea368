/**
 * The context a step's functions get: a view of its execution, with the
 * step's span and the frame its `complete` ends.
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import type * as Tracer from "effect/Tracer"
import * as Channel from "../Channel.ts"
import type { ExecutionContext } from "../ExecutionContext.ts"
import type { ItemLog } from "../ItemLog.ts"
import type { ExecutionCheckpointFailed } from "../StepError.ts"
import type { Completion, Execution } from "./execution.ts"

/** The context of one step of `execution`, whose `complete` ends `frame`. */
export class View<S> implements ExecutionContext<S> {
  readonly #execution: Execution<S>
  readonly #frame: Completion
  readonly span: Tracer.Span
  readonly stepId: string
  readonly checkpoint: () => Effect.Effect<void, ExecutionCheckpointFailed>
  constructor(
    execution: Execution<S>,
    frame: Completion,
    span: Tracer.Span,
    stepId: string,
    checkpoint: Effect.Effect<void, ExecutionCheckpointFailed>
  ) {
    this.#execution = execution
    this.#frame = frame
    this.span = span
    this.stepId = stepId
    this.checkpoint = () => checkpoint
  }
  get id() {
    return this.#execution.id
  }
  get stepCount() {
    return this.#execution.stepCount
  }
  get tokens() {
    return this.#execution.tokens
  }
  get elapsed() {
    return this.#execution.elapsed()
  }
  get cost() {
    return this.#execution.cost
  }
  get state() {
    return this.#execution.getState()
  }
  setState(state: S): void {
    this.#execution.setState(state)
  }
  updateState(f: (state: S) => S): void {
    this.#execution.setState(f(this.#execution.getState()))
  }
  get parent() {
    return this.#execution.parentContext
  }
  get depth() {
    return this.#execution.depth
  }
  get threadId() {
    return this.#execution.threadId
  }
  get resourceId() {
    return this.#execution.resourceId
  }
  get itemLog(): ItemLog {
    return this.#execution.itemLog
  }
  get lastStepMeta() {
    return this.#execution.lastStepMeta
  }
  get errors() {
    return this.#execution.errors
  }
  send<T>(channel: Channel.Channel<T>, value: T) {
    return Channel.send(channel, value)
  }
  recv<T>(channel: Channel.Channel<T>, options?: Channel.RecvOptions) {
    return Channel.recv(channel, options)
  }
  tryRecv<T>(channel: Channel.Channel<T>): T | null {
    return Channel.tryRecv(channel)
  }
  complete(value: unknown): void {
    this.#frame.complete(value)
  }
  get completed() {
    return this.#frame.completed
  }
  get completionValue() {
    return this.#frame.completionValue
  }
  abort(reason?: string): void {
    this.#execution.abort(reason)
  }
  get aborted() {
    return this.#execution.aborted
  }
  get abortReason() {
    return this.#execution.abortReason
  }
}
