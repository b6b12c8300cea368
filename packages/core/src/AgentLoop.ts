/**
 * The agent service: a model, tools, a stop predicate and limits, run as one
 * pull-based stream that ends with exactly one typed termination.
 *
 * It is `Loop.loop` + `Loop.streamUntilComplete` + `Toolkit.streamAll`: each
 * iteration streams one model turn, runs the tools the model called, checks the
 * limits and asks the `Until` predicate whether to stop. Nothing runs ahead of
 * the consumer: a consumer that stops pulling stops the run, and its HTTP request.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Random, Schema, Stream } from "effect"
import type * as AiError from "./AiError.ts"
import * as Compactor from "./Compactor.ts"
import type { Halt } from "./Halt.ts"
import * as Item from "./Item.ts"
import { LanguageModel } from "./LanguageModel.ts"
import type { ModelParams, ToolChoice, TurnOptions } from "./LanguageModel.ts"
import * as Loop from "./Loop.ts"
import * as Pricing from "./Pricing.ts"
import type { Snapshot } from "./Snapshot.ts"
import * as StepMeta from "./StepMeta.ts"
import { StopPolicy } from "./StopPolicy.ts"
import * as Termination from "./Termination.ts"
import * as TokenUsage from "./TokenUsage.ts"
import * as Tool from "./Tool.ts"
import * as Toolkit from "./Toolkit.ts"
import * as Turn from "./Turn.ts"
import type { TurnDelta } from "./TurnDelta.ts"
import * as Until from "./Until.ts"
import type * as Verdict from "./Verdict.ts"

/** The limits of a run, and the termination each one ends it with. */
export interface Limits {
  /** Model turns at most (default 50); one more would end the run with `MaxTurns`. */
  readonly maxTurns?: number | undefined
  /** Cost in USD at most, this turn's included (default none); reaching it ends the run with `MaxBudgetUsd`. */
  readonly maxBudgetUsd?: number | undefined
  /** Turns in a row whose tool calls all failed (default 3) before `ConsecutiveMistakes`. */
  readonly maxConsecutiveMistakes?: number | undefined
  /** Turns in a row that repeat the previous turn's calls and results with no new text (default 3) before `NoProgress`. */
  readonly maxNoProgress?: number | undefined
  /** Repair turns for a structured output that does not decode (default 2) before `MaxStructuredOutputRetries`. */
  readonly maxStructuredOutputRetries?: number | undefined
  /** Tool calls running at once (default 4). */
  readonly toolConcurrency?: number | undefined
  /** Time limit of each tool call (default none; a tool's own `timeout` wins). */
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
  /** Names the run (in the predicates' snapshots and caches); a random id when absent. */
  readonly runId?: string | undefined
  /** Nesting depth, for runs started by other runs (default 0). */
  readonly depth?: number | undefined
}

/** A run that ended because its stop predicate said so, with its output. */
export interface Stopped<O> {
  readonly termination: Termination.Stop
  readonly output: O
  readonly history: ReadonlyArray<Item.Item>
}

/** A run that ended through its finish tool; the tool's output is `termination.value`. */
export interface Submitted {
  readonly termination: Termination.Submitted<unknown>
  readonly history: ReadonlyArray<Item.Item>
}

/** How a successful run ended. */
export type RunResult<O> = Stopped<O> | Submitted

/** What a run streams: enough to drive a UI, and its final result. */
export type AgentEvent<O = string> =
  | { readonly _tag: "TurnStarted"; readonly step: number }
  | { readonly _tag: "Delta"; readonly step: number; readonly delta: TurnDelta }
  | { readonly _tag: "Compacted"; readonly step: number; readonly before: number; readonly after: number }
  | {
    readonly _tag: "TurnCompleted"
    readonly step: number
    readonly turn: Turn.Turn
    /** This turn's cost in USD, `undefined` when its model has no price. */
    readonly cost: number | undefined
    /** The run's accounting, this turn included. */
    readonly accounting: Termination.Accounting
  }
  | { readonly _tag: "ToolProgress"; readonly step: number; readonly call: Item.FunctionCall; readonly value: unknown }
  | { readonly _tag: "ToolResult"; readonly step: number; readonly result: Toolkit.Result }
  | { readonly _tag: "Verdict"; readonly step: number; readonly verdict: Verdict.Verdict }
  | { readonly _tag: "Feedback"; readonly step: number; readonly text: string }
  | { readonly _tag: "Finished"; readonly result: RunResult<O> }

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

