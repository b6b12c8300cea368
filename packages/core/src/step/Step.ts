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
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import type { InvalidOptions } from "../InvalidOptions.ts"
import type { ExecutionContext } from "./ExecutionContext.ts"
import * as Branch from "./internal/branch.ts"
import * as Every from "./internal/every.ts"
import { program } from "./internal/execute.ts"
import type { ExecutionServices, Options, StateOptions } from "./internal/execute.ts"
import * as Fork from "./internal/fork.ts"
import * as Llm from "./internal/llm.ts"
import * as Loops from "./internal/loop.ts"
import * as Run_ from "./internal/run.ts"
import { runIn } from "./internal/runtime.ts"
import * as Spawn from "./internal/spawn.ts"
import type { Failure as ThreadFailure, ThreadOption } from "./internal/thread.ts"
import * as ToolStep from "./internal/tool.ts"
import type { Any, Step } from "./StepAst.ts"
import type { Aborted, ExecutionCheckpointFailed, InvalidStep } from "./StepError.ts"
import type * as StepEvent from "./StepEvent.ts"

export type {
  /** How a `run` step retries (see the `RetryPolicy` module). */
  RetryPolicy
} from "./RetryPolicy.ts"

export type {
  /** The fields of a `branch` step. */
  BranchOptions
} from "./internal/branch.ts"
export type {
  /** The fields of an `every` step. */
  EveryOptions
} from "./internal/every.ts"
export type {
  /** What a program's execution needs: its steps' services and its tools', the context aside. */
  ExecutionServices,
  /** How `execute` and `stream` run a program. */
  Options,
  /** The options of a program whose steps read a user state of type `S`: its initial value. */
  StateOptions
} from "./internal/execute.ts"
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
  /** What a program on a thread may fail with besides its steps' errors: its thread's history could not be compacted. */
  Failure as ThreadFailure,
  /** A program's `thread` option: a thread id, or the thread's options. */
  ThreadOption
} from "./internal/thread.ts"
export type {
  /** The input of a `tool` step: the tool's input, less what the preset `args` give. */
  ToolInput,
  /** The fields of a `tool` step. */
  ToolOptions,
  /** The errors of every `tool` step, besides its tool's own. */
  ToolStepError
} from "./internal/tool.ts"
export type {
  Any,
  EmitFilter,
  Error,
  Input,
  MaybeEffect,
  MemoryLayers,
  OnError,
  Output,
  Proto,
  Services,
  SettleResult,
  Some,
  State,
  StateOf,
  Step,
  StepBranch,
  StepEvery,
  StepFork,
  StepForkAll,
  StepForkRace,
  StepForkSettle,
  StepLLM,
  StepLoop,
  StepProvide,
  StepRun,
  StepSpawn,
  StepTool,
  Takes
} from "./StepAst.ts"

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
 * @since 0.1.0
 * @category running
 */
export const run = Run_.make

/**
 * A step that runs one model turn on the context's item log, offering the
 * `tools` of the toolkit and running the calls the model makes safely; its
 * output is the turn's text, or its `output` schema decoded. Its input adds
 * nothing to the item log unless it has a `prompt`.
 * `loop({ steps: [llm(…)], until: Until.noToolCalls() })` is the agent loop.
 *
 * @since 0.1.0
 * @category constructors
 */
export const llm = Llm.make

/**
 * A step that runs a tool on its input merged over preset `args`, decoded with the tool's input schema.
 * In a checkpointed execution, a step of a tool that is not `idempotent` cut off while its tool ran is not
 * run again: it fails with `StepFailed`, saying the tool's outcome is unknown.
 *
 * @since 0.1.0
 * @category constructors
 */
export const tool = ToolStep.make

/**
 * A step that runs the step `route` picks, on the same input; `null` skips it
 * and passes the input on. Anything else than a step or `null` fails with `InvalidStep`.
 *
 * @example
 * ```ts
 * import { Step } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * const toEuros = Step.run({ id: "to-euros", execute: (dollars: number) => dollars * 0.92 })
 *
 * // A route picks the next step; null skips it, and the output is the input.
 * const convert = Step.branch({ id: "convert", route: (amount: number) => amount === 0 ? null : toEuros })
 *
 * const program = Effect.gen(function*() {
 *   console.log(yield* Step.execute(convert, 100), yield* Step.execute(convert, 0)) // 92 0
 * })
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const branch = Branch.make

/**
 * A step that runs paths at once, as fibers: `race` (the first path to end
 * wins, with its output or its failure, as the seed says; the rest are
 * interrupted, finalizers included, before it returns), `firstSuccess` (the
 * first path to succeed wins; it fails only when every path fails), `all`
 * (outputs in path order, merged; the first failure interrupts the rest) or
 * `settle` (every outcome, merged). `concurrency` bounds the paths in flight.
 * `paths` must answer with steps: anything else fails with `InvalidStep`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const fork = Fork.make

/**
 * A step that runs its child as a sub-agent in a new execution context (new
 * id, `parent`, `depth` + 1, its own item log), with memory of its own and a
 * `timeout` if given. Its usage and cost roll up into every ancestor.
 *
 * @since 0.1.0
 * @category combinators
 */
