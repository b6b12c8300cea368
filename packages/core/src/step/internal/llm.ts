/**
 * The `llm` step: one `AgentTurn` on the context's item log.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Accounting } from "../../Accounting.ts"
import type * as AgentEvent from "../../agent/AgentEvent.ts"
import * as AgentTurn from "../../agent/AgentTurn.ts"
import type * as Item from "../../Item.ts"
import type { LanguageModel, ModelParams } from "../../LanguageModel.ts"
import * as Loop from "../../Loop.ts"
import * as StepMeta from "../../StepMeta.ts"
import * as Termination from "../../Termination.ts"
import * as Tool from "../../Tool.ts"
import * as Toolkit from "../../Toolkit.ts"
import * as ToolMemory from "../../ToolMemory.ts"
import * as ToolRecord from "../../ToolRecord.ts"
import * as Turn from "../../Turn.ts"
import type { ExecutionContext } from "../ExecutionContext.ts"
import { Memory } from "../Memory.ts"
import type { MemoryError } from "../Memory.ts"
import type { EmitFilter, MaybeEffect, StepLLM } from "../StepAst.ts"
import { ExecutionCheckpointFailed, InvalidOutput, InvalidStep } from "../StepError.ts"
import type { StepFailed } from "../StepError.ts"
import type * as Recorded from "./recorded.ts"
import * as Replay from "./replay.ts"
import { Runner, TypeId, variance } from "./runner.ts"
import { allows, attempt, emit, userMessage } from "./runtime.ts"
import type { Execution } from "./runtime.ts"

/** The fields of an `llm` step whose output is `O`. */
export interface LlmOptions<I, O, E, R, S> {
  readonly id: string
  /** The model to ask; the provider layer's default when absent. */
  readonly model?: string | undefined
  readonly instructions?: string | undefined
  /** The names of the toolkit's tools the model is offered: all when absent, none when empty. A name the toolkit lacks fails the step with `InvalidStep`. */
  readonly tools?: ReadonlyArray<string> | undefined
  /** A structured output: the turn's text must be JSON that decodes with it, or the step fails with `InvalidOutput`. */
  readonly output?: Schema.Codec<O, unknown> | undefined
  readonly params?: ModelParams | undefined
  /** Which of this step's events `Step.stream` sends: all (the default), none (`false`), or those a filter lets through. */
  readonly emit?: boolean | EmitFilter | undefined
  /**
   * What to tell the model before its turn, from the step's input: a text,
   * appended to the item log as a user message, or items, appended as they
   * are. Without it the input adds nothing to the item log.
   */
  readonly prompt?:
    | ((input: I, ctx: ExecutionContext<S>) => MaybeEffect<string | ReadonlyArray<Item.Item>, E, R>)
    | undefined
}

/** The errors of every `llm` step, besides its `prompt`'s. */
export type LlmError = AgentTurn.Failure | MemoryError | InvalidOutput | InvalidStep | StepFailed

const decoder = <O>(stepId: string, output: Schema.Codec<O, unknown>) => {
  const decode = Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.toCodecJson(output)))
  return (text: string): Effect.Effect<O, InvalidOutput> =>
    Effect.mapError(
      decode(text),
      (error) =>
        new InvalidOutput({
          stepId,
          diagnostic: Termination.diagnose({ target: "structured_output", error, raw: text })
        })
    )
}

/** The toolkit's tools the step offers: all of them, none, or the named ones. */
const offered = <RT>(
  stepId: string,
  toolkit: Toolkit.Toolkit<RT> | undefined,
  names: ReadonlyArray<string> | undefined
): Effect.Effect<Toolkit.Toolkit<RT> | undefined, InvalidStep> => {
  if (names === undefined) return Effect.succeed(toolkit)
  if (names.length === 0) return Effect.succeed(undefined)
  const tools: Array<Tool.Any<RT>> = []
  for (const name of names) {
    const tool = toolkit?.byName.get(name)
    if (tool === undefined) {
      return Effect.fail(
        new InvalidStep({ stepId, message: `tools: the toolkit has no tool named ${JSON.stringify(name)}` })
      )
    }
    tools.push(tool)
  }
  return Effect.succeed(Toolkit.make(...tools))
}

