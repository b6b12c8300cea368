/**
 * A run's progress in a terminal, for a person: `agent.stream(...).pipe(Reporter.pretty)`
 * prints each turn, the text as it streams, every tool call with a spinner
 * while it runs and its duration when it ends, the cost so far, and how the
 * run ended, and passes the events on unchanged. A step program's stream
 * (`Step.stream`) prints the same way, its steps and sub-agents included.
 *
 * It writes to the `Reporter.Output` in context ({@link layerStdio} for the
 * process's standard output, {@link layer} for any writer). When the output
 * is not a terminal it stays quiet: no spinner, no colours, no cursor
 * movement, only plain lines a log file keeps. Money prints rounded to a
 * millionth of a dollar (`$0.000320`).
 *
 * @since 0.2.0
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stdio from "effect/Stdio"
import * as Stream from "effect/Stream"
import type * as Accounting from "../Accounting.ts"
import type * as AgentEvent from "../agent/AgentEvent.ts"
import type * as Cost from "../Cost.ts"
import * as StepError from "../step/StepError.ts"
import type * as StepEvent from "../step/StepEvent.ts"
import * as Termination from "../Termination.ts"
import * as Turn from "../Turn.ts"

/**
 * Where a reporter writes, and whether it is a terminal (which turns the spinner and colours on).
 *
 * @since 0.2.0
 * @category output
 */
export class Output extends Context.Service<Output, {
  readonly write: (text: string) => Effect.Effect<void>
  readonly isTerminal: boolean
}>()("@agentloop/core/stream/Reporter/Output") {}

/**
 * An output that writes with `write`.
 *
 * @since 0.2.0
 * @category output
 */
export const layer = (
  write: (text: string) => Effect.Effect<void>,
  options: { readonly isTerminal?: boolean | undefined } = {}
): Layer.Layer<Output> => Layer.succeed(Output, { write, isTerminal: options.isTerminal ?? false })

/**
 * The process's standard output, through effect's `Stdio` (Node: `NodeStdio.layer`
 * or `NodeServices.layer` of `@effect/platform-node`); a write that fails is dropped.
 *
 * @since 0.2.0
 * @category output
 */
export const layerStdio: Layer.Layer<Output, never, Stdio.Stdio> = Layer.effect(
  Output,
  Effect.gen(function*() {
    const stdio = yield* Stdio.Stdio
    const isTerminal = yield* stdio.stdoutIsTerminal
    return {
      isTerminal,
      write: (text: string) => Stream.run(Stream.succeed(text), stdio.stdout()).pipe(Effect.ignore)
    }
  })
)

/**
 * An amount in USD as a person reads it: `$0.000320`, or `cost unknown` for a model without a price.
 *
 * @since 0.2.0
 * @category formatting
 */
