/**
 * Step programs: agents and workflows as plain data, interpreted with Effect.
 *
 * A step is an object with a `kind` (`run`, `llm`, `tool`, `branch`, `fork`,
 * `spawn`, `provide`, `loop`, `every`) and an `id`, built by the constructor of
 * its kind. Steps nest: a `loop` of `llm` steps is the agent loop, a `fork`
 * runs paths at once, a `spawn` starts a sub-agent with its own context.
 * `execute` runs a program to its output; `stream` runs it as a stream of
 * `StepEvent`s ending with the output.
 *
 * Every function of a step gets the step's input (where it has one) and the
 * {@link ExecutionContext} last, and may answer with a value, a Promise or an
 * Effect: a throw or a rejection fails the step with `StepFailed`, an Effect
 * keeps its own typed error. A step's type says what it takes (`I`), gives
 * (`O`), may fail with (`E`), needs (`R`) and which user state it reads (`S`).
 *
 * @since 0.1.0
 */
import { Effect, Queue, Stream } from "effect"
import type { Layer, Schema } from "effect"
import type * as Channel from "./Channel.ts"
import type { ExecutionContext } from "./ExecutionContext.ts"
import * as Branch from "./internal/branch.ts"
import * as Every from "./internal/every.ts"
import { program } from "./internal/execute.ts"
import * as Fork from "./internal/fork.ts"
import * as Llm from "./internal/llm.ts"
import * as Loops from "./internal/loop.ts"
import * as Run_ from "./internal/run.ts"
import type { Run, Runner, TypeId, Variance } from "./internal/runtime.ts"
import * as Spawn from "./internal/spawn.ts"
import * as ToolStep from "./internal/tool.ts"
import type * as Item from "./Item.ts"
import type { ModelParams } from "./LanguageModel.ts"
import type { Memory } from "./Memory.ts"
import type { RetryPolicy } from "./RetryPolicy.ts"
import type { Aborted, CheckpointFailed } from "./StepError.ts"
import type * as StepEvent from "./StepEvent.ts"
import type * as Tool from "./Tool.ts"
import type { Toolkit } from "./Toolkit.ts"
import type { Until } from "./Until.ts"
import type { Verdict } from "./Verdict.ts"

export type {
  /** How a `run` step retries (see the `RetryPolicy` module). */
  RetryPolicy
} from "./RetryPolicy.ts"

/** What a step's function may answer with: a value, a Promise of one, or an Effect. */
export type MaybeEffect<A, E = never, R = never> = A | PromiseLike<A> | Effect.Effect<A, E, R>

/** What every step has: its types, its runner, and its `id` (unique in its program: it names the step in events, spans and, later, checkpoints). */
export interface Proto<in I, out O, out E, out R, in S> {
  readonly [TypeId]: Variance<I, O, E, R, S>
  /** @internal */
  readonly [Runner]: Run<I, O, E, R, S>
  readonly id: string
}

/** Runs a function. */
export interface StepRun<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "run"
  readonly execute: (input: I, ctx: ExecutionContext<S>) => MaybeEffect<O, E, R>
  readonly retry?: RetryPolicy | undefined
}

/** What an `llm` step's `emit` filter is asked: the type of an event (see `StepEvent.eventType`) and the event. */
export type EmitFilter = (eventType: StepEvent.EventType, event: StepEvent.StepEvent) => boolean

/** One model turn on the context's item log. */
export interface StepLLM<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "llm"
  readonly model?: string | undefined
  readonly instructions?: string | undefined
  /** The names of the toolkit's tools the model is offered: all when absent, none when empty. */
  readonly tools?: ReadonlyArray<string> | undefined
  /** The structured output; without it, the output is the turn's text. */
  readonly output?: Schema.Top | undefined
  readonly params?: ModelParams | undefined
  /** Which of this step's events `Step.stream` sends: all (`true`, the default), none, or those a filter lets through. */
  readonly emit?: boolean | EmitFilter | undefined
  /** What to tell the model first: a text (a user message) or items, appended to the item log. */
  readonly prompt?:
    | ((input: I, ctx: ExecutionContext<S>) => MaybeEffect<string | ReadonlyArray<Item.Item>, E, R>)
    | undefined
}

/** Runs a tool on the step's input, with preset `args` under it. */
export interface StepTool<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "tool"
  readonly tool: Tool.Any<R>
  readonly args?: { readonly [key: string]: unknown } | undefined
}

/** Runs the step its `route` picks, with the same input; `null` skips it, and the input is the output. */
export interface StepBranch<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "branch"
  readonly route: (input: I, ctx: ExecutionContext<S>) => MaybeEffect<Some | null, E, R>
}

