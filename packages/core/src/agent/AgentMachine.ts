/**
 * An agent run as a state machine: the state between turns, and the
 * transitions a turn makes.
 *
 * The state is a `Schema`, so a checkpoint of a run is its state. A machine is
 * built from a run's options; each turn then goes `beforeTurn` (the turn limit)
 * → the model request → `account` (books and budget) → the tools → `decide`
 * (the rules, the `afterTurn` hook, the stop predicate, the structured output),
 * which answers with the next state or the result. `AgentLoop` drives it as a
 * pull-based stream on `Loop` and `AgentTurn`; a durable engine can drive the
 * same machine with its own activities.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Schema from "effect/Schema"
import type { Accounting } from "../Accounting.ts"
import * as Cost from "../Cost.ts"
import type { InvalidOptions } from "../InvalidOptions.ts"
import * as Item from "../Item.ts"
import type { TurnOptions } from "../LanguageModel.ts"
import * as Pricing from "../Pricing.ts"
import type { Snapshot } from "../Snapshot.ts"
import * as StepMeta from "../StepMeta.ts"
import { StopPolicy } from "../StopPolicy.ts"
import * as Termination from "../Termination.ts"
import * as TokenUsage from "../TokenUsage.ts"
import * as Tool from "../Tool.ts"
import * as Toolkit from "../Toolkit.ts"
import * as Turn from "../Turn.ts"
import * as Until from "../Until.ts"
import type * as Events from "./AgentEvent.ts"
import * as AgentOptions from "./AgentOptions.ts"
import * as AgentRules from "./AgentRules.ts"
import type * as AgentTurn from "./AgentTurn.ts"

const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Where a run stands between turns: everything a resume needs.
 *
 * @since 0.1.0
 * @category schemas
 */
export const State = Schema.Struct({
  history: Item.History,
  /** Model turns completed. */
  steps: Count,
  usage: TokenUsage.TokenUsage,
  cost: Cost.Cost,
  /** The text of every turn so far: the outputs a predicate's snapshot lists. */
  outputs: Schema.Array(Schema.String),
  /** What went wrong in each of the last turns whose calls all failed. */
  mistakes: Schema.Array(Schema.String),
  progress: AgentRules.Progress,
  /** Repair turns asked for the structured output so far. */
  repairs: Count
})
export type State = typeof State.Type

/**
 * What a completed turn leads to: the next turn from `state`, or the end with `result`; `events` say why.
 *
 * @since 0.1.0
 * @category models
 */
export type Transition<O> =
  | { readonly _tag: "Continue"; readonly state: State; readonly events: ReadonlyArray<Events.AgentEvent<O>> }
  | {
    readonly _tag: "Finish"
    readonly result: Events.RunResult<O>
    readonly events: ReadonlyArray<Events.AgentEvent<O>>
  }

/**
 * A run's machine: its identity, what it asks the model, and its transitions.
 *
 * @since 0.1.0
 * @category models
 */
