/**
 * Durable agent runs: an agent defined once, whose runs are `effect/workflow`
 * workflows on the `ClusterWorkflowEngine` of a `DurableRunner`.
 *
 * A run is driven by the same `AgentMachine` as `AgentLoop`, with each model
 * turn, each tool call and each decision a recorded step of its journal (see
 * `RunSteps`, `RunJournal`): a run that a crash, a deploy or a shutdown
 * stopped resumes on a runner from its last recorded step, by itself, without
 * asking the model again for a turn it answered or running a finished tool
 * call again; one that keeps crashing its runners is parked (see
 * `RunParking`). A call of a tool that `needsApproval` waits on a durable
 * decision (`approve`), which may come hours later, from another process.
 * Every run logs its events (see `DurableEvent`), which `events` streams to a
 * UI, again from any turn on. A run's recorded steps are its history: its
 * checkpoints are listed (`checkpoints`), read (`stateAt`) and forked into new
 * runs (`fork`; see `DurableHistory`, `DurableFork`).
 *
 * @since 0.1.0
 */
import * as AgentEvent from "@agentloop/core/agent/AgentEvent"
import type * as AgentHistory from "@agentloop/core/agent/AgentHistory"
import type * as AgentLoop from "@agentloop/core/agent/AgentLoop"
import * as AgentMachine from "@agentloop/core/agent/AgentMachine"
import type * as AgentTurn from "@agentloop/core/agent/AgentTurn"
import type * as Approval from "@agentloop/core/Approval"
import * as Item from "@agentloop/core/Item"
import type * as LanguageModel from "@agentloop/core/LanguageModel"
import type * as RunHistory from "@agentloop/core/RunHistory"
import * as RunId from "@agentloop/core/RunId"
import * as Termination from "@agentloop/core/Termination"
import * as Toolkit from "@agentloop/core/Toolkit"
import * as Turn from "@agentloop/core/Turn"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import * as Workflow from "effect/workflow/Workflow"
import type { WorkflowEngine } from "effect/workflow/WorkflowEngine"
import * as DurableApproval from "./DurableApproval.ts"
import * as DurableEvent from "./DurableEvent.ts"
import * as DurableFork from "./DurableFork.ts"
import * as DurableHistory from "./DurableHistory.ts"
import * as RunJournal from "./RunJournal.ts"
import * as RunLog from "./RunLog.ts"
import * as RunParking from "./RunParking.ts"
import * as RunRetention from "./RunRetention.ts"
import * as RunSteps from "./RunSteps.ts"
import type { RunKey, RunStore, RunStoreError } from "./RunStore.ts"

/**
 * The definition of a durable agent: `AgentLoop.Options` without a run's own
 * `input` and `runId` (nor `compactAfter`: the engine keeps its own records;
 * nor `thread`: threads live in a `Checkpointer`, for `AgentLoop` runs and step
 * programs), and how many executions of a run in a row may die with their
 * process before the run is parked (`maxCrashes`, default
 * `RunParking.defaultMaxCrashes`; see `RunParking`).
 *
 * @since 0.1.0
 * @category models
 */
export type Options<O = string, R = never, E = never, RU = never> =
  & Omit<AgentLoop.Options<O, R, E, RU>, "input" | "runId" | "compactAfter" | "thread">
  & { readonly maxCrashes?: number | undefined }

/**
 * What starts a run: its id (the run's identity: starting the same id again joins it) and its task.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Start = Schema.Struct({
  runId: RunId.RunId,
  input: RunSteps.Input
})
export type Start = typeof Start.Type

/**
 * A durable agent. `O` is its output; `R` and `RU` are the services of its tools and its stop predicate.
 *
 * @since 0.1.0
 * @category models
 */