export const spawn = Spawn.spawn

/**
 * A step that runs its child with memory layers every `llm` step below it consults.
 *
 * @since 0.1.0
 * @category combinators
 */
export const provide = Spawn.provide

/**
 * A step that runs its `steps` in sequence, again and again, until `until`
 * says stop, or it reaches `maxIterations` ({@link defaultMaxIterations}
 * unless it says: then it ends with its last output); see `LoopOptions` for
 * `maxIterations`, `maxHistorySize`, `inbox`, `prepareNext` and `onError`.
 *
 * @example
 * ```ts
 * import { Step, Tool, Toolkit, Until } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Schema } from "effect"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   output: Schema.Finite,
 *   execute: ({ a, b }) => Effect.succeed(a + b)
 * })
 *
 * // The agent loop as a step program: model turns until one calls no tool.
 * const agent = Step.loop({
 *   id: "agent",
 *   steps: [Step.llm({ id: "turn", instructions: "Use the tools." })],
 *   until: Until.noToolCalls(),
 *   maxIterations: 10
 * })
 *
 * const model = MockLanguageModel.layer([
 *   MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 } }]),
 *   MockLanguageModel.textTurn("2 + 3 = 5")
 * ])
 * Effect.runPromise(Step.execute(agent, "What is 2 + 3?", { toolkit: Toolkit.make(add) }).pipe(Effect.provide(model)))
 *   .then(console.log) // 2 + 3 = 5
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export const loop = Loops.make

/**
 * The iterations a `loop` runs at most when it sets no `maxIterations`: 50,
 * as `AgentLoop` runs 50 turns. `maxIterations: Infinity` runs for ever.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultMaxIterations = Loops.defaultMaxIterations

/**
 * A step that runs a step, parks `ms` (plus up to `jitter`), and runs it again, forever, woken early by `wakeOn`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const every = Every.make

/**
 * Runs a program on `input` and returns its output. A text input starts the
 * program's item log as a user message, so `execute(agent, "question")` asks
 * the question. The program fails with its steps' errors, or `Aborted` when a
 * step aborts it; interrupting it interrupts every step, finalizers included.
 *
 * The program is checked before anything runs: a field that cannot work (a
 * step id that is empty or holds `/`, `#`, `[` or `]`, a negative timeout or
 * `ms`, a `maxIterations` or `concurrency` that is not a positive integer, a
 * retry policy that does not decode, a stop predicate built with an argument
 * that cannot work) fails it with `InvalidOptions` naming the step, the field
 * and the value; a child that is not a step with `InvalidStep`.
 *
 * With a `Checkpointer` in context and an `id`, every step that completes is
 * recorded (its output and the context then; outputs and the state must be
 * JSON, or have a schema: an `llm` step's `output`, a tool step's tool), with
 * the events the program made before it (which `stream` replays), and
 * executing again with the same id skips the recorded steps (their outputs are
 * used and their contexts restored) and runs the rest; a program that ended
 * returns its recorded output at once. A record that cannot be written fails
 * the program with `ExecutionCheckpointFailed`.
 *
 * With a `thread` (and a `Checkpointer` in context), the program's item log
 * starts from the thread's history and the items it added go to the thread
 * once it ends well; another run on the thread meanwhile is refused (see the
 * `Thread` module), and the program may fail with the `CompactionError` of a
 * thread its `Compactor` could not shorten.
 *
 * @since 0.1.0
 * @category running
 */
export function execute<I, O, E, R, RT = never, T extends ThreadOption | undefined = undefined>(
  step: Step<I, O, E, R, unknown>,
  input: NoInfer<I>,
  options?: Options<RT> & { readonly state?: unknown; readonly thread?: T }
): Effect.Effect<
  O,
  E | Aborted | ExecutionCheckpointFailed | InvalidOptions | InvalidStep | ThreadFailure<T>,
  ExecutionServices<R, RT>
