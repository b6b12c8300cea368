/**
 * The agent service: a model, tools, a stop predicate and limits, run as one
 * pull-based stream that ends with exactly one typed termination.
 *
 * A run is a small state machine on `Loop.loop`. Each iteration is one
 * `AgentTurn` (the request with reactive compaction, the accounted turn, the
 * tool calls); then the `AgentRules`, the `afterTurn` hook, the stop predicate
 * and the structured output decide whether to go on. Nothing runs ahead of the
 * consumer: a consumer that stops pulling stops the run, and its HTTP request.
 *
 * @since 0.1.0
 */
import { Clock, Context, Duration, Effect, Layer, Random, Schema, Stream } from "effect"
import type { Accounting } from "./Accounting.ts"
import type * as Events from "./AgentEvent.ts"
import * as AgentRules from "./AgentRules.ts"
import * as AgentTurn from "./AgentTurn.ts"
import * as Cost from "./Cost.ts"
import type { Halt } from "./Halt.ts"
import * as Item from "./Item.ts"
import { LanguageModel } from "./LanguageModel.ts"
import type { ModelParams, ToolChoice, TurnOptions } from "./LanguageModel.ts"
import * as Loop from "./Loop.ts"
import * as Pricing from "./Pricing.ts"
import type { Snapshot } from "./Snapshot.ts"
import * as StepMeta from "./StepMeta.ts"
import { StopPolicy } from "./StopPolicy.ts"
import * as Telemetry from "./Telemetry.ts"
import * as Termination from "./Termination.ts"
import * as TokenUsage from "./TokenUsage.ts"
import * as Tool from "./Tool.ts"
import * as Toolkit from "./Toolkit.ts"
import * as Turn from "./Turn.ts"
import * as Until from "./Until.ts"

export {
  /** What a run streams, as a `Schema` union a client decodes by `_tag` (see the `AgentEvent` module). */
  AgentEvent,
  /** How a successful run ended: `Stopped` with its output, or `Submitted` through its finish tool. */
  RunResult,
  /** A run stopped by its predicate. */
  Stopped,
  /** A run ended by its finish tool. */
  Submitted
} from "./AgentEvent.ts"

/** The limits of a run, and the termination each one ends it with. */
export interface Limits {
  /** Model turns at most (default 50); one more would end the run with `MaxTurns`. */
  readonly maxTurns?: number | undefined
  /**
   * Cost in USD at most, this turn's included (default none); reaching it ends
   * the run with `MaxBudgetUsd`. A model without a price ends it with
   * `UnpricedModel`: before the first request when `model` is given, else at
   * the first turn the provider answers with an unpriced model.
   */
  readonly maxBudgetUsd?: number | undefined
  /** Wall-clock time at most (default none): reaching it ends the run with `MaxDuration`, even mid-turn or mid-tool. */
  readonly maxDuration?: Duration.Input | undefined
  /** Turns in a row whose tool calls all failed (default 3) before `ConsecutiveMistakes`. */
  readonly maxConsecutiveMistakes?: number | undefined
  /** Turns in a row that repeat the previous turn's calls and results with no text (default 3) before `NoProgress`. */
  readonly maxNoProgress?: number | undefined
  /** Repair turns for a structured output that does not decode (default 2) before `MaxStructuredOutputRetries`. */
  readonly maxStructuredOutputRetries?: number | undefined
  /** Tool calls running at once (default 4). */
  readonly toolConcurrency?: number | undefined
  /** Time limit of each tool call (default `Toolkit.defaultTimeout`, five minutes; a tool's own `timeout` wins). */
  readonly toolTimeout?: Toolkit.Options["timeout"]
}