const build = <I, O, E, R, S>(
  options: LlmOptions<I, O, E, R, S>,
  finish: (text: string) => Effect.Effect<O, InvalidOutput>
): StepLLM<I, O, E | LlmError, R | LanguageModel, S> => {
  const { id, prompt, output } = options
  const step: StepLLM<I, O, E | LlmError, R | LanguageModel, S> = {
    [TypeId]: variance,
    kind: "llm",
    id,
    model: options.model,
    instructions: options.instructions,
    tools: options.tools,
    output,
    params: options.params,
    emit: options.emit,
    prompt,
    [Runner]: (input, scope) =>
      Effect.gen(function*() {
        const { execution } = scope
        const toolkit = yield* offered(id, scope.toolkit, options.tools)
        if (prompt !== undefined) {
          const said = yield* attempt(id, "prompt", () => prompt(input, scope.context))
          execution.itemLog.append(
            ...(typeof said === "string" ? [userMessage(said, `prompt_${execution.turns + 1}`)] : said)
          )
        }
        const memory = Option.getOrUndefined(yield* Effect.serviceOption(Memory))
        const memoryScope = { threadId: execution.threadId, resourceId: execution.resourceId, contextId: execution.id }
        const logged = execution.itemLog.items
        const recalled = [
          ...(memory === undefined ? [] : yield* memory.recall(memoryScope, logged)),
          // The memories of the tools it offers, materialized in the execution.
          ...(toolkit === undefined
            ? []
            : ToolMemory.recall(toolkit.tools.map((tool) => tool.memory), execution.toolMemory))
        ]
        const turnNumber = ++execution.turns

        let outcome: AgentTurn.Outcome | undefined
        const ledger = scope.ledger
        const key = scope.path
        const history = recalled.length === 0 ? logged : [...recalled, ...logged]
        const header = { stepId: id, kind: "llm" as const, contextId: execution.id }
        /** Whether the step's `emit` lets a turn event through: a checkpointed step records what it streams. */
        const streams = (event: AgentEvent.TurnEvent) => allows(step, { _tag: "Turn", ...header, event })
        const request = {
          step: turnNumber,
          history,
          options: {
            model: options.model,
            instructions: options.instructions,
            tools: toolkit === undefined ? undefined : Toolkit.definitions(toolkit),
            params: options.params,
            output: output === undefined ? undefined : { name: "output", schema: Tool.toParameters(output) }
          },
          toolkit,
          // A checkpointed step records its answered turn and each call that ends, so a resumed one asks nothing twice.
          account: (completed: AgentTurn.Completed) =>
            Effect.suspend(() => {
              execution.account(completed.turn.usage, completed.cost)
              const accounting: Accounting = {
                usage: execution.tokens,
                cost: execution.cost,
                elapsedMs: execution.elapsed(),
                steps: execution.turns,
                lastItems: Replay.lastItems(completed.history)
              }
              if (ledger === undefined) return Effect.succeed(accounting)
              const { cost, turn } = completed
              const streamed = streams({ _tag: "TurnCompleted", step: turnNumber, turn, cost, accounting })
              const record = { step: turnNumber, completed: streamed ? { accounting, logged } : undefined }
              return Effect.as(Effect.orDie(ledger.answer(execution.id, key, turn, cost, record)), accounting)
            }),
          onToolResult: ledger === undefined
            ? undefined
            : (index: number, result: Toolkit.Result) =>
              Effect.orDie(ledger.toolDone(
                execution.id,
                key,
                index,
                ToolRecord.fromResult(result, toolkit),
                streams({ _tag: "ToolResult", step: turnNumber, ...ToolRecord.fromResult(result) })
              )),
          onToolStart: ledger === undefined
            ? undefined
            : (index: number) => Effect.orDie(ledger.toolStarted(execution.id, key, index)),
          idempotencyKey: ledger === undefined
            ? undefined
            : (index: number) => ledger.idempotencyKey(execution.id, key, index)
        }
        const then = (done: AgentTurn.Outcome) => {
          outcome = done
          return Loop.stop
        }
        const answered = ledger?.answered(execution.id, key)
        const resumed = answered === undefined
          ? undefined
          : yield* resumeTurn(id, execution, toolkit, history, answered)
        const turn = Loop.loop(
          undefined,
          () => resumed === undefined ? AgentTurn.stream(request, then) : AgentTurn.resume(request, resumed, then)
        )
        yield* (scope.sink === undefined
          ? Stream.runDrain(turn)
          : Stream.runForEach(turn, (event) => emit(scope, step, { _tag: "Turn", ...header, event }))).pipe(
            Effect.provideService(ToolMemory.CurrentStore, execution.toolMemory)
          )
        if (outcome === undefined) {
          return yield* Effect.die(new Error(`llm step ${id}: the turn ended without an outcome`))
        }

        const produced = [...outcome.turn.items, ...Toolkit.outputs(outcome.results)]
        execution.itemLog.append(...produced)
        scope.report(StepMeta.fromTurn(outcome.turn, outcome.cost))
        if (memory !== undefined) {
          const fresh = execution.itemLog.items.filter((item) => !execution.remembered.has(item))
          yield* memory.remember(memoryScope, fresh)
          for (const item of fresh) execution.remembered.add(item)
        }
        return yield* finish(Turn.text(outcome.turn))
      })
  }
  return step
}