/** What every fork has: the paths it runs on its input, and how many at once. */
interface ForkProto<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "fork"
  readonly paths: (input: I, ctx: ExecutionContext<S>) => MaybeEffect<ReadonlyArray<Some>, E, R>
  /** Paths running at once at most (default: all of them). */
  readonly concurrency?: number | undefined
}

/** A fork whose first path to succeed wins; the others are interrupted, their finalizers run, before it returns. */
export interface StepForkRace<in I, out O, out E, out R, in S> extends ForkProto<I, O, E, R, S> {
  readonly mode: "race"
}

/** A fork that runs every path and merges their outputs, in path order; the first failure interrupts the rest. */
export interface StepForkAll<in I, out O, out E, out R, in S> extends ForkProto<I, O, E, R, S> {
  readonly mode: "all"
  readonly merge: (results: ReadonlyArray<never>, ctx: ExecutionContext<S>) => MaybeEffect<O, E, R>
}

/** A fork that runs every path and merges every outcome, success or failure, as a {@link SettleResult}. */
export interface StepForkSettle<in I, out O, out E, out R, in S> extends ForkProto<I, O, E, R, S> {
  readonly mode: "settle"
  readonly merge: (results: ReadonlyArray<never>, ctx: ExecutionContext<S>) => MaybeEffect<O, E, R>
}

/** Runs paths at once. */
export type StepFork<I, O, E, R, S> =
  | StepForkRace<I, O, E, R, S>
  | StepForkAll<I, O, E, R, S>
  | StepForkSettle<I, O, E, R, S>

/** How one path of a settling fork ended. */
export type SettleResult<O, E = unknown> =
  | { readonly stepId: string; readonly status: "fulfilled"; readonly value: O }
  | { readonly stepId: string; readonly status: "rejected"; readonly error: E }

/** Memory layers for a subtree of steps: one, or several whose memories are combined (see `Memory.layerAll`). */
export type MemoryLayers<E = never, R = never> = Layer.Layer<Memory, E, R> | ReadonlyArray<Layer.Layer<Memory, E, R>>

/** Runs a step as a sub-agent, in a new execution context. */
export interface StepSpawn<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "spawn"
  readonly child: Any
  readonly memory?: MemoryLayers<unknown, unknown> | undefined
  /** Milliseconds the sub-agent may run. */
  readonly timeout?: number | undefined
}

/** Runs a step with memory layers every step below it uses. */
export interface StepProvide<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "provide"
  readonly child: Any
  readonly memory: MemoryLayers<unknown, unknown>
}

/** What a `loop`'s `onError` answers for a failed iteration. */
export type OnError = "retry" | "skip" | "abort"

/** Runs steps in sequence, again and again, until a predicate says stop. */
export interface StepLoop<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "loop"
  readonly steps: ReadonlyArray<Some>
  readonly until: Until<unknown, unknown>
  readonly maxIterations?: number | undefined
  readonly maxHistorySize?: number | undefined
  readonly inbox?: Channel.Channel<string> | undefined
  readonly parkTimeout?: number | undefined
  readonly prepareNext?:
    | ((output: never, verdict: Verdict, ctx: ExecutionContext<S>) => MaybeEffect<unknown, E, R>)
    | undefined
  readonly onError?: ((error: never, ctx: ExecutionContext<S>) => MaybeEffect<OnError, E, R>) | undefined
}

/** Runs a step, parks, and runs it again, forever. */
export interface StepEvery<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "every"
  readonly step: Any
  /** Milliseconds to park between runs. */
  readonly ms: number
  /** Up to this many more milliseconds, at random, per park (default 0). */
  readonly jitter?: number | undefined
  readonly wakeOn?: { readonly name: string } | undefined
  readonly onError?: "continue" | "fail" | undefined
}

/** A step: its kind says which. */
export type Step<I, O, E = never, R = never, S = unknown> =
  | StepRun<I, O, E, R, S>
  | StepLLM<I, O, E, R, S>
  | StepTool<I, O, E, R, S>
  | StepBranch<I, O, E, R, S>
  | StepFork<I, O, E, R, S>
  | StepSpawn<I, O, E, R, S>
  | StepProvide<I, O, E, R, S>
  | StepLoop<I, O, E, R, S>
  | StepEvery<I, O, E, R, S>

/** Any step, whatever its types. */
export type Any = Step<never, unknown, unknown, unknown, never>

