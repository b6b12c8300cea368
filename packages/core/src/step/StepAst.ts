/**
 * The syntax of step programs: each kind of step as the plain data its
 * constructor builds (`kind`, `id`, its fields, and the runner compiled from
 * them), and the types a step carries (what it takes, gives, may fail with,
 * needs, and which state it reads). `Step`'s constructors build these and
 * `Step.execute` interprets them.
 *
 * @since 0.2.0
 */
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import type * as Item from "../Item.ts"
import type { ModelParams } from "../LanguageModel.ts"
import type * as Tool from "../Tool.ts"
import type { Until } from "../Until.ts"
import type { Verdict } from "../Verdict.ts"
import type * as Channel from "./Channel.ts"
import type { ExecutionContext } from "./ExecutionContext.ts"
import type { Run, Runner, TypeId, Variance } from "./internal/runner.ts"
import type { Memory } from "./Memory.ts"
import type { RetryPolicy } from "./RetryPolicy.ts"
import type * as StepEvent from "./StepEvent.ts"

/**
 * What a step's function may answer with: a value, a Promise of one, or an Effect.
 *
 * @since 0.2.0
 * @category models
 */
export type MaybeEffect<A, E = never, R = never> = A | PromiseLike<A> | Effect.Effect<A, E, R>

/**
 * What every step has: its types, its runner, and its `id` (unique in its program: it names the step in events, spans and, later, checkpoints).
 *
 * @since 0.2.0
 * @category models
 */
export interface Proto<in I, out O, out E, out R, in S> {
  readonly [TypeId]: Variance<I, O, E, R, S>
  /** @internal */
  readonly [Runner]: Run<I, O, E, R, S>
  readonly id: string
}

/**
 * Runs a function.
 *
 * @since 0.2.0
 * @category models
 */
export interface StepRun<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "run"
  readonly execute: (input: I, ctx: ExecutionContext<S>) => MaybeEffect<O, E, R>
  readonly retry?: RetryPolicy | undefined
}

/**
 * What an `llm` step's `emit` filter is asked: the type of an event (see `StepEvent.eventType`) and the event.
 *
 * @since 0.2.0
 * @category models
 */
export type EmitFilter = (eventType: StepEvent.EventType, event: StepEvent.StepEvent) => boolean

/**
 * One model turn on the context's item log.
 *
 * @since 0.2.0
 * @category models
 */
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

/**
 * Runs a tool on the step's input, with preset `args` under it.
 *
 * @since 0.2.0
 * @category models
 */
export interface StepTool<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "tool"
  readonly tool: Tool.Any<R>
  readonly args?: { readonly [key: string]: unknown } | undefined
}

/**
 * Runs the step its `route` picks, with the same input; `null` skips it, and the input is the output.
 *
 * @since 0.2.0
 * @category models
 */
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

/**
 * A racing fork: with `race` (the seed's), the first path to end wins, with its
 * output or its failure; with `firstSuccess`, the first path to succeed wins.
 * The others are interrupted, their finalizers run, before it returns.
 *
 * @since 0.2.0
 * @category models
 */
export interface StepForkRace<in I, out O, out E, out R, in S> extends ForkProto<I, O, E, R, S> {
  readonly mode: "race" | "firstSuccess"
}

/**
 * A fork that runs every path and merges their outputs, in path order; the first failure interrupts the rest.
 *
 * @since 0.2.0
 * @category models
 */
export interface StepForkAll<in I, out O, out E, out R, in S> extends ForkProto<I, O, E, R, S> {
  readonly mode: "all"
  readonly merge: (results: ReadonlyArray<never>, ctx: ExecutionContext<S>) => MaybeEffect<O, E, R>
}

/**
 * A fork that runs every path and merges every outcome, success or failure, as a {@link SettleResult}.
 *
 * @since 0.2.0
 * @category models
 */
export interface StepForkSettle<in I, out O, out E, out R, in S> extends ForkProto<I, O, E, R, S> {
  readonly mode: "settle"
  readonly merge: (results: ReadonlyArray<never>, ctx: ExecutionContext<S>) => MaybeEffect<O, E, R>
}

/**
 * Runs paths at once.
 *
 * @since 0.2.0
 * @category models
 */
export type StepFork<I, O, E, R, S> =
  | StepForkRace<I, O, E, R, S>
  | StepForkAll<I, O, E, R, S>
  | StepForkSettle<I, O, E, R, S>

/**
 * How one path of a settling fork ended.
 *
 * @since 0.2.0
 * @category models
 */
export type SettleResult<O, E = unknown> =
  | { readonly stepId: string; readonly status: "fulfilled"; readonly value: O }
  | { readonly stepId: string; readonly status: "rejected"; readonly error: E }