export const usd = (cost: Cost.Cost): string => cost === null ? "cost unknown" : `$${cost.toFixed(6)}`

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`

const spinnerFrames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

const totals = (books: Accounting.Accounting) =>
  `${books.steps} turn${books.steps === 1 ? "" : "s"} · ${books.usage.input} in / ${books.usage.output} out tokens · ${
    usd(books.cost)
  } · ${seconds(books.elapsedMs)}`

/** The events a reporter prints. */
type Reported = AgentEvent.AgentEvent<unknown, unknown> | StepEvent.Event<unknown>

interface Running {
  readonly name: string
  readonly since: number
}

/** The text of each event and of each spinner tick; its state is the line it is on and the calls running. */
const renderer = (terminal: boolean) => {
  const style = (code: number, reset: number) => (text: string) =>
    terminal ? `\x1b[${code}m${text}\x1b[${reset}m` : text
  const dim = style(2, 22)
  const green = style(32, 39)
  const red = style(31, 39)
  const cyan = style(36, 39)
  let atLineStart = true
  let status: string | undefined
  let frame = 0
  let waitingSince: number | undefined
  const running = new Map<string, Running>()

  const line = (text: string) => `${atLineStart ? "" : "\n"}${text}\n`
  const print = (text: string): string => {
    if (text === "") return ""
    atLineStart = text.endsWith("\n")
    return text
  }
  const clearStatus = () => {
    if (status === undefined) return ""
    status = undefined
    return "\r\x1b[2K"
  }
  const drawStatus = (now: number): string => {
    if (!terminal || !atLineStart) return ""
    const names = [...running.values()]
    const text = names.length > 0
      ? `${names.map((call) => call.name).join(", ")} · ${seconds(now - Math.min(...names.map((call) => call.since)))}`
      : waitingSince === undefined
      ? undefined
      : `waiting for the model · ${seconds(now - waitingSince)}`
    if (text === undefined) return ""
    status = `${cyan(spinnerFrames[frame++ % spinnerFrames.length] ?? "")} ${dim(text)}`
    return status
  }

  const turnEvent = (event: AgentEvent.TurnEvent, now: number, who: string): string => {
    switch (event._tag) {
      case "Delta": {
        waitingSince = undefined
        const delta = event.delta
        if (delta.type === "text_delta" || delta.type === "refusal_delta") return print(delta.delta)
        if (delta.type === "reasoning_delta") return print(dim(delta.delta))
        if (delta.type === "function_call_done") {
          return print(line(`  ${dim("→")} ${who}${delta.name} ${dim(delta.arguments)}`))
        }
        return ""
      }
      case "AttemptDiscarded":
        return print(line(dim(`  [${who}the text above is void: ${event.cause.message}; trying again]`)))
      case "Compacted":
        return print(line(dim(`  [${who}history compacted: ${event.before} → ${event.after} items]`)))
      case "TurnCompleted": {
        waitingSince = undefined
        for (const call of Turn.functionCalls(event.turn)) {
          running.set(who + call.call_id, { name: `${who}${call.name}`, since: now })
        }
        return print(line(dim(
          `  [${who}turn ${event.step} · ${event.turn.usage.input} in / ${event.turn.usage.output} out tokens · ${
            usd(event.cost)
          } · so far ${usd(event.accounting.cost)}]`
        )))
      }
      case "ToolProgress":
        return ""
      case "ToolResult": {
        const call = running.get(who + event.call.call_id)
        running.delete(who + event.call.call_id)
        const took = call === undefined ? "" : ` ${dim(seconds(now - call.since))}`
        return print(line(
          event.outcome === "success"
            ? `  ${green("✓")} ${who}${event.call.name}${took} ${event.output.output}`
            : `  ${red("✗")} ${who}${event.call.name}${took} ${event.outcome}: ${event.reason ?? ""}`
        ))
      }
    }
  }

  let root: string | undefined
  const stepEvent = (event: StepEvent.Event<unknown>, now: number): string => {
    if (event._tag === "Output") return print(line(`${green("✓")} done`))
    root ??= event.contextId
    // A sub-agent's lines say whose they are: its context's id below the program's.
    const who = event.contextId === root
      ? ""
      : `${event.contextId.startsWith(`${root}/`) ? event.contextId.slice(root.length + 1) : event.contextId}: `
    switch (event._tag) {
      case "Turn":
        return turnEvent(event.event, now, who)
      case "Started":
        if (event.kind === "llm") waitingSince = now
        return event.kind === "spawn" ? print(line(dim(`◆ ${event.stepId} started`))) : ""
      case "Completed":
        return event.kind === "spawn" ? print(line(dim(`◆ ${event.stepId} done`))) : ""
      case "Failed":
        return print(line(`${red("✗")} ${who}${event.stepId}: ${event.error.message}`))
      case "Verdict":
        return event.verdict.feedback === undefined
          ? ""
          : print(line(dim(`  [${event.stepId}: ${event.verdict.feedback}]`)))
      case "Recorded":
        return print(line(dim(`  [${event.stepId} recorded: ${event.error.message}]`)))
      case "LoopEnded":
        return event.reason === "maxIterations"
          ? print(line(dim(`  [${event.stepId} stopped at its ${event.iterations} iterations]`)))
          : ""
    }
  }

  const agentEvent = (event: AgentEvent.AgentEvent<unknown, unknown>, now: number): string => {
    switch (event._tag) {
      case "TurnStarted":
        waitingSince = now
        return print(line(dim(`── turn ${event.step} ──`)))
      case "Verdict":
        return ""
      case "Feedback":
        return print(line(dim(`  [feedback to the model: ${event.text}]`)))
      case "Finished": {
        const ended = event.result.termination
        const why = ended._tag === "Stop" ? ended.reason : `submitted through ${ended.tool}`
        return print(line(`${green("✓")} ${ended._tag}: ${why}\n  ${dim(totals(ended.accounting))}`))
      }
      default:
        return turnEvent(event, now, "")
    }
  }

  return {
    /** The text for `event` at time `now` (the status line cleared before, drawn again after). */
    event: (event: Reported, now: number): string => {
      const before = clearStatus()
      const text = "stepId" in event || event._tag === "Output" ? stepEvent(event, now) : agentEvent(event, now)
      return before + text + drawStatus(now)
    },
    /** The spinner's next frame, when something is running. */
    tick: (now: number): string =>
      status === undefined && running.size === 0 && waitingSince === undefined
        ? ""
        : clearStatus() + drawStatus(now),
    /** The line for a run that failed with `error`. */
    failure: (error: unknown): string => {
      const before = clearStatus()
      running.clear()
      waitingSince = undefined
      const text = isTermination(error)
        ? `${red("✗")} ${error._tag} (${Termination.category(error)}): ${error.message}\n  ${
          dim(totals(error.accounting))
        }`
        : `${red("✗")} ${StepError.info(error).tag ?? "failed"}: ${StepError.info(error).message}`
      return before + print(line(text))
    },
    end: (): string => clearStatus()
  }
}

const isTermination = Schema.is(Termination.Error)

const spinnerInterval = "80 millis"

/**
 * Prints a run's progress as its events pass, to the `Output` in context, and
 * passes them on unchanged. A run that fails prints its termination (or
 * error) and fails as before.
 *
 * @example
 * ```ts
 * import { AgentLoop, Reporter } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Stream } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   yield* agent.stream({ input: "Hi" }).pipe(Reporter.pretty, Stream.runDrain)
 * }).pipe(
 *   Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")])))),
 *   Effect.provide(Reporter.layer((text) => Effect.sync(() => process.stdout.write(text))))
 * )
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.2.0
 * @category reporting
 */
export const pretty = <A extends Reported, E, R>(stream: Stream.Stream<A, E, R>): Stream.Stream<A, E, R | Output> =>
  Stream.unwrap(Effect.gen(function*() {
    const output = yield* Output
    const render = renderer(output.isTerminal)
    const now = Clock.currentTimeMillis
    const write = (text: string) => text === "" ? Effect.void : output.write(text)
    const spinner = output.isTerminal
      ? yield* Effect.forkScoped(
        Effect.flatMap(now, (at) => write(render.tick(at))).pipe(Effect.repeat(Schedule.spaced(spinnerInterval)))
      )
      : undefined
    const stop = Effect.andThen(spinner === undefined ? Effect.void : Fiber.interrupt(spinner), write(render.end()))
    return stream.pipe(
      Stream.tap((event) => Effect.flatMap(now, (at) => write(render.event(event, at)))),
      Stream.tapCause((cause) => {
        const failure = Cause.findErrorOption(cause)
        return Cause.hasInterruptsOnly(cause)
          ? Effect.void
          : Effect.andThen(stop, write(render.failure(failure._tag === "Some" ? failure.value : Cause.squash(cause))))
      }),
      Stream.ensuring(stop)
    )
  }))