/**
 * A step that takes `I`, whatever else it is: what composite steps ask of
 * their children. It says nothing of a child's output, errors or services, so
 * a step written inline (`steps: [Step.run({ … })]`) infers its own.
 */
export interface Takes<in I> extends Some {
  readonly [TypeId]: { readonly _I: (_: I) => void }
}

/**
 * Some step: what a composite's type parameters for its children extend. It
 * says nothing of a child's types (its input is checked with {@link Takes}
 * separately), so a step written inline infers its own.
 */
export interface Some {
  readonly [TypeId]: unknown
  readonly kind: StepEvent.Kind
  readonly id: string
}

type VarianceOf<T> = T extends { readonly [TypeId]: infer V } ? V : never

/** The input of a step. */
export type Input<T> = VarianceOf<T> extends Variance<infer I, unknown, unknown, unknown, never> ? I : never
/** The output of a step (of any of them, for a union of steps). */
export type Output<T> = T extends unknown
  ? VarianceOf<T> extends Variance<never, infer O, unknown, unknown, never> ? O : never
  : never
/** The errors of a step. */
export type Error<T> = T extends unknown
  ? VarianceOf<T> extends Variance<never, unknown, infer E, unknown, never> ? E : never
  : never
/** The services a step needs. */
export type Services<T> = T extends unknown ?
  VarianceOf<T> extends Variance<never, unknown, unknown, infer R, never> ? R : never
  : never
/** The state a step reads (`unknown`: any). */
export type State<T> = T extends unknown ?
  VarianceOf<T> extends Variance<never, unknown, unknown, unknown, infer S> ? S : never
  : never

/**
 * The state a union of steps reads: what every one of them reads (the
 * intersection of their states, taken step by step, so a step that reads any
 * state adds nothing).
 */
export type StateOf<T> = [T] extends [never] ? unknown
  : (T extends unknown ? (_: State<T>) => void : never) extends (_: infer S) => void ? S
  : never

export type {
  /** The fields of a `branch` step. */
  BranchOptions
} from "./internal/branch.ts"
export type {
  /** The fields of an `every` step. */
  EveryOptions
} from "./internal/every.ts"
export type {
  /** The fields of a fork that needs every path. */
  AllOptions,
  /** A path of a fork on input `I`. */
  Path,
  /** The fields of a racing fork. */
  RaceOptions,
  /** The fields of a fork that settles every path. */
  SettleOptions
} from "./internal/fork.ts"
export type {
  /** The errors of every `llm` step, besides its `prompt`'s. */
  LlmError,
  /** The fields of an `llm` step. */
  LlmOptions
} from "./internal/llm.ts"
export type {
  /** How a loop checks that each of its steps takes what it is given. */
  Chain,
  /** The fields of a `loop` step with a `prepareNext`. */
  LoopNextOptions,
  /** The fields of a `loop` step. */
  LoopOptions
} from "./internal/loop.ts"
export type {
  /** The fields of a `run` step. */
  RunOptions
} from "./internal/run.ts"
export type {
  /** The fields of a `provide` step. */
  ProvideOptions,
  /** The fields of a `spawn` step. */
  SpawnOptions
} from "./internal/spawn.ts"
export type {
  /** The input of a `tool` step: the tool's input, less what the preset `args` give. */
  ToolInput,
  /** The fields of a `tool` step. */
  ToolOptions,
  /** The errors of every `tool` step, besides its tool's own. */
  ToolStepError
} from "./internal/tool.ts"

/**
 * A step that runs `execute` on its input; its output is `execute`'s answer.
 * With a `retry` policy, a failed `execute` runs again as the policy says.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Step } from "@agentloop/core"
 *
 * const double = Step.run({ id: "double", execute: (n: number) => n * 2 })
 * Effect.runPromise(Step.execute(double, 21)).then(console.log) // 42
 * ```
 */
export const run = Run_.make

/**
 * A step that runs one model turn on the context's item log, offering the
 * `tools` of the toolkit and running the calls the model makes safely; its
 * output is the turn's text, or its `output` schema decoded. Its input adds
 * nothing to the item log unless it has a `prompt`.
 * `loop({ steps: [llm(…)], until: Until.noToolCalls() })` is the agent loop.
 */
export const llm = Llm.make

/** A step that runs a tool on its input merged over preset `args`, decoded with the tool's input schema. */
export const tool = ToolStep.make

/** A step that runs the step `route` picks, on the same input; `null` skips it and passes the input on. */
export const branch = Branch.make