export interface DurableAgent<O, R, RU> {
  readonly name: string
  /** The workflow of its runs (its tag is the agent's name). */
  readonly workflow: Workflow.Workflow<
    string,
    typeof Start,
    Schema.Codec<AgentEvent.RunResult<O>, unknown>,
    typeof Termination.Error
  >
  /**
   * Registers the agent with the runner's engine, so that the runner executes
   * (and resumes) its runs. Provide it on every runner, with the model and the
   * services of the tools and predicate.
   */
  readonly layer: Layer.Layer<never, never, WorkflowEngine | RunStore | LanguageModel.LanguageModel | R | RU>
  /**
   * Runs `start.runId` and waits for its result (a run that exists already is
   * joined, and a finished one answers at once); fails with the run's
   * termination. Any process of the group may call it, a client included. A
   * run id that `RunId` refuses fails with `InvalidRunId` before anything is
   * stored, a parked run with `RunParked` (also when it is parked while this
   * waits for it).
   */
  readonly run: (
    start: Start
  ) => Effect.Effect<AgentEvent.RunResult<O>, RunError, WorkflowEngine | RunStore>
  /**
   * Starts `start.runId` without waiting; a run that exists already (started
   * or forked) is left as it is. The run's input is recorded before the
   * engine holds the start: from then on, a fork onto the id is refused.
   */
  readonly start: (
    start: Start
  ) => Effect.Effect<void, RunId.InvalidRunId | RunParking.RunParked | RunStoreError, WorkflowEngine | RunStore>
  /**
   * The result of `runId`, once it has one; `None` while it runs, waits for a
   * decision, or never started. Fails with `RunParked` while it is parked.
   */
  readonly result: (
    runId: string
  ) => Effect.Effect<Option.Option<AgentEvent.RunResult<O>>, RunError, WorkflowEngine | RunStore>
  /** The parked runs of this agent, each with the reason it was parked for (see `RunParking`). */
  readonly parked: Effect.Effect<ReadonlyArray<RunParking.RunParked>, RunStoreError, RunStore>
  /**
   * Releases a parked run: it goes on from its last recorded step, on
   * whichever runner picks it up. `false` when it was not parked.
   */
  readonly unpark: (
    runId: string
  ) => Effect.Effect<boolean, RunId.InvalidRunId | RunStoreError, WorkflowEngine | RunStore>
  /**
   * Records a decision for the call whose `ApprovalRequested` event carried
   * `token`, once: a token that is not the one the run issued, for a call the
   * run has not reached, or for a call decided already is refused (see
   * `DurableApproval.approve`).
   */
  readonly approve: (
    token: string,
    decision: Approval.Decision
  ) => Effect.Effect<void, DurableApproval.ApproveError, WorkflowEngine | RunStore>
  /**
   * The events of `runId` from its log: those logged so far from turn
   * `fromStep` on, then the rest as they are logged, up to `Finished`; the
   * stream fails with the run's termination when the run fails. A run that has
   * not started yet is waited for.
   */
  readonly events: (
    runId: string,
    options?: RunLog.ReadOptions
  ) => Stream.Stream<DurableEvent.DurableEvent<O>, Termination.Error | RunStoreError | RunId.InvalidRunId, RunStore>
  /**
   * The checkpoints of `runId`, in the order the run wrote them (see
   * `DurableHistory.checkpoints`). Any process of the group may call it; a
   * run in flight is read without being disturbed.
   *
   * @since 0.3.0
   */
  readonly checkpoints: (
    runId: string
  ) => Effect.Effect<ReadonlyArray<AgentHistory.Checkpoint>, DurableHistory.ReadError, RunStore>
  /**
   * Run `runId` as it was at checkpoint `index` (`-1` for the last): see
   * `DurableHistory.stateAt`.
   *
   * @since 0.3.0
   */
  readonly stateAt: (
    runId: string,
    index: number
  ) => Effect.Effect<
    AgentHistory.State<O>,
    DurableHistory.ReadError | RunHistory.CheckpointNotFound,
    RunStore
  >
  /**
   * Starts run `options.runId` from checkpoint `options.at` of run
   * `options.from`, optionally with its history edited there
   * (`AgentHistory.dropLastAnswer`, `replaceToolOutput`, `addMessage`, or
   * any `AgentHistory.Edit`): the fork is recorded (see
   * `DurableFork.fork`), then started as `start` would, with its source's
   * input; it runs on whichever runner picks it up. Follow it like any run
   * (`events`, `result`, `run` with the source's input). The source is not
   * changed. Should the process die between the two, the fork is recorded and
   * not started: `start` it.
   *
   * @since 0.3.0
   */
  readonly fork: (
    options: DurableFork.ForkOptions
  ) => Effect.Effect<void, DurableFork.ForkError, WorkflowEngine | RunStore>
}