/**
 * Memory layers for a subtree of steps: one, or several whose memories are combined (see `Memory.layerAll`).
 *
 * @since 0.2.0
 * @category models
 */
export type MemoryLayers<E = never, R = never> = Layer.Layer<Memory, E, R> | ReadonlyArray<Layer.Layer<Memory, E, R>>

/**
 * Runs a step as a sub-agent, in a new execution context.
 *
 * @since 0.2.0
 * @category models
 */
export interface StepSpawn<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "spawn"
  readonly child: Any
  readonly memory?: MemoryLayers<unknown, unknown> | undefined
  /** Milliseconds the sub-agent may run. */
  readonly timeout?: number | undefined
}

/**
 * Runs a step with memory layers every step below it uses.
 *
 * @since 0.2.0
 * @category models
 */
export interface StepProvide<in I, out O, out E, out R, in S> extends Proto<I, O, E, R, S> {
  readonly kind: "provide"
  readonly child: Any
  readonly memory: MemoryLayers<unknown, unknown>
}

/**
 * What a `loop`'s `onError` answers for a failed iteration.
 *
 * @since 0.2.0
 * @category models
 */
export type OnError = "retry" | "skip" | "abort"

/**
 * Runs steps in sequence, again and again, until a predicate says stop.
 *
 * @since 0.2.0
 * @category models
 */
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

/**
 * Runs a step, parks, and runs it again, forever.
 *
 * @since 0.2.0
 * @category models
 */
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

/**
 * A step: its kind says which.
 *
 * @example
 * ```ts
 * import { Step, Until } from "@agentloop/core"
 * import type { StepAst } from "@agentloop/core"
 *
 * // A program is plain data: each step says what it is, so tools (a UI, a validator) can walk it.
 * const double = Step.run({ id: "double", execute: (n: number) => n * 2 })
 * const program = Step.loop({ id: "grow", steps: [double], until: Until.maxSteps(3) })
 * const kinds = (step: StepAst.Any): Array<string> =>
 *   step.kind === "loop" ? [step.kind, ...step.steps.flatMap((inner) => kinds(inner as StepAst.Any))] : [step.kind]
 * console.log(kinds(program)) // [ 'loop', 'run' ]
 * ```
 *
 * @since 0.2.0
 * @category models
 */
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

/**
 * Any step, whatever its types.
 *
 * @since 0.2.0
 * @category models
 */
export type Any = Step<never, unknown, unknown, unknown, never>

/**
 * A step that takes `I`, whatever else it is: what composite steps ask of
 * their children. It says nothing of a child's output, errors or services, so
 * a step written inline (`steps: [Step.run({ … })]`) infers its own.
 *
 * @since 0.2.0
 * @category models
 */
export interface Takes<in I> extends Some {
  readonly [TypeId]: { readonly _I: (_: I) => void }
}

/**
 * Some step: what a composite's type parameters for its children extend. It
 * says nothing of a child's types (its input is checked with {@link Takes}
 * separately), so a step written inline infers its own.
 *
 * @since 0.2.0
 * @category models
 */
export interface Some {
  readonly [TypeId]: unknown
  readonly kind: StepEvent.Kind
  readonly id: string
}

type VarianceOf<T> = T extends { readonly [TypeId]: infer V } ? V : never

/**
 * The input of a step.
 *
 * @since 0.2.0
 * @category models
 */
export type Input<T> = VarianceOf<T> extends Variance<infer I, unknown, unknown, unknown, never> ? I : never
/**
 * The output of a step (of any of them, for a union of steps).
 *
 * @since 0.2.0
 * @category models
 */
export type Output<T> = T extends unknown
  ? VarianceOf<T> extends Variance<never, infer O, unknown, unknown, never> ? O : never
  : never
/**
 * The errors of a step.
 *
 * @since 0.2.0
 * @category models
 */
export type Error<T> = T extends unknown
  ? VarianceOf<T> extends Variance<never, unknown, infer E, unknown, never> ? E : never
  : never
/**
 * The services a step needs.
 *
 * @since 0.2.0
 * @category models
 */
export type Services<T> = T extends unknown ?
  VarianceOf<T> extends Variance<never, unknown, unknown, infer R, never> ? R : never
  : never
/**
 * The state a step reads (`unknown`: any).
 *
 * @since 0.2.0
 * @category models
 */
export type State<T> = T extends unknown ?
  VarianceOf<T> extends Variance<never, unknown, unknown, unknown, infer S> ? S : never
  : never

/**
 * The state a union of steps reads: what every one of them reads (the
 * intersection of their states, taken step by step, so a step that reads any
 * state adds nothing).
 *
 * @since 0.2.0
 * @category models
 */
export type StateOf<T> = [T] extends [never] ? unknown
  : (T extends unknown ? (_: State<T>) => void : never) extends (_: infer S) => void ? S
  : never