/** What to run. `O` is the structured output's type (the last turn's text without `output`). */
export interface Options<O = string, R = never, E = never, RU = never> {
  /** The task: a user message, or a whole history to continue. */
  readonly input: string | ReadonlyArray<Item.Item>
  readonly instructions?: string | undefined
  readonly toolkit?: Toolkit.Toolkit<R> | undefined
  /** When to stop; the `StopPolicy` in context when absent (by default: when the model calls no tool). */
  readonly until?: Until.Until<E, RU> | undefined
  /** A structured output: the final answer must decode with this Schema (from its JSON form). */
  readonly output?: Schema.Codec<O, unknown> | undefined
  /** The name of a tool in `toolkit` whose successful call ends the run with `Submitted` and the tool's output. */
  readonly finish?: string | undefined
  /**
   * Runs after each turn and its tools, before the stop predicate: to log,
   * audit or gate a run. Failing with `Halt` ends the run with `Halted`.
   */
  readonly afterTurn?: ((turn: Turn.Turn, snapshot: Snapshot) => Effect.Effect<void, Halt, R>) | undefined
  readonly model?: string | undefined
  readonly params?: ModelParams | undefined
  readonly toolChoice?: ToolChoice | undefined
  readonly limits?: Limits | undefined
  /** Names the agent in traces (`gen_ai.agent.name`). */
  readonly name?: string | undefined
  /** Names the run (in the predicates' snapshots and caches); a random id when absent. */
  readonly runId?: string | undefined
  /** Nesting depth, for runs started by other runs (default 0). */
  readonly depth?: number | undefined
}

type RunResult<O> = Events.RunResult<O>
type AgentEvent<O> = Events.AgentEvent<O>

/** The agent service; `layer` builds it on whatever `LanguageModel` is provided. */
export class AgentLoop extends Context.Service<AgentLoop, {
  /** Streams a run's events; the stream fails with the run's termination when it is not a success. */
  stream<O = string, R = never, E = never, RU = never>(
    options: Options<O, R, E, RU>
  ): Stream.Stream<AgentEvent<O>, Termination.Error, R | RU>
  /** Runs to the end and returns the result; fails with the run's termination when it is not a success. */
  run<O = string, R = never, E = never, RU = never>(
    options: Options<O, R, E, RU>
  ): Effect.Effect<RunResult<O>, Termination.Error, R | RU>
}>()("@agentloop/core/AgentLoop") {}

/** Where a run stands between turns. */
interface State {
  readonly history: ReadonlyArray<Item.Item>
  readonly steps: number
  readonly usage: TokenUsage.TokenUsage
  readonly cost: Cost.Cost
  /** The text of every turn so far: the outputs a predicate's snapshot lists. */
  readonly outputs: ReadonlyArray<string>
  readonly mistakes: ReadonlyArray<string>
  readonly progress: AgentRules.Progress
  readonly repairs: number
}

const defaults = {
  maxTurns: 50,
  maxConsecutiveMistakes: 3,
  maxNoProgress: 3,
  maxStructuredOutputRetries: 2
}

/** How many of the last items a termination carries. */
const lastItemsKept = 10

const feedbackMessage = (text: string, step: number): Item.Message => Item.userMessage(text, `feedback_${step}`)