/**
 * A step that runs paths at once, as fibers: `race` (the first success wins,
 * the rest are interrupted, finalizers included, before it returns), `all`
 * (outputs in path order, merged; the first failure interrupts the rest) or
 * `settle` (every outcome, merged). `concurrency` bounds the paths in flight.
 */
export const fork = Fork.make

/**
 * A step that runs its child as a sub-agent in a new execution context (new
 * id, `parent`, `depth` + 1, its own item log), with memory of its own and a
 * `timeout` if given. Its usage and cost roll up into every ancestor.
 */
export const spawn = Spawn.spawn

/** A step that runs its child with memory layers every `llm` step below it consults. */
export const provide = Spawn.provide

/**
 * A step that runs its `steps` in sequence, again and again, until `until`
 * says stop; see `LoopOptions` for `maxIterations`, `maxHistorySize`,
 * `inbox`, `prepareNext` and `onError`.
 */
export const loop = Loops.make

/** A step that runs a step, parks `ms` (plus up to `jitter`), and runs it again, forever, woken early by `wakeOn`. */
export const every = Every.make

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
}

/** The options of a program whose steps read a user state of type `S`: its initial value. */
export interface StateOptions<S> {
  readonly state: S
}

/** What a program's execution needs: its steps' services and its tools', the context aside (each step has its own). */
export type ExecutionServices<R, RT> = Exclude<R | RT, ExecutionContext>

/**
 * Runs a program on `input` and returns its output. A text input starts the
 * program's item log as a user message, so `execute(agent, "question")` asks
 * the question. The program fails with its steps' errors, or `Aborted` when a
 * step aborts it; interrupting it interrupts every step, finalizers included.
 *
 * With a `Checkpointer` in context and an `id`, every step that completes is
 * recorded (its output and the context then; outputs and the state must be
 * JSON, or have a schema: an `llm` step's `output`, a tool step's tool), and
 * executing again with the same id skips the recorded steps (their outputs are
 * used and their contexts restored) and runs the rest; a program that ended
 * returns its recorded output at once. A record that cannot be written fails
 * the program with `CheckpointFailed`.
 */
export function execute<I, O, E, R, RT = never>(
  step: Step<I, O, E, R, unknown>,
  input: NoInfer<I>,
  options?: Options<RT> & { readonly state?: unknown }
): Effect.Effect<O, E | Aborted | CheckpointFailed, ExecutionServices<R, RT>>
export function execute<I, O, E, R, S, RT = never>(
  step: Step<I, O, E, R, S>,
  input: NoInfer<I>,
  options: Options<RT> & StateOptions<S>
): Effect.Effect<O, E | Aborted | CheckpointFailed, ExecutionServices<R, RT>>
export function execute(
  step: Any,
  input: unknown,
  options?: Options<unknown> & { readonly state?: unknown }
): Effect.Effect<unknown, unknown, unknown> {
  return program(step, input, options, undefined)
}

/**
 * Events `stream` holds for a consumer that has not pulled them yet: one. A
 * step waits at its next event until the consumer takes the one before, so a
 * program never runs more than an event ahead of its consumer.
 */
export const streamBuffer = 1

/**
 * Runs a program as a stream of its `StepEvent`s, ending with an `Output`
 * event carrying its output (or failing as `execute` would). The program runs
 * as the consumer pulls: a step waits at its next event until the consumer
 * has taken the one before ({@link streamBuffer}). A consumer that stops
 * pulling interrupts every step.
 */
export function stream<I, O, E, R, RT = never>(
  step: Step<I, O, E, R, unknown>,
  input: NoInfer<I>,
  options?: Options<RT> & { readonly state?: unknown }
): Stream.Stream<StepEvent.Event<O>, E | Aborted | CheckpointFailed, ExecutionServices<R, RT>>
export function stream<I, O, E, R, S, RT = never>(
  step: Step<I, O, E, R, S>,
  input: NoInfer<I>,
  options: Options<RT> & StateOptions<S>
): Stream.Stream<StepEvent.Event<O>, E | Aborted | CheckpointFailed, ExecutionServices<R, RT>>
export function stream(
  step: Any,
  input: unknown,
  options?: Options<unknown> & { readonly state?: unknown }
): Stream.Stream<StepEvent.Event<unknown>, unknown, unknown> {
  return Stream.callback<StepEvent.Event<unknown>, unknown, unknown>(
    (queue) =>
      program(step, input, options, { emit: (event) => Effect.asVoid(Queue.offer(queue, event)) }).pipe(
        Effect.flatMap((value) => Queue.offer(queue, { _tag: "Output", value })),
        Effect.andThen(Queue.end(queue))
      ),
    { bufferSize: streamBuffer }
  )
}