export interface Machine<O, R, RU> {
  readonly runId: string
  readonly startedAt: number
  /** The request options of every turn: model, instructions, tool definitions, structured output. */
  readonly turnOptions: TurnOptions
  /** Concurrency and time limit of the tool calls. */
  readonly tools: Omit<Toolkit.Options, "onProgress">
  /** The run's wall-clock deadline in milliseconds, when it has one. */
  readonly maxDurationMs: number | undefined
  /** The state before the first turn: the input as the history, nothing counted yet. */
  readonly initial: State
  /** The state before the first turn, or `UnpricedModel` when a budgeted run's model has no price. */
  readonly start: Effect.Effect<State, Termination.UnpricedModel>
  /** The run's accounting in `state` (the last items taken from `history`, by default the state's). */
  readonly accounting: (state: State, history?: ReadonlyArray<Item.Item>) => Effect.Effect<Accounting>
  /** Fails with `MaxTurns` when `state` may not have another turn. */
  readonly beforeTurn: (state: State) => Effect.Effect<void, Termination.MaxTurns>
  /** Adds a completed turn to the books and keeps the budget: {@link Machine.books}, then {@link Machine.budget}. */
  readonly account: (
    state: State,
    completed: AgentTurn.Completed
  ) => Effect.Effect<
    { readonly state: State; readonly accounting: Accounting },
    Termination.MaxBudgetUsd | Termination.UnpricedModel
  >
  /** Adds a completed turn to the books: the state after it, and its accounting. */
  readonly books: (
    state: State,
    completed: AgentTurn.Completed
  ) => Effect.Effect<{ readonly state: State; readonly accounting: Accounting }>
  /**
   * Keeps the budget once a turn is in the books (`accounted` and its
   * `accounting`): `MaxBudgetUsd` when the cost reached it, `UnpricedModel`
   * when the cost is unknown; the turn was paid either way, so report it first.
   */
  readonly budget: (
    accounted: State,
    completed: AgentTurn.Completed,
    accounting: Accounting
  ) => Effect.Effect<void, Termination.MaxBudgetUsd | Termination.UnpricedModel>
  /** After a turn and its tools: the rules, the hook, the predicate and the structured output decide. */
  readonly decide: (state: State, outcome: AgentTurn.Outcome) => Effect.Effect<Transition<O>, Termination.Error, R | RU>
  /** The termination of a run whose turn failed, accounted in `state`. */
  readonly turnFailed: (failure: AgentTurn.Failure, state: State) => Effect.Effect<never, Termination.Error>
  /** The termination of a run that reached its deadline, accounted in `state`. */
  readonly deadlinePassed: (state: State) => Effect.Effect<never, Termination.MaxDuration>
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

/**
 * Builds the machine of a run: its id, its start time (now, unless `startedAt`
 * says when a resumed run first started, in epoch milliseconds), and the stop
 * predicate (the `StopPolicy` when none is given). Options that cannot work
 * (see `AgentOptions.validate`, the `StopPolicy`'s predicate included) fail it
 * with `InvalidOptions`, before anything runs.
 *
 * @example
 * ```ts
 * import { AgentMachine } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // The state machine behind AgentLoop (and durable runs): options in, a state to drive turn by turn.
 * const program = Effect.gen(function*() {
 *   const machine = yield* AgentMachine.make({ input: "Hi", limits: { maxTurns: 1 } })
 *   const state = yield* machine.start
 *   console.log(state.history.length, state.steps) // 1 0
 *   // After one turn, the turn limit refuses the next.
 *   const refused = yield* Effect.flip(machine.beforeTurn({ ...state, steps: 1 }))
 *   console.log(refused._tag) // MaxTurns
 * })
 *
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <O, R, E, RU>(
  options: AgentOptions.Options<O, R, E, RU>,
  resumed: { readonly startedAt?: number | undefined } = {}
): Effect.Effect<Machine<O, R, RU>, InvalidOptions> =>
  Effect.gen(function*() {
    const refused = AgentOptions.validate(options)
    if (refused !== undefined) return yield* refused
    const until: Until.Until<unknown, RU> = options.until ?? (yield* StopPolicy)
    const policyRefused = Until.invalid(until)
    if (policyRefused !== undefined) return yield* policyRefused
    const startedAt = resumed.startedAt ?? (yield* Clock.currentTimeMillis)
    const runId = options.runId ?? `run_${(yield* Random.nextInt).toString(36)}_${startedAt.toString(36)}`
    const limits = {
      maxTurns: options.limits?.maxTurns ?? defaults.maxTurns,
      maxBudgetUsd: options.limits?.maxBudgetUsd,
      maxConsecutiveMistakes: options.limits?.maxConsecutiveMistakes ?? defaults.maxConsecutiveMistakes,
      maxNoProgress: options.limits?.maxNoProgress ?? defaults.maxNoProgress,
      maxStructuredOutputRetries: options.limits?.maxStructuredOutputRetries ?? defaults.maxStructuredOutputRetries
    }
    const output = options.output
    const decodeOutput = output === undefined
      ? undefined
      : Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.toCodecJson(output)))
    const deadline = options.limits?.maxDuration
    const maxDurationMs = deadline === undefined ? undefined : Duration.toMillis(Duration.fromInputUnsafe(deadline))

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

    const accounting = (state: State, history: ReadonlyArray<Item.Item> = state.history) =>
      Effect.map(Clock.currentTimeMillis, (now): Accounting => ({
        usage: state.usage,
        cost: state.cost,
        elapsedMs: now - startedAt,
        steps: state.steps,
        lastItems: history.slice(-lastItemsKept)
      }))

    const fail = <T extends Termination.Error>(make: (accounting: Accounting) => T, state: State) =>
      Effect.flatMap(accounting(state), (books) => Effect.fail(make(books)))

    const start = Effect.gen(function*() {
      const budget = limits.maxBudgetUsd
      if (budget !== undefined && options.model !== undefined && !(yield* Pricing.isPriced(options.model))) {
        const model = options.model
        return yield* fail(
          (books) => new Termination.UnpricedModel({ model, maxBudgetUsd: budget, accounting: books }),
          initial
        )
      }
      return initial
    })

    // Once a turn: a combinator rather than a generator.
    const books = (state: State, completed: AgentTurn.Completed) => {
      const accounted: State = {
        ...state,
        history: completed.history,
        steps: state.steps + 1,
        usage: TokenUsage.add(state.usage, completed.turn.usage),
        cost: Cost.add(state.cost, completed.cost),
        outputs: [...state.outputs, Turn.text(completed.turn)]
      }
      return Effect.map(accounting(accounted), (books) => ({ state: accounted, accounting: books }))
    }

    const budget = (
      accounted: State,
      completed: AgentTurn.Completed,
      books: Accounting
    ): Effect.Effect<void, Termination.MaxBudgetUsd | Termination.UnpricedModel> => {
      const maxBudgetUsd = limits.maxBudgetUsd
      if (maxBudgetUsd === undefined) return Effect.void
      switch (AgentRules.budget(accounted.cost, maxBudgetUsd)) {
        case "unpriced":
          return Effect.fail(
            new Termination.UnpricedModel({
              ...(completed.turn.model === undefined ? {} : { model: completed.turn.model }),
              maxBudgetUsd,
              accounting: books
            })
          )
        case "reached":
          return Effect.fail(new Termination.MaxBudgetUsd({ maxBudgetUsd, accounting: books }))
        case "within":
          return Effect.void
      }
    }

    const account = (state: State, completed: AgentTurn.Completed) =>
      Effect.flatMap(
        books(state, completed),
        (booked) => Effect.as(budget(booked.state, completed, booked.accounting), booked)
      )

    /** Goes on to the next turn, telling the model `feedback` first when there is some. */
    const proceed = (state: State, verdict: Events.Verdict, feedback: string | undefined): Transition<O> =>
      feedback === undefined
        ? { _tag: "Continue", state, events: [verdict] }
        : {
          _tag: "Continue",
          state: { ...state, history: [...state.history, feedbackMessage(feedback, state.steps)] },
          events: [verdict, { _tag: "Feedback", step: state.steps, text: feedback }]
        }