/**
 * A step that runs one model turn on the context's item log (after its
 * `prompt`, if it has one), offering the `tools` of the toolkit and running
 * the calls the model makes, safely (a failing tool becomes an output the model
 * reads). The turn's items and the tool outputs are appended to the item log,
 * its usage and cost added to the context and every ancestor, and
 * `ctx.lastStepMeta` set. The output is the turn's text, or its `output` schema
 * decoded from it. The `Memory` in context, if any, is recalled before the
 * turn and told the new items after it; so are the memories of the tools it
 * offers (see `ToolMemory`), kept in the execution context.
 *
 * `Step.loop({ steps: [Step.llm(…)], until: Until.noToolCalls() })` is the agent loop.
 */
export function make<I = unknown, E = never, R = never, S = unknown>(
  options: LlmOptions<I, string, E, R, S> & { readonly output?: undefined }
): StepLLM<I, string, E | LlmError, R | LanguageModel, S>
export function make<O, I = unknown, E = never, R = never, S = unknown>(
  options: LlmOptions<I, O, E, R, S> & { readonly output: Schema.Codec<O, unknown> }
): StepLLM<I, O, E | LlmError, R | LanguageModel, S>
export function make<O, I, E, R, S>(
  options: LlmOptions<I, O, E, R, S>
): StepLLM<I, O | string, E | LlmError, R | LanguageModel, S> {
  const output = options.output
  if (output === undefined) {
    const { output: _, ...text } = options
    return build<I, string, E, R, S>(text, Effect.succeed)
  }
  return build(options, decoder(options.id, output))
}

/**
 * The turn a checkpointed `llm` step was answered before it was cut off: its
 * usage and cost accounted again (the context it was restored to predates
 * them), and the results of the calls that had ended, and of those of tools
 * that are not idempotent that had started (`Toolkit.outcomeUnknown`: they
 * are not run again).
 */
const resumeTurn = <RT>(
  stepId: string,
  execution: Execution<unknown>,
  toolkit: Toolkit.Toolkit<RT> | undefined,
  history: ReadonlyArray<Item.Item>,
  answered: Recorded.ResumableTurn
): Effect.Effect<AgentTurn.Answered> =>
  Effect.gen(function*() {
    execution.account(answered.turn.usage, answered.cost)
    const done = new Map<number, Toolkit.Result>()
    for (const [index, record] of answered.done) {
      const result = yield* ToolRecord.toResult(toolkit ?? Toolkit.make(), record).pipe(
        Effect.mapError((error) =>
          new ExecutionCheckpointFailed({
            executionId: execution.id,
            message: `step ${stepId}: ${error.message}`,
            cause: error
          })
        ),
        Effect.orDie
      )
      done.set(index, result)
    }
    const calls = Turn.functionCalls(answered.turn)
    for (const index of answered.started) {
      const call = calls[index]
      if (!done.has(index) && call !== undefined) done.set(index, Toolkit.outcomeUnknown(call))
    }
    return {
      completed: { turn: answered.turn, cost: answered.cost, history: [...history, ...answered.turn.items] },
      done
    }
  })