/**
 * Why running, or asking for the result of, a run failed: its termination, or
 * it could not be asked.
 *
 * @since 0.2.0
 * @category errors
 */
export type RunError = Termination.Error | RunId.InvalidRunId | RunParking.RunParked | RunStoreError

/**
 * Defines the durable agent `name` (unique among the agents of a database: it
 * names the workflow and keys the runs). Its definition is code: every runner
 * must provide the same one with `layer`. Its output is the last turn's text,
 * or what `output` decodes.
 *
 * @example
 * ```ts
 * import { Tool, Toolkit } from "@agentloop/core"
 * import { DurableAgent, DurableRunner } from "@agentloop/durable"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Schema } from "effect"
 * import { mkdtempSync, rmSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   output: Schema.Finite,
 *   execute: ({ a, b }) => Effect.succeed(a + b)
 * })
 *
 * // The agent is code, the same on every runner; each of its runs is a workflow that survives crashes.
 * const calculator = DurableAgent.make("calculator", { instructions: "Use the tools.", toolkit: Toolkit.make(add) })
 *
 * const program = Effect.gen(function*() {
 *   const result = yield* calculator.run({ runId: "sum-1", input: "What is 2 + 3?" })
 *   if (result._tag === "Stopped") console.log(result.output) // 5
 *   // The same run id again: the recorded result, without asking the model.
 *   const again = yield* calculator.run({ runId: "sum-1", input: "What is 2 + 3?" })
 *   console.log(again._tag) // Stopped
 * })
 *
 * const model = MockLanguageModel.layer([
 *   MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 } }]),
 *   MockLanguageModel.textTurn("5")
 * ])
 * const dir = mkdtempSync(join(tmpdir(), "agentloop-"))
 * const runner = calculator.layer.pipe(
 *   Layer.provideMerge(DurableRunner.layerSqlite({ filename: join(dir, "runs.db") })),
 *   Layer.provide(model)
 * )
 * Effect.runPromise(program.pipe(Effect.provide(runner))).finally(() => rmSync(dir, { recursive: true, force: true }))
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export function make<R = never, E = never, RU = never>(
  name: string,
  options: Options<string, R, E, RU> & { readonly output?: undefined }
): DurableAgent<string, R, RU>
export function make<O, R = never, E = never, RU = never>(
  name: string,
  options: Options<O, R, E, RU> & { readonly output: Schema.Codec<O, unknown> }
): DurableAgent<O, R, RU>
export function make<O, R, E, RU>(
  name: string,
  options: Options<O, R, E, RU>
): DurableAgent<O, R, RU> | DurableAgent<string, R, RU> {
  const output = options.output
  return output === undefined
    ? build<string, R, E, RU>(name, { ...options, output: undefined }, Schema.String)
    : build(name, { ...options, output }, output)
}

const build = <O, R, E, RU>(
  name: string,
  options: Options<O, R, E, RU>,
  output: Schema.Codec<O, unknown>
): DurableAgent<O, R, RU> => {
  const toolkit = options.toolkit
  // What the finish tool submits keeps its type through storage: it is encoded with the tool's output Schema.
  const finish = options.finish === undefined ? undefined : toolkit?.byName.get(options.finish)
  const submitted: Schema.Codec<unknown, unknown> = finish?.output ?? Schema.Unknown
  const resultSchema: Schema.Codec<AgentEvent.RunResult<O>, unknown> = AgentEvent.RunResult(output, submitted)
  const eventSchema: Schema.Codec<DurableEvent.DurableEvent<O>, unknown> = DurableEvent.schema(output, submitted)
  const decisionCodec = RunJournal.codec(RunSteps.decisionRecord(output, submitted))
  const maxCrashes = options.maxCrashes ?? RunParking.defaultMaxCrashes

  const workflow = Workflow.make(name, {
    payload: Start,
    success: resultSchema,
    error: Termination.Error,
    idempotencyKey: (start) => start.runId
  })

  /** One execution of a run: from its first step, replaying those it recorded. */
  const execution = (start: Start, executionId: string) =>
    Effect.gen(function*() {
      const run: RunKey = { agent: name, runId: start.runId }
      const journal = yield* RunJournal.open(run, eventSchema)
      // A run whose log ended (cancelled while it executed: the cancellation interrupts it, and it replays) ends so.
      if (journal.ended !== undefined) return yield* Effect.fail(journal.ended)
      yield* RunParking.enter(run, { maxCrashes, recordedSteps: journal.recordedSteps })
      const startedAt = yield* RunSteps.start(journal)
      // A fork's input is its source's, whatever its start says.
      const input = yield* RunSteps.input(journal, start.input)
      const machine = yield* AgentMachine.make<O, R, E, RU>({ ...options, input, runId: start.runId }, { startedAt })

      /** Issues the wait points of the turn's calls that need a decision, and logs their requests. */
      const requestDecisions = (step: number, calls: ReadonlyArray<Item.FunctionCall>) =>
        Effect.gen(function*() {
          const waits = calls.map((call, index) =>
            Toolkit.needsApproval(toolkit, call) ? DurableApproval.waitName(step, index) : undefined
          )
          const issued = yield* DurableApproval.issue(run, waits.filter((wait) => wait !== undefined)).pipe(
            Effect.retry(RunJournal.retry),
            Effect.orDie
          )
          journal.log(
            step,
            calls.flatMap((call, index) => {
              const wait = issued.get(waits[index] ?? "")
              return wait === undefined ? [] : [{ _tag: "ApprovalRequested", step, call, token: wait.token }]
            })
          )
          return waits.map((wait) => wait === undefined ? undefined : issued.get(wait))
        })

      /** The turn's calls, each a recorded step, once every decision they wait for is recorded. */
      const runCalls = (
        step: number,
        completed: AgentTurn.Completed,
        calls: ReadonlyArray<Item.FunctionCall>,
        issued: ReadonlyArray<DurableApproval.Issued | undefined>
      ) =>
        Effect.gen(function*() {
          // Every decision first: a decision recorded while calls run would interrupt them to replay the run.
          const decisions = yield* Effect.forEach(issued, (wait, index) => {
            if (wait === undefined) return Effect.undefined
            return wait.decision === undefined
              ? DurableDeferred.await(DurableApproval.deferred(step, index))
              : Effect.succeed(wait.decision)
          })
          const records = yield* Effect.forEach(
            calls,
            (call, index) =>
              RunSteps.tool(journal, {
                executionId,
                step,
                index,
                call,
                toolkit,
                tools: machine.tools,
                decision: decisions[index]
              }),
            { concurrency: machine.tools.concurrency ?? 4 }
          )
          journal.log(step, records.map((call) => ({ _tag: "ToolResult", step, ...call })))
          const results = yield* Effect.forEach(records, (record) => RunSteps.result(toolkit, record))
          const outcome: AgentTurn.Outcome = {
            ...completed,
            history: [...completed.history, ...Toolkit.outputs(results)],
            results
          }
          return outcome
        })

      let step = 0
      const turns = Effect.gen(function*() {
        let state = yield* machine.start
        while (true) {
          yield* machine.beforeTurn(state)
          step = state.steps + 1
          const record = yield* RunSteps.turn(journal, machine, state)
          const completed = RunSteps.completed(record, state.history)
          const books = yield* machine.account(state, completed)
          journal.log(step, [
            { _tag: "TurnStarted", step },
            ...record.notes,
            { _tag: "TurnCompleted", step, turn: completed.turn, cost: completed.cost, accounting: books.accounting }
          ])
          const calls = Turn.functionCalls(completed.turn)
          const issued = calls.length === 0 ? [] : yield* requestDecisions(step, calls)
          // The turn is recorded before its calls run or its decision is made; a UI sees it however long they take.
          yield* journal.commit
          const outcome = calls.length === 0
            ? { ...completed, results: [] }
            : yield* runCalls(step, completed, calls, issued)
          const decision = yield* RunSteps.decide(journal, machine, decisionCodec, books.state, outcome)
          const transition = RunSteps.transition(decision, outcome)
          journal.log(step, transition.events)
          if (transition._tag === "Finish") {
            yield* journal.commit
            return transition.result
          }
          // A decision to go on is recorded with the next turn: one write per turn, not two.
          state = transition.state
        }
      })
      return yield* Effect.tapError(
        turns,
        (error) => error._tag === "StepTaken" ? Effect.void : journal.fail(step, error)
      )
    })

  /** A run's execution; one that finds a step recorded by another executor starts again from what is recorded. */
  const execute = (start: Start, executionId: string) =>
    execution(start, executionId).pipe(
      Effect.retry({ times: 3, while: (error) => error._tag === "StepTaken" }),
      Effect.catchTag("StepTaken", Effect.die),
      // A result, a termination or a defect (which the engine keeps as the run's result) finishes the run (see
      // `RunRetention`); waiting, stopping or dying with the process does not.
      Effect.onExit((exit) =>
        !Exit.hasInterrupts(exit)
          ? RunRetention.finished({ agent: name, runId: start.runId }, executionId)
          : Effect.void
      ),
      // Waiting for a decision, or stopping with its runner, is not a crash.
      Effect.onInterrupt(() => RunParking.interrupted({ agent: name, runId: start.runId }))
    )

  const executionId = (runId: string) => workflow.executionId({ runId, input: "" })
  const history: DurableHistory.Agent<O, R, E, RU> = { name, options, decisions: decisionCodec }
  const runnable = (start: Start) =>
    RunId.validate(start.runId).pipe(
      Effect.andThen(RunParking.check({ agent: name, runId: start.runId })),
      // The id is taken before the engine holds the start: no fork can become the run this start asked for.
      Effect.andThen(RunSteps.recordInput({ agent: name, runId: start.runId }, start.input)),
      Effect.as(start)
    )

  return {
    name,
    workflow,
    layer: workflow.toLayer(execute),
    run: (start) =>
      Effect.flatMap(runnable(start), (start) =>
        // A run parked while it is waited for would never answer: the wait ends with the reason.
        Effect.raceFirst(
          workflow.execute(start),
          Effect.sleep("1 second").pipe(
            Effect.andThen(RunParking.check({ agent: name, runId: start.runId })),
            Effect.forever
          )
        )),
    start: (start) => Effect.flatMap(runnable(start), (start) => workflow.execute(start, { discard: true })),
    result: (runId) =>
      RunId.validate(runId).pipe(
        Effect.flatMap(executionId),
        Effect.flatMap((id) => workflow.poll(id)),
        Effect.flatMap((polled): Effect.Effect<Option.Option<AgentEvent.RunResult<O>>, RunError, RunStore> =>
          Option.isNone(polled) || polled.value._tag === "Suspended"
            ? Effect.as(RunParking.check({ agent: name, runId }), Option.none())
            : Effect.asSome(polled.value.exit)
        )
      ),
    parked: RunParking.parked(name),
    unpark: (runId) =>
      Effect.flatMap(RunId.validate(runId), (runId) => RunParking.unpark(workflow, { agent: name, runId })),
    approve: (token, decision) => DurableApproval.approve(workflow, token, decision),
    events: (runId, readOptions) =>
      Stream.unwrap(
        Effect.map(RunId.validate(runId), (runId) => RunLog.read({ agent: name, runId }, eventSchema, readOptions))
      ),
    checkpoints: (runId) => DurableHistory.checkpoints(history, runId),
    stateAt: (runId, index) => DurableHistory.stateAt(history, runId, index),
    fork: (forkOptions) =>
      Effect.flatMap(
        DurableFork.fork(history, forkOptions),
        (input) => workflow.execute({ runId: forkOptions.runId, input }, { discard: true })
      ).pipe(Effect.asVoid)
  }
}
