/**
 * A crash-test kit for apps: runs an app's agent (an `AgentLoop` run with a
 * `runId`) or step program (`Step.execute` with an `id`) once without
 * interruption, then once per step it recorded, killing it the moment that
 * step's append reached the `Checkpointer` and resuming it with the same
 * store, and reports, per kill point, whether the resumed run kept the app's
 * invariants: no turn of the model asked twice, no tool that is not
 * idempotent run twice, the same result as the uninterrupted run.
 *
 * Two ways to kill:
 * - {@link everyCheckpoint} interrupts the program in this process (fast: a
 *   few milliseconds a kill point), on any store;
 * - {@link everyCheckpointKilled} runs the program in a child process (see
 *   `CrashChild`) that dies by a real `SIGKILL`, and resumes it in another,
 *   on a store that outlives processes (files, SQLite, PostgreSQL).
 *
 * The kit sees "after each recorded step" through the store: it wraps the
 * `Checkpointer`, counts the appends that reached it, and kills the program
 * after the one it waits for, so the program stops exactly there. It counts
 * the model's turns itself (the model is a `MockLanguageModel` script, or
 * the loopback server's across processes), and the program's tool runs
 * through `CrashJournal.track` (and other effects through
 * `CrashJournal.record`). Each kill point runs on runs of its own in the
 * store, so the store is shared by all of them.
 *
 * @since 0.2.0
 */
import { Checkpointer, layerMemory } from "@agentloop/core/Checkpointer"
import * as Item from "@agentloop/core/Item"
import { LanguageModel } from "@agentloop/core/LanguageModel"
import * as Turn from "@agentloop/core/Turn"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Equivalence from "effect/Equivalence"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Os from "node:os"
import * as Path from "node:path"
import * as CrashChild from "./CrashChild.ts"
import * as CrashJournal from "./CrashJournal.ts"
import * as CrashReport from "./CrashReport.ts"
import * as CrashCheckpointer from "./internal/crashCheckpointer.ts"
import * as LoopbackModel from "./LoopbackModel.ts"
import * as MockLanguageModel from "./MockLanguageModel.ts"
import * as ProviderServer from "./ProviderServer.ts"
import * as TestProcess from "./TestProcess.ts"

/** One kill point's runs: killed after `after` appends (none for the uninterrupted run), then resumed. */
interface Scenario<A> {
  readonly killed: boolean
  readonly entry: string
  readonly result: CrashReport.Outcome<A>
  readonly observed: CrashReport.Observed
}

/** Runs `scenario` uninterrupted, then killed after each append it made (or those of `at`), into a report. */
const runAll = <A, E, R>(
  scenario: (killAfter: number | undefined) => Effect.Effect<Scenario<A>, E, R>,
  options: {
    readonly at?: ReadonlyArray<number> | undefined
    readonly equivalence?: Equivalence.Equivalence<A> | undefined
  }
): Effect.Effect<CrashReport.Report<A>, E, R> =>
  Effect.gen(function*() {
    const uninterrupted = yield* scenario(undefined)
    const baseline: CrashReport.Uninterrupted<A> = { result: uninterrupted.result, observed: uninterrupted.observed }
    const points = options.at ?? uninterrupted.observed.appends.map((_, index) => index + 1)
    const killPoints = yield* Effect.forEach(points, (after) =>
      Effect.map(scenario(after), (run): CrashReport.KillPoint<A> => ({
        after,
        entry: run.entry,
        result: run.result,
        observed: run.observed,
        problems: CrashReport.problems(baseline, { after, ...run }, options.equivalence)
      })))
    return { uninterrupted: baseline, killPoints }
  })

const scopeOf = (name: string) => `crash-test-${Math.random().toString(36).slice(2, 10)}/${name}`