interface State {
  readonly history: ReadonlyArray<Item.Item>
  readonly steps: number
  readonly usage: TokenUsage.TokenUsage
  readonly cost: number
  readonly turns: ReadonlyArray<Turn.Turn>
  /** What went wrong in each of the last turns whose tool calls all failed. */
  readonly mistakes: ReadonlyArray<string>
  /** The previous turn's calls and results, and how many turns in a row repeated them. */
  readonly signature: string | undefined
  readonly repeats: number
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

const isDelta = <O>(value: TurnDelta | AgentEvent<O>): value is TurnDelta => "type" in value

/** Whether a turn's text adds nothing a person could read. */
const isBlank = (text: string): boolean => text.trim() === ""

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
      maxStructuredOutputRetries: options.limits?.maxStructuredOutputRetries ?? defaults.maxStructuredOutputRetries,
      toolConcurrency: options.limits?.toolConcurrency,
      toolTimeout: options.limits?.toolTimeout
    }
    const toolkit = options.toolkit
    const output = options.output
    const decodeOutput = output === undefined
      ? undefined
      : Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.toCodecJson(output)))
    const turnOptions: TurnOptions = {
      model: options.model,
      instructions: options.instructions,
      tools: toolkit === undefined ? undefined : Toolkit.definitions(toolkit),
      toolChoice: options.toolChoice,
      params: options.params,
      output: output === undefined ? undefined : { name: "output", schema: Tool.toParameters(output) }
    }

    const accounting = (state: State, history: ReadonlyArray<Item.Item> = state.history) =>
      Effect.map(Clock.currentTimeMillis, (now): Termination.Accounting => ({
        usage: state.usage,
        cost: state.cost,
        elapsedMs: now - startedAt,
        steps: state.steps,
        lastItems: history.slice(-lastItemsKept)
      }))

    const fromModelError = (state: State, history: ReadonlyArray<Item.Item>) =>
    (error: AiError.AiError): Effect.Effect<never, Termination.Error> =>
      Effect.flatMap(accounting(state, history), (accounting) =>
        Effect.fail(
          error._tag === "AuthFailed"
            ? new Termination.ProviderAuth({ cause: error, accounting })
            : new Termination.DuringExecution({ message: `the model request failed: ${error.message}`, cause: error, accounting })
        ))

    /** One model turn; on a context overflow, one compaction and one retry. */
    const requestTurn = (
      state: State,
      compacted: (before: number, after: number, history: ReadonlyArray<Item.Item>) => void
    ): Stream.Stream<TurnDelta, Termination.Error> =>
      model.streamTurn(state.history, turnOptions).pipe(
        Stream.catch((error) =>
          error._tag !== "ContextLengthExceeded"
            ? Stream.fromEffect(fromModelError(state, state.history)(error))
            : Stream.unwrap(Effect.gen(function*() {
              const compactor = yield* Compactor.Compactor
              const shorter = yield* compactor.compact(state.history).pipe(
                Effect.catch((failure) =>
                  Effect.flatMap(accounting(state), (accounting) =>
                    Effect.fail(
                      new Termination.CompactionFailed({
                        message: `the history did not fit the context window and compacting it failed: ${failure.message}`,
                        cause: error,
                        accounting
                      })
                    ))
                )
              )
              compacted(state.history.length, shorter.length, shorter)
              return model.streamTurn(shorter, turnOptions).pipe(
                Stream.catch((again) =>
                  Stream.fromEffect(
                    again._tag === "ContextLengthExceeded"
                      ? Effect.flatMap(accounting(state, shorter), (accounting) =>
                        Effect.fail(new Termination.PromptTooLong({ cause: again, accounting })))
                      : fromModelError(state, shorter)(again)
                  )
                )
              )
            }))
        )
      )

    /** Ends the run with its result, recorded on the run's span. */
    const finished = (
      verdict: AgentEvent<O> | undefined,
      result: RunResult<O>
    ): Effect.Effect<Stream.Stream<Loop.Event<AgentEvent<O>, State>>> =>
      Effect.as(
        Effect.annotateCurrentSpan({
          "agent.termination": result.termination._tag,
          "agent.termination.category": Termination.category(result.termination)
        }),
        Loop.stopAfter(Stream.fromIterable<AgentEvent<O>>(
          verdict === undefined ? [{ _tag: "Finished", result }] : [verdict, { _tag: "Finished", result }]
        ))
      )

    /** After the turn and its tools: the limits, the finish tool, the predicate, the structured output. */
    const decide = Effect.fnUntraced(function*(
      state: State,
      turn: Turn.Turn,
      turnCost: number | undefined,
      results: ReadonlyArray<Toolkit.Result>
    ) {
      const step = state.steps
      const calls = Turn.functionCalls(turn)
      const text = Turn.text(turn)
      const history = [...state.history, ...Toolkit.outputs(results)]

      const halted = results.find((result) => result.outcome === "halted")
      if (halted !== undefined && Toolkit.isMistake(halted)) {
        return yield* new Termination.Halted({
          reason: halted.reason,
          source: `tool ${halted.call.name}`,
          accounting: yield* accounting(state, history)
        })
      }

      const submitted = results.find((result) => result.outcome === "success" && result.call.name === options.finish)
      if (submitted !== undefined && submitted.outcome === "success") {
        return yield* finished(undefined, {
          termination: Termination.submitted({
            tool: submitted.call.name,
            value: submitted.value,
            accounting: yield* accounting(state, history)
          }),
          history
        })
      }

      const allFailed = results.length > 0 && results.every(Toolkit.isMistake)
      const mistakes = allFailed
        ? [...state.mistakes, results.filter(Toolkit.isMistake).map((result) => result.reason).join("; ")]
        : results.length > 0
        ? []
        : state.mistakes
      if (mistakes.length >= limits.maxConsecutiveMistakes) {
        return yield* new Termination.ConsecutiveMistakes({
          maxConsecutiveMistakes: limits.maxConsecutiveMistakes,
          mistakes,
          accounting: yield* accounting(state, history)
        })
      }

      const signature = calls.length === 0
        ? undefined
        : JSON.stringify([calls.map((call) => [call.name, call.arguments]), results.map((result) => result.output.output)])
      const repeats = signature !== undefined && signature === state.signature && isBlank(text) ? state.repeats + 1 : 0
      if (repeats >= limits.maxNoProgress) {
        return yield* new Termination.NoProgress({
          iterations: repeats,
          stuck: [...calls, ...Toolkit.outputs(results)],
          accounting: yield* accounting(state, history)
        })
      }

      const snapshot: Snapshot = {
        runId,
        stepCount: step,
        tokens: state.usage,
        elapsed: (yield* Clock.currentTimeMillis) - startedAt,
        cost: state.cost,
        lastOutput: turn,
        lastText: text,
        history: state.turns,
        depth: options.depth ?? 0,
        lastStepMeta: StepMeta.fromTurn(turn, turnCost)
      }
      if (options.afterTurn !== undefined) {
        const hooked = yield* Effect.result(options.afterTurn(turn, snapshot))
        if (hooked._tag === "Failure") {
          return yield* new Termination.Halted({
            reason: hooked.failure.reason,
            source: "the afterTurn hook",
            accounting: yield* accounting(state, history)
          })
        }
      }
      const verdict = yield* Until.evaluate(until, snapshot).pipe(
        Effect.catch((error) =>
          Effect.flatMap(accounting(state, history), (accounting) =>
            Effect.fail(
              new Termination.DuringExecution({ message: `the stop predicate failed: ${error.message}`, cause: error, accounting })
            ))
        )
      )
      const verdictEvent: AgentEvent<O> = { _tag: "Verdict", step, verdict }
      const next = { ...state, history, mistakes, signature, repeats }

      if (!verdict.stop) {
        if (verdict.feedback === undefined) return Loop.nextAfter(Stream.make(verdictEvent), next)
        return Loop.nextAfter(
          Stream.fromIterable<AgentEvent<O>>([verdictEvent, { _tag: "Feedback", step, text: verdict.feedback }]),
          { ...next, history: [...history, feedbackMessage(verdict.feedback, step)] }
        )
      }

      const reason = verdict.reason ?? "the stop predicate said stop"
      if (decodeOutput === undefined) {
        const stopped: Stopped<string> = {
          termination: Termination.stop({ reason, accounting: yield* accounting(state, history) }),
          output: text,
          history
        }
        // Without a structured output, O is the text (its default).
        return yield* finished(verdictEvent, stopped as Stopped<never>)
      }
      const decoded = yield* Effect.result(decodeOutput(text))
      if (decoded._tag === "Success") {
        return yield* finished(verdictEvent, {
          termination: Termination.stop({ reason, accounting: yield* accounting(state, history) }),
          output: decoded.success,
          history
        })
      }
      const diagnostic = Termination.diagnose({ target: "structured_output", error: decoded.failure, raw: text })
      if (state.repairs >= limits.maxStructuredOutputRetries) {
        const accounted = yield* accounting(state, history)
        return yield* limits.maxStructuredOutputRetries === 0
          ? new Termination.SchemaValidation({ diagnostic, accounting: accounted })
          : new Termination.MaxStructuredOutputRetries({
            maxRetries: limits.maxStructuredOutputRetries,
            diagnostic,
            accounting: accounted
          })
      }
      const repair = `Your answer is not valid JSON for the required schema: ${diagnostic.message}\n` +
        "Answer again with only the JSON value, nothing else."
      return Loop.nextAfter(
        Stream.fromIterable<AgentEvent<O>>([verdictEvent, { _tag: "Feedback", step, text: repair }]),
        { ...next, history: [...history, feedbackMessage(repair, step)], repairs: state.repairs + 1 }
      )
    })

    /** Accounts for the turn, runs its tools, then decides. */
    const afterTurn = (state: State, turn: Turn.Turn, compaction: AgentEvent<O> | undefined) =>
      Effect.gen(function*() {
        const turnCost = yield* Pricing.turnCost(turn)
        const step = state.steps + 1
        const history = [...state.history, ...turn.items]
        const accounted: State = {
          ...state,
          history,
          steps: step,
          usage: TokenUsage.add(state.usage, turn.usage),
          cost: state.cost + (turnCost ?? 0),
          turns: [...state.turns, turn]
        }
        const completed: AgentEvent<O> = {
          _tag: "TurnCompleted",
          step,
          turn,
          cost: turnCost,
          accounting: yield* accounting(accounted)
        }
        if (limits.maxBudgetUsd !== undefined && accounted.cost >= limits.maxBudgetUsd) {
          return yield* new Termination.MaxBudgetUsd({
            maxBudgetUsd: limits.maxBudgetUsd,
            accounting: yield* accounting(accounted)
          })
        }
        const before = Stream.fromIterable(compaction === undefined ? [completed] : [compaction, completed])
        const calls = Turn.functionCalls(turn)
        if (calls.length === 0 || toolkit === undefined) {
          // A call with no toolkit to run it is answered like an unknown tool.
          const results = calls.length === 0 ? [] : yield* Toolkit.executeAllSafe(Toolkit.make(), calls)
          return Stream.concat(Stream.map(before, Loop.value), Stream.unwrap(decide(accounted, turn, turnCost, results)))
        }
        const results: Array<Toolkit.Result> = []
        const tools = Toolkit.streamAll(toolkit, calls, {
          concurrency: limits.toolConcurrency,
          timeout: limits.toolTimeout
        }).pipe(
          Stream.map((event): AgentEvent<O> => {
            if (event._tag === "Progress") return { _tag: "ToolProgress", step, call: event.call, value: event.value }
            results[event.index] = event.result
            return { _tag: "ToolResult", step, result: event.result }
          })
        )
        return Stream.concat(
          Stream.map(Stream.concat(before, tools), Loop.value),
          Stream.unwrap(Effect.suspend(() => decide(accounted, turn, turnCost, results)))
        )
      })

    const body = (state: State) =>
      Effect.gen(function*() {
        const step = state.steps + 1
        if (state.steps >= limits.maxTurns) {
          return yield* new Termination.MaxTurns({ maxTurns: limits.maxTurns, accounting: yield* accounting(state) })
        }
        let current = state
        let compaction: AgentEvent<O> | undefined
        const deltas = requestTurn(state, (before, after, shorter) => {
          current = { ...state, history: shorter }
          compaction = { _tag: "Compacted", step, before, after }
        })
        const events = deltas.pipe(
          Loop.streamUntilComplete((turn) => afterTurn(current, turn, compaction)),
          Stream.map((event): Loop.Event<AgentEvent<O>, State> => {
            if (event._tag !== "Value") return event
            const value = event.value
            return isDelta(value) ? Loop.value({ _tag: "Delta", step, delta: value }) : Loop.value(value)
          }),
          Stream.catchTag("IncompleteTurn", (error) => Stream.fromEffect(fromModelError(current, current.history)(error)))
        )
        const started: Loop.Event<AgentEvent<O>, State> = Loop.value({ _tag: "TurnStarted", step })
        return Stream.concat(Stream.make(started), events)
      })

    const initial: State = {
      history: typeof options.input === "string" ? [Item.userMessage(options.input)] : options.input,
      steps: 0,
      usage: TokenUsage.empty,
      cost: 0,
      turns: [],
      mistakes: [],
      signature: undefined,
      repeats: 0,
      repairs: 0
    }
    return Loop.loop(initial, body).pipe(
      Stream.tapError((termination) =>
        Effect.annotateCurrentSpan({
          "agent.termination": termination._tag,
          "agent.termination.category": Termination.category(termination),
          "agent.termination.message": termination.message
        })
      )
    )
  })).pipe(Stream.withSpan("AgentLoop.run"))

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
