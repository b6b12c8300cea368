/**
 * An execution context's own record (its books, counters, state and item
 * log, shared by its steps) and the frames its `complete` and `abort` end.
 *
 * @internal
 */
import type * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Cost from "../../Cost.ts"
import type * as Item from "../../Item.ts"
import type { StepMeta } from "../../StepMeta.ts"
import * as TokenUsage from "../../TokenUsage.ts"
import type { ExecutionContext, RecordedError } from "../ExecutionContext.ts"
import type { ItemLog } from "../ItemLog.ts"
import * as ItemLogs from "../ItemLog.ts"
import { Aborted } from "../StepError.ts"

/** What a context's `complete` ends: the innermost loop, or the execution. */
export interface Completion {
  /** Frames around this one: 0 for a program's own. */
  readonly depth: number
  complete(value: unknown): void
  readonly completed: boolean
  readonly completionValue: unknown
}

/**
 * What `complete` ends: a loop, or an execution (which `abort` ends too).
 * {@link runFrame} races a body against the frame's signal, so ending it
 * interrupts whatever runs inside, finalizers included, before it returns.
 */
export class Frame<E = never> implements Completion {
  readonly depth: number
  completed = false
  completionValue: unknown = undefined
  readonly signal = Deferred.makeUnsafe<unknown, E>()

  /** A frame inside `around` (none for a program's own). */
  constructor(around?: Completion | undefined) {
    this.depth = around === undefined ? 0 : around.depth + 1
  }

  complete(value: unknown): void {
    if (this.completed || Deferred.isDoneUnsafe(this.signal)) return
    this.completed = true
    this.completionValue = value
    Deferred.doneUnsafe(this.signal, Effect.succeed(value))
  }

  fail(error: E): void {
    Deferred.doneUnsafe(this.signal, Effect.fail(error))
  }
}

/**
 * Runs `body` in `frame`: its own output, or the value `complete` gave. That
 * value is the caller's word for an `A` (`complete(value: unknown)` stands for
 * the loop's or the program's output, as the seed's `complete<T>(value: T)`
 * does): the one place a step program takes a value on trust.
 */
export const runFrame = <A, E, R, FE>(frame: Frame<FE>, body: Effect.Effect<A, E, R>): Effect.Effect<A, E | FE, R> =>
  Effect.raceFirst(
    // The race starts the body in a fiber of its own at once, on the JavaScript stack of the frame around it,
    // and its end resumes that frame on its own stack: every so many frames deep, the body yields before and
    // after, so frames nested thousands deep (spawns, loops) do not overflow it, and shallow ones pay nothing.
    frame.depth > 0 && frame.depth % framesPerStack === 0
      ? Effect.ensuring(Effect.andThen(Effect.yieldNow, body), Effect.yieldNow)
      : body,
    Deferred.await(frame.signal) as Effect.Effect<A, FE>
  )

/** Frames nested on one JavaScript stack before a body yields and starts a fresh one. */
const framesPerStack = 64

/** The item log of an execution: the public log, plus the trimming a `loop`'s `maxHistorySize` does and a resume's restore. */
export interface Log extends ItemLog {
  keepNewest(max: number): void
  replace(items: ReadonlyArray<Item.Item>): void
}

const makeLog = (items: ReadonlyArray<Item.Item>): Log => {
  let current = items
  return {
    get items() {
      return current
    },
    append: (...more) => {
      if (more.length > 0) current = [...current, ...more]
    },
    keepNewest: (max) => {
      current = ItemLogs.newest(current, max)
    },
    replace: (items) => {
      current = items
    }
  }
}

/** One execution context's own record: books, counters, state and item log, shared by its steps. */
export interface Execution<out S> {
  readonly id: string
  readonly threadId: string
  readonly resourceId: string | undefined
  readonly depth: number
  readonly parent: Execution<unknown> | undefined
  /** The context of the step that spawned this execution. */
  readonly parentContext: ExecutionContext | null
  readonly startedAt: number
  readonly clock: Clock.Clock
  readonly itemLog: Log
  readonly frame: Frame<Aborted>
  /** Items already handed to memory. */
  readonly remembered: WeakSet<Item.Item>
  /** How many times each spawn step has run here, for the ids of its sub-agents. */
  readonly spawns: Map<string, number>
  /** The states of the tools' memories (see `ToolMemory`), by id: each execution has its own. */
  readonly toolMemory: Map<string, unknown>
  stepCount: number
  tokens: TokenUsage.TokenUsage
  cost: Cost.Cost
  lastStepMeta: StepMeta | null
  readonly errors: Array<RecordedError>
  /** Model turns so far: the number of the next `llm` step's turn, less one. */
  turns: number
  aborted: boolean
  abortReason: string | undefined
  getState(): S
  setState(state: S): void
  elapsed(): number
  /** Adds a turn's usage and cost here and to every ancestor. */
  account(usage: TokenUsage.TokenUsage, cost: Cost.Cost): void
  abort(reason: string | undefined): void
}

/** Makes an execution. Its item log starts with `history`, then a text `input` as a user message. */
export const makeExecution = <S>(options: {
  readonly id: string
  readonly threadId: string
  readonly resourceId: string | undefined
  readonly parent: Execution<unknown> | undefined
  readonly parentContext: ExecutionContext | null
  /** The frame of the step that started this execution (a spawn's), none for a program's own. */
  readonly around?: Completion | undefined
  readonly clock: Clock.Clock
  readonly input: unknown
  readonly state: S
  /** The conversation before the input: the program's thread's (none by default). */
  readonly history?: ReadonlyArray<Item.Item> | undefined
}): Execution<S> => {
  let state = options.state
  const frame = new Frame<Aborted>(options.around)
  const execution: Execution<S> = {
    id: options.id,
    threadId: options.threadId,
    resourceId: options.resourceId,
    depth: options.parent === undefined ? 0 : options.parent.depth + 1,
    parent: options.parent,
    parentContext: options.parentContext,
    startedAt: options.clock.currentTimeMillisUnsafe(),
    clock: options.clock,
    itemLog: makeLog([
      ...(options.history ?? []),
      ...(typeof options.input === "string" ? [userMessage(options.input, "user")] : [])
    ]),
    frame,
    remembered: new WeakSet(),
    spawns: new Map(),
    toolMemory: new Map(),
    stepCount: 0,
    tokens: TokenUsage.empty,
    cost: Cost.zero,
    lastStepMeta: null,
    errors: [],
    turns: 0,
    aborted: false,
    abortReason: undefined,
    getState: () => state,
    setState: (next) => {
      state = next
    },
    elapsed: () => options.clock.currentTimeMillisUnsafe() - execution.startedAt,
    account: (usage, cost) => {
      for (let at: Execution<unknown> | undefined = execution; at !== undefined; at = at.parent) {
        at.tokens = TokenUsage.add(at.tokens, usage)
        at.cost = Cost.add(at.cost, cost)
      }
    },
    abort: (reason) => {
      if (execution.aborted) return
      execution.aborted = true
      execution.abortReason = reason
      frame.fail(new Aborted({ contextId: execution.id, ...(reason === undefined ? {} : { reason }) }))
    }
  }
  return execution
}

/** A completed user message with one text part. */
export const userMessage = (text: string, id: string): Item.Message => ({
  type: "message",
  id,
  status: "completed",
  role: "user",
  content: [{ type: "input_text", text }]
})