/**
 * Runs `program` (an agent run with a `runId`, or a step program with an
 * `id`) once uninterrupted, then once per append it made to the
 * `Checkpointer` (or per append of `at`, 1 for the first): killed the
 * moment that append reached the store (interrupted in this process:
 * nothing after it runs), then executed again, which resumes it. Returns a
 * report per kill point; `CrashReport.verify` fails with what broke.
 *
 * Each run (the uninterrupted one, and each kill point's) asks its own
 * `MockLanguageModel` answering `model` from the first reply, kept for both
 * halves of a killed run, as a provider outlives a crash. `layer` provides
 * the program's services (`AgentLoop.layer`; `Layer.empty` for none) on that
 * model and the store, built afresh each time the program runs, as a new
 * process would.
 * `checkpointer` is the store (default `Checkpointer.layerMemory`), built
 * once; the kit provides it, wrapped, to the program (`layer` must not
 * provide a `Checkpointer` of its own, or the kit sees no step). Results are compared with `equivalence` (default `Equal.equals`):
 * return what should be the same, not the run's timings.
 *
 * @example
 * ```ts
 * import { AgentLoop, Tool, Toolkit } from "@agentloop/core"
 * import { CrashJournal, CrashReport, CrashTest, MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Schema } from "effect"
 *
 * const charge = Tool.make({
 *   name: "charge",
 *   description: "Charges the card",
 *   input: Schema.Struct({ cents: Schema.Int }),
 *   output: Schema.String,
 *   execute: ({ cents }) => Effect.succeed(`charged ${cents}`)
 * })
 *
 * const program = Effect.flatMap(AgentLoop.AgentLoop, (agent) =>
 *   agent.run({ input: "Charge 5 cents", toolkit: CrashJournal.track(Toolkit.make(charge)), runId: "order-1" })
 * ).pipe(Effect.map((result) => result._tag === "Stopped" ? result.output : result._tag))
 *
 * const test = Effect.gen(function*() {
 *   const report = yield* CrashTest.everyCheckpoint({
 *     program,
 *     layer: AgentLoop.layer,
 *     model: [
 *       MockLanguageModel.callsTurn([{ name: "charge", arguments: { cents: 5 } }]),
 *       MockLanguageModel.textTurn("Charged.")
 *     ]
 *   })
 *   yield* CrashReport.verify(report)
 *   // charge is not idempotent: its start is recorded before it runs.
 *   console.log(report.killPoints.map((point) => point.entry).join(", "))
 *   // Answered, ToolStarted, ToolDone, Decided, Answered, Finished
 * })
 *
 * Effect.runPromise(test)
 * ```
 *
 * @since 0.2.0
 * @category running
 */
export const everyCheckpoint = <A, E, R, ROut, LE, RIn, CE = never, CR = never>(options: {
  readonly program: Effect.Effect<A, E, R>
  readonly model: ReadonlyArray<MockLanguageModel.Reply> | MockLanguageModel.Respond
  readonly layer: Layer.Layer<ROut, LE, RIn>
  readonly checkpointer?: Layer.Layer<Checkpointer, CE, CR> | undefined
  readonly at?: ReadonlyArray<number> | undefined
  readonly equivalence?: Equivalence.Equivalence<A> | undefined
}): Effect.Effect<
  CrashReport.Report<A>,
  LE | CE,
  Exclude<R, ROut | LanguageModel | Checkpointer> | Exclude<RIn, LanguageModel | Checkpointer> | CR
> =>
  Effect.scoped(Effect.gen(function*() {
    const checkpointer: Layer.Layer<Checkpointer, CE, CR> = options.checkpointer ?? layerMemory
    const store = Context.get(yield* Layer.build(checkpointer), Checkpointer)
    const scenario = (killAfter: number | undefined) =>
      Effect.gen(function*() {
        const { model, recorder } = yield* MockLanguageModel.make(options.model)
        const scope = scopeOf(killAfter === undefined ? "uninterrupted" : `killed-after-${killAfter}`)
        const appends: Array<string> = []
        const effects: Array<CrashJournal.SideEffect> = []
        const journal = (effect: CrashJournal.SideEffect) => Effect.sync(() => void effects.push(effect))
        /** Runs the program once, killed after append `after` if it gets that far. */
        const execute = (after: number | undefined) =>
          Effect.gen(function*() {
            const killed = yield* Deferred.make<void>()
            const wrapped = CrashCheckpointer.wrap(store, {
              scope,
              onAppend: (entry) => Effect.sync(() => void appends.push(entry)),
              kill: after === undefined ? undefined : {
                after,
                // The fiber that appended stops at once; the race below interrupts every other.
                kill: () => Effect.andThen(Deferred.succeed(killed, undefined), Effect.interrupt)
              }
            })
            const world = Layer.succeedContext(
              Context.make(LanguageModel, model).pipe(Context.add(Checkpointer, wrapped))
            )
            const exit = yield* Effect.raceFirst(
              options.program.pipe(
                Effect.provide(Layer.provideMerge(options.layer, world)),
                Effect.provideService(CrashJournal.Journal, journal),
                Effect.exit
              ),
              Effect.as(Deferred.await(killed), Exit.interrupt())
            )
            return { exit, killed: yield* Deferred.isDone(killed) }
          })
        const first = yield* execute(killAfter)
        const resumed = first.killed ? (yield* execute(undefined)).exit : first.exit
        const scenario: Scenario<A> = {
          killed: first.killed,
          entry: killAfter === undefined ? "none" : appends[killAfter - 1] ?? "none",
          result: CrashReport.outcome(resumed),
          observed: { appends, turns: (yield* recorder.requests).map((request) => request.history), effects }
        }
        return scenario
      })
    return yield* runAll(scenario, options)
  }))

const Body = Schema.Struct({ history: Item.History })
const decodeBody = Schema.decodeUnknownOption(Body)
const decodeMessage = Schema.decodeUnknownOption(CrashChild.Message)