>
export function execute<I, O, E, R, S, RT = never, T extends ThreadOption | undefined = undefined>(
  step: Step<I, O, E, R, S>,
  input: NoInfer<I>,
  options: Options<RT> & StateOptions<S> & { readonly thread?: T }
): Effect.Effect<
  O,
  E | Aborted | ExecutionCheckpointFailed | InvalidOptions | InvalidStep | ThreadFailure<T>,
  ExecutionServices<R, RT>
>
export function execute(
  step: Any,
  input: unknown,
  options?: Options<unknown> & { readonly state?: unknown }
): Effect.Effect<unknown, unknown, unknown> {
  return program(step, input, options, undefined)
}

/**
 * Runs `step` on `input` inside the step whose context is `ctx`, as the seed's
 * `ExecuteStepFn(step, input, ctx)`: where `execute` opens a new program,
 * this runs the step as a child of the calling step, in its execution (the
 * same item log and books: its turns' usage and cost are the caller's, and a
 * `spawn` it runs is one deeper, with the caller's context as parent), under
 * its span, recorded and replayed with the program's checkpoints, its events
 * in the program's stream. For a step's function that picks what to run as it
 * goes (a planner). The step is checked first: `InvalidStep` when it is not a
 * step or `ctx` is not a running step's context, `InvalidOptions` when it
 * cannot work.
 *
 * @since 0.2.0
 * @category execution
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Step } from "@agentloop/core"
 *
 * const double = Step.run({ id: "double", execute: (n: number) => n * 2 })
 * const twice = Step.run({
 *   id: "twice",
 *   execute: (n: number, ctx) =>
 *     Effect.flatMap(Step.executeStep(double, n, ctx), (once) => Step.executeStep(double, once, ctx))
 * })
 * Effect.runPromise(Step.execute(twice, 5)).then(console.log) // 20
 * ```
 */
export const executeStep = <I, O, E, R, S>(
  step: Step<I, O, E, R, S>,
  input: NoInfer<I>,
  ctx: ExecutionContext<S>
): Effect.Effect<O, E | InvalidStep | InvalidOptions, Exclude<R, ExecutionContext>> =>
  // A step that reads state S runs in a context of state S: `ctx` is one.
  runIn(step, input, ctx as ExecutionContext<never>)

/**
 * Events `stream` holds for a consumer that has not pulled them yet: one. A
 * step waits at its next event until the consumer takes the one before, so a
 * program never runs more than an event ahead of its consumer.
 *
 * @since 0.1.0
 * @category constants
 */
export const streamBuffer = 1

/**
 * Runs a program as a stream of its `StepEvent`s, ending with an `Output`
 * event carrying its output (or failing as `execute` would). The program runs
 * as the consumer pulls: a step waits at its next event until the consumer
 * has taken the one before ({@link streamBuffer}). A consumer that stops
 * pulling interrupts every step.
 *
 * A program recorded before (a `Checkpointer` in context and an `id`:
 * finished, cut off, or forked with `StepHistory.fork`) first streams the
 * events it recorded, as they were streamed (the model's deltas and the
 * tools' progress aside), then goes on, each event once; a finished one
 * replays to its `Output` running nothing.
 *
 * @since 0.1.0
 * @category running
 */
export function stream<I, O, E, R, RT = never, T extends ThreadOption | undefined = undefined>(
  step: Step<I, O, E, R, unknown>,
  input: NoInfer<I>,
  options?: Options<RT> & { readonly state?: unknown; readonly thread?: T }
): Stream.Stream<
  StepEvent.Event<O>,
  E | Aborted | ExecutionCheckpointFailed | InvalidOptions | InvalidStep | ThreadFailure<T>,
  ExecutionServices<R, RT>
>
export function stream<I, O, E, R, S, RT = never, T extends ThreadOption | undefined = undefined>(
  step: Step<I, O, E, R, S>,
  input: NoInfer<I>,
  options: Options<RT> & StateOptions<S> & { readonly thread?: T }
): Stream.Stream<
  StepEvent.Event<O>,
  E | Aborted | ExecutionCheckpointFailed | InvalidOptions | InvalidStep | ThreadFailure<T>,
  ExecutionServices<R, RT>
>
export function stream(
  step: Any,
  input: unknown,
  options?: Options<unknown> & { readonly state?: unknown }
): Stream.Stream<StepEvent.Event<unknown>, unknown, unknown> {
  return Stream.callback<StepEvent.Event<unknown>, unknown, unknown>(
    (queue) =>
      program(step, input, options, (event) => Effect.asVoid(Queue.offer(queue, event))).pipe(
        Effect.flatMap((value) => Queue.offer(queue, { _tag: "Output", value })),
        Effect.andThen(Queue.end(queue))
      ),
    { bufferSize: streamBuffer }
  )
}