    const finish = (verdict: Events.Verdict | undefined, result: Events.RunResult<O>): Transition<O> => ({
      _tag: "Finish",
      result,
      events: verdict === undefined ? [{ _tag: "Finished", result }] : [verdict, { _tag: "Finished", result }]
    })

    const decide = Effect.fnUntraced(function*(accounted: State, outcome: AgentTurn.Outcome) {
      const { turn, results } = outcome
      const step = accounted.steps
      const mistakes = AgentRules.mistakes(accounted.mistakes, results)
      const progress = AgentRules.progress(accounted.progress, turn, results)
      const state: State = { ...accounted, history: outcome.history, mistakes, progress }

      const halting = AgentRules.halting(results)
      if (halting !== undefined) {
        const source = `tool ${halting.call.name}`
        return yield* fail(
          (books) => new Termination.Halted({ reason: halting.reason, source, accounting: books }),
          state
        )
      }
      const submission = AgentRules.submission(results, options.finish)
      if (submission !== undefined) {
        const termination = Termination.submitted({
          tool: submission.call.name,
          value: submission.value,
          accounting: yield* accounting(state)
        })
        return finish(undefined, { _tag: "Submitted", termination, history: state.history })
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
      if (!verdict.stop) return proceed(state, verdictEvent, verdict.feedback)

      const reason = verdict.reason ?? "the stop predicate said stop"
      const stop = Termination.stop({ reason, accounting: yield* accounting(state) })
      if (decodeOutput === undefined) {
        // Without a structured output, O is the text (its default).
        const stopped: Events.Stopped<string> = {
          _tag: "Stopped",
          termination: stop,
          output: text,
          history: state.history
        }
        return finish(verdictEvent, stopped as Events.Stopped<never>)
      }
      const decoded = yield* Effect.result(decodeOutput(text))
      if (decoded._tag === "Success") {
        return finish(verdictEvent, {
          _tag: "Stopped",
          termination: stop,
          output: decoded.success,
          history: state.history
        })
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
      return proceed({ ...state, repairs: state.repairs + 1 }, verdictEvent, AgentRules.repairRequest(diagnostic))
    })

    return {
      runId,
      startedAt,
      turnOptions: {
        model: options.model,
        instructions: options.instructions,
        tools: options.toolkit === undefined ? undefined : Toolkit.definitions(options.toolkit),
        toolChoice: options.toolChoice,
        params: options.params,
        output: output === undefined ? undefined : { name: "output", schema: Tool.toParameters(output) }
      },
      tools: { concurrency: options.limits?.toolConcurrency, timeout: options.limits?.toolTimeout },
      maxDurationMs,
      initial,
      start,
      accounting,
      beforeTurn: (state) =>
        state.steps < limits.maxTurns
          ? Effect.void
          : fail((books) => new Termination.MaxTurns({ maxTurns: limits.maxTurns, accounting: books }), state),
      account,
      books,
      budget,
      decide,
      turnFailed: (failure, state) => fail((books) => AgentRules.turnFailure(failure, books), state),
      deadlinePassed: (state) =>
        fail((books) => new Termination.MaxDuration({ maxDurationMs: maxDurationMs ?? 0, accounting: books }), state)
    }
  })