/** What a child reported: its messages for the kit, and how it ended. */
const reported = (child: TestProcess.Child) =>
  child.messages.flatMap((message) => Option.toArray(decodeMessage(message["crashTest"])))

/**
 * Runs the program of the module `entry` (a path; the module calls
 * `CrashChild.run`) in a child process once uninterrupted, then once per
 * append it made to its `Checkpointer` (or per append of `at`, 1 for the
 * first): the child sends itself `SIGKILL` the moment that append reached
 * the store, and a new child executes the program again, which resumes it.
 * Returns a report per kill point, the program's values as JSON;
 * `CrashReport.verify` fails with what broke.
 *
 * The children ask a loopback server, started here, for the model's turns:
 * `model` is their script (turns, in order, or a function of the request's
 * history and its index), from the first turn for each run and kept for both
 * halves of a killed one. `config` is passed to each child (read with
 * `TestProcess.config`), and `execArgv` to Node (`--conditions=...`,
 * `--import=...`, whatever the app's modules need to load).
 *
 * Each kill point starts two Node processes (with Node's compile cache on,
 * in `NODE_COMPILE_CACHE` or the system's temporary folder, so they start
 * faster): give it a few kill points (`at`) in a test that must be fast, and
 * the rest to {@link everyCheckpoint}.
 *
 * @since 0.2.0
 * @category running
 */
export const everyCheckpointKilled = (options: {
  readonly entry: string
  readonly model:
    | ReadonlyArray<Turn.Turn>
    | ((request: { readonly history: ReadonlyArray<Item.Item> }, index: number) => Turn.Turn)
  readonly config?: unknown
  readonly execArgv?: ReadonlyArray<string> | undefined
  readonly at?: ReadonlyArray<number> | undefined
  readonly equivalence?: Equivalence.Equivalence<Schema.Json> | undefined
}): Effect.Effect<CrashReport.Report<Schema.Json>> =>
  Effect.scoped(Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const model = options.model
    const scenario = (killAfter: number | undefined) =>
      Effect.gen(function*() {
        yield* server.reset
        const offset = (yield* server.requests).length
        if (typeof model === "function") {
          yield* server.handle((request, index) =>
            Option.match(decodeBody(request.body), {
              onNone: () => ProviderServer.status(400, "CrashTest: a request without a history"),
              onSome: (body) => LoopbackModel.reply(model(body, index - offset))
            })
          )
        } else {
          yield* server.reply(...model.map(LoopbackModel.reply))
        }
        const scope = scopeOf(killAfter === undefined ? "uninterrupted" : `killed-after-${killAfter}`)
        const start = (runner: string, after: number | undefined) =>
          Effect.scoped(Effect.gen(function*() {
            const settings: CrashChild.Settings = {
              provider: server.url,
              runner,
              scope,
              killAfter: after ?? null
            }
            const child = yield* TestProcess.spawn(options.entry, options.config ?? null, {
              execArgv: options.execArgv,
              env: {
                [CrashChild.variable]: Schema.encodeSync(Schema.fromJsonString(CrashChild.Settings))(settings),
                // The children load the same modules: compiled once, they start in about half the time.
                NODE_COMPILE_CACHE: process.env["NODE_COMPILE_CACHE"] ??
                  Path.join(Os.tmpdir(), "agentloop-compile-cache")
              }
            })
            const code = yield* child.exit
            return { code, messages: reported(child), stderr: child.stderr() }
          }))
        const first = yield* start("first", killAfter)
        const firstEnded = first.messages.find((message) => message._tag === "Ended")
        const killed = firstEnded === undefined
        if (killed && first.code !== null) {
          return yield* Effect.die(
            new Error(
              `CrashTest: the child exited (code ${first.code}) without ending its program; its stderr:\n${first.stderr}`
            )
          )
        }
        const second = killed ? yield* start("resumed", undefined) : first
        const ended = second.messages.find((message) => message._tag === "Ended")
        if (ended === undefined || ended._tag !== "Ended") {
          return yield* Effect.die(
            new Error(
              `CrashTest: the resumed child (code ${second.code}) did not end its program; its stderr:\n${second.stderr}`
            )
          )
        }
        const messages = killed ? [...first.messages, ...second.messages] : first.messages
        const appends = messages.flatMap((message) => message._tag === "Appended" ? [message.entry] : [])
        const requests = (yield* server.requests).slice(offset)
        const result: Scenario<Schema.Json> = {
          killed,
          entry: killAfter === undefined ? "none" : appends[killAfter - 1] ?? "none",
          result: ended.result,
          observed: {
            appends,
            turns: requests.map((request) =>
              Option.match(decodeBody(request.body), {
                onNone: () => [],
                onSome: (body) => body.history
              })
            ),
            effects: messages.flatMap((message) => message._tag === "Effect" ? [message.effect] : [])
          }
        }
        return result
      })
    return yield* runAll(scenario, options)
  })).pipe(Effect.provide(ProviderServer.layer))