/** The stream of one run; `stream` and `run` of the service are built on it. */
export const stream = <O = string, R = never, E = never, RU = never>(
  options: Options<O, R, E, RU>
): Stream.Stream<AgentEvent<O>, Termination.Error, R | RU | LanguageModel> =>
  Stream.unwrap(Effect.gen(function*() {
    const model = yield* LanguageModel
    const startedAt = yield* Clock.currentTimeMillis
    const runId = options.runId ?? `run_${(yield* Random.nextInt).toString(36)}_${startedAt.toString(36)}`
    const until: Until.Until<unknown, RU> = options.until ?? (yield* StopPolicy)
    const limits = {
      maxTurns: options.limits?.maxTurns ?? defaults.maxTurns,
      maxBudgetUsd: options.limits?.maxBudgetUsd,
      maxConsecutiveMistakes: options.limits?.maxConsecutiveMistakes ?? defaults.maxConsecutiveMistakes,
      maxNoProgress: options.limits?.maxNoProgress ?? defaults.maxNoProgress,
      maxStructuredOutputRetries: options.limits?.maxStructuredOutputRetries ?? defaults.maxStructuredOutputRetries
    }
    const tools = { concurrency: options.limits?.toolConcurrency, timeout: options.limits?.toolTimeout }
    const output = options.output
    const decodeOutput = output === undefined
      ? undefined
      : Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.toCodecJson(output)))
    const turnOptions: TurnOptions = {
      model: options.model,
      instructions: options.instructions,
      tools: options.toolkit === undefined ? undefined : Toolkit.definitions(options.toolkit),
      toolChoice: options.toolChoice,
      params: options.params,
      output: output === undefined ? undefined : { name: "output", schema: Tool.toParameters(output) }
    }
    yield* Effect.annotateCurrentSpan({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.provider.name": Telemetry.providerName(model.provider),
      "agentloop.run.id": runId,
      ...(options.model === undefined ? {} : { "gen_ai.request.model": options.model }),
      ...(options.name === undefined ? {} : { "gen_ai.agent.name": options.name })
    })

    const initial: State = {
      history: typeof options.input === "string" ? [Item.userMessage(options.input)] : options.input,
      steps: 0,
      usage: TokenUsage.empty,
      cost: Cost.zero,
      outputs: [],
      mistakes: [],
      progress: AgentRules.progressing,
      repairs: 0
    }
    /** The run as last accounted: what a deadline or a failed turn reports. */
    let latest = initial

    const accounting = (state: State, history: ReadonlyArray<Item.Item> = state.history) =>
      Effect.map(Clock.currentTimeMillis, (now): Accounting => ({
        usage: state.usage,
        cost: state.cost,
        elapsedMs: now - startedAt,
        steps: state.steps,
        lastItems: history.slice(-lastItemsKept)
      }))

    if (
      limits.maxBudgetUsd !== undefined && options.model !== undefined && !(yield* Pricing.isPriced(options.model))
    ) {
      return yield* new Termination.UnpricedModel({
        model: options.model,
        maxBudgetUsd: limits.maxBudgetUsd,
        accounting: yield* accounting(initial)
      })
    }

    /** Adds a completed turn to the books, and keeps the budget. */
    const account = (state: State, completed: AgentTurn.Completed) =>
      Effect.gen(function*() {
        const accounted: State = {
          ...state,
          history: completed.history,
          steps: state.steps + 1,
          usage: TokenUsage.add(state.usage, completed.turn.usage),
          cost: Cost.add(state.cost, completed.cost),
          outputs: [...state.outputs, Turn.text(completed.turn)]
        }
        latest = accounted
        const books = yield* accounting(accounted)
        const budget = AgentRules.budget(accounted.cost, limits.maxBudgetUsd)
        if (limits.maxBudgetUsd !== undefined && budget === "unpriced") {
          return yield* new Termination.UnpricedModel({
            ...(completed.turn.model === undefined ? {} : { model: completed.turn.model }),
            maxBudgetUsd: limits.maxBudgetUsd,
            accounting: books
          })
        }
        if (limits.maxBudgetUsd !== undefined && budget === "reached") {
          return yield* new Termination.MaxBudgetUsd({ maxBudgetUsd: limits.maxBudgetUsd, accounting: books })
        }
        return { state: accounted, accounting: books }
      })

    /** Ends the run with its result, after the verdict that stopped it. */
    const finish = (verdict: Events.Verdict | undefined, result: RunResult<O>) =>
      Effect.as(
        Telemetry.annotateTermination(result.termination),
        Loop.stopAfter(Stream.fromIterable<AgentEvent<O>>(
          verdict === undefined ? [{ _tag: "Finished", result }] : [verdict, { _tag: "Finished", result }]
        ))
      )

    /** Goes on to the next turn, telling the model `feedback` first when there is some. */
    const proceed = (state: State, events: ReadonlyArray<AgentEvent<O>>, feedback: string | undefined) =>
      feedback === undefined
        ? Loop.nextAfter(Stream.fromIterable(events), state)
        : Loop.nextAfter(
          Stream.fromIterable<AgentEvent<O>>([...events, { _tag: "Feedback", step: state.steps, text: feedback }]),
          { ...state, history: [...state.history, feedbackMessage(feedback, state.steps)] }
        )

    const fail = <T extends Termination.Error>(make: (accounting: Accounting) => T, state: State) =>
      Effect.flatMap(accounting(state), (books) => Effect.fail(make(books)))

    /** After the turn and its tools: the rules, the hook, the predicate, the structured output. */
    const decide = Effect.fnUntraced(function*(accounted: State, outcome: AgentTurn.Outcome) {
      const { turn, results } = outcome
      const step = accounted.steps
      const mistakes = AgentRules.mistakes(accounted.mistakes, results)
      const progress = AgentRules.progress(accounted.progress, turn, results)
      const state: State = { ...accounted, history: outcome.history, mistakes, progress }

      const halting = AgentRules.halting(results)
      if (halting !== undefined) {
        const source = `tool ${halting.call.name}`
        return yield* fail((books) => new Termination.Halted({ reason: halting.reason, source, accounting: books }), state)
      }
      const submission = AgentRules.submission(results, options.finish)
      if (submission !== undefined) {
        const termination = Termination.submitted({
          tool: submission.call.name,
          value: submission.value,
          accounting: yield* accounting(state)
        })
        return yield* finish(undefined, { _tag: "Submitted", termination, history: state.history })
      }
      if (mistakes.length >= limits.maxConsecutiveMistakes) {
        const max = limits.maxConsecutiveMistakes
        return yield* fail(
          (books) => new Termination.ConsecutiveMistakes({ maxConsecutiveMistakes: max, mistakes, accounting: books }),
          state
        )
      }
      if (progress.stuck.length >= limits.maxNoProgress) {
        const stuck = progress.stuck.flat()
        const iterations = progress.stuck.length
        return yield* fail((books) => new Termination.NoProgress({ iterations, stuck, accounting: books }), state)
      }

      const text = Turn.text(turn)
      const snapshot: Snapshot = {
        runId,
        stepCount: step,
        tokens: state.usage,
        elapsed: (yield* Clock.currentTimeMillis) - startedAt,
        cost: state.cost,
        lastOutput: text,
        lastText: text,
        history: state.outputs,
        depth: options.depth ?? 0,
        lastStepMeta: StepMeta.fromTurn(turn, outcome.cost)
      }
      if (options.afterTurn !== undefined) {
        const hooked = yield* Effect.result(options.afterTurn(turn, snapshot))
        if (hooked._tag === "Failure") {
          const reason = hooked.failure.reason
          return yield* fail(
            (books) => new Termination.Halted({ reason, source: "the afterTurn hook", accounting: books }),
            state
          )
        }
      }
      const verdict = yield* Until.evaluate(until, snapshot).pipe(
        Effect.catch((error) =>
          fail(
            (books) =>
              new Termination.DuringExecution({
                message: `the stop predicate failed: ${error.message}`,
                cause: error,
                accounting: books
              }),
            state
          )
        )
      )
      const verdictEvent: Events.Verdict = { _tag: "Verdict", step, verdict }
      if (!verdict.stop) return proceed(state, [verdictEvent], verdict.feedback)

      const reason = verdict.reason ?? "the stop predicate said stop"
      const stop = Termination.stop({ reason, accounting: yield* accounting(state) })
      if (decodeOutput === undefined) {
        // Without a structured output, O is the text (its default).
        const stopped: Events.Stopped<string> = { _tag: "Stopped", termination: stop, output: text, history: state.history }
        return yield* finish(verdictEvent, stopped as Events.Stopped<never>)
      }
      const decoded = yield* Effect.result(decodeOutput(text))
      if (decoded._tag === "Success") {
        return yield* finish(verdictEvent, { _tag: "Stopped", termination: stop, output: decoded.success, history: state.history })
      }
      const diagnostic = Termination.diagnose({ target: "structured_output", error: decoded.failure, raw: text })
      const maxRetries = limits.maxStructuredOutputRetries
      if (state.repairs >= maxRetries) {
        return yield* fail(
          (books) =>
            maxRetries === 0
              ? new Termination.SchemaValidation({ diagnostic, accounting: books })
              : new Termination.MaxStructuredOutputRetries({ maxRetries, diagnostic, accounting: books }),
          state
        )
      }
      return proceed({ ...state, repairs: state.repairs + 1 }, [verdictEvent], AgentRules.repairRequest(diagnostic))
    })

    const body = (state: State): ReturnType<Loop.Body<State, AgentEvent<O>, Termination.Error | AgentTurn.Failure, R | RU | LanguageModel>> => {
      latest = state
      if (state.steps >= limits.maxTurns) {
        const maxTurns = limits.maxTurns
        return fail((books) => new Termination.MaxTurns({ maxTurns, accounting: books }), state)
      }
      const step = state.steps + 1
      let accounted = state
      const started: Events.TurnStarted = { _tag: "TurnStarted", step }
      return Loop.decideAfter(Stream.make(started), () =>
        AgentTurn.stream({
          step,
          history: state.history,
          options: turnOptions,
          toolkit: options.toolkit,
          tools,
          account: (completed) =>
            Effect.map(account(state, completed), (books) => {
              accounted = books.state
              return books.accounting
            })
        }, (outcome) => decide(accounted, outcome)))
    }

    const run = Loop.loop(initial, body).pipe(
      Stream.catchIf(AgentRules.isTurnFailure, (failure) =>
        Stream.fromEffect(fail((books) => AgentRules.turnFailure(failure, books), latest)))
    )
    const deadline = options.limits?.maxDuration
    if (deadline === undefined) return run
    const maxDurationMs = Duration.toMillis(Duration.fromInputUnsafe(deadline))
    return run.pipe(Stream.interruptWhen(Effect.sleep(deadline).pipe(
      Effect.andThen(Effect.suspend(() => fail((books) => new Termination.MaxDuration({ maxDurationMs, accounting: books }), latest)))
    )))
  })).pipe(
    Stream.tapError((termination: Termination.Error) => Telemetry.annotateTermination(termination)),
    Stream.withSpan(Telemetry.agentSpanName(options.name), { kind: "internal" })
  )

/** Runs to the end; the result is the `Finished` event's. */
export const run = <O = string, R = never, E = never, RU = never>(
  options: Options<O, R, E, RU>
): Effect.Effect<RunResult<O>, Termination.Error, R | RU | LanguageModel> =>
  stream(options).pipe(
    Stream.runFold(
      (): RunResult<O> | undefined => undefined,
      (result, event) => event._tag === "Finished" ? event.result : result
    ),
    Effect.flatMap((result) =>
      result === undefined ? Effect.die(new Error("AgentLoop: the run ended without a Finished event")) : Effect.succeed(result)
    )
  )

/** Builds the service on the `LanguageModel` in context. */
export const make: Effect.Effect<AgentLoop["Service"], never, LanguageModel> = Effect.gen(function*() {
  const model = yield* LanguageModel
  return AgentLoop.of({
    stream: (options) => Stream.provideService(stream(options), LanguageModel, model),
    run: (options) => Effect.provideService(run(options), LanguageModel, model)
  })
})

/** The agent service on whatever `LanguageModel` layer is provided: Responses, Gemini or the mock. */
export const layer: Layer.Layer<AgentLoop, never, LanguageModel> = Layer.effect(AgentLoop)(make)
