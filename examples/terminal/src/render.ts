/**
 * Turns an agent's events into terminal output: text as it streams, each tool
 * call and its result, a line per turn with usage and cost, and the way the
 * run ended.
 */
import type { Accounting, AgentLoop, Cost } from "@agentloop/core"
import { Termination, Turn } from "@agentloop/core"

const dim = (text: string) => `\x1b[2m${text}\x1b[22m`
const green = (text: string) => `\x1b[32m${text}\x1b[39m`
const red = (text: string) => `\x1b[31m${text}\x1b[39m`

const usd = (cost: Cost.Cost) => cost === null ? "cost unknown" : `$${cost.toFixed(6)}`

const accounting = (accounting: Accounting.Accounting) =>
  `${accounting.steps} turn${
    accounting.steps === 1 ? "" : "s"
  } · ${accounting.usage.input} in / ${accounting.usage.output} out tokens · ${usd(accounting.cost)} · ${
    (accounting.elapsedMs / 1000).toFixed(1)
  } s`

/** The text to print for one event; empty for events the terminal does not show. */
export const event = (event: AgentLoop.AgentEvent): string => {
  switch (event._tag) {
    case "Delta": {
      const delta = event.delta
      if (delta.type === "text_delta" || delta.type === "refusal_delta") return delta.delta
      if (delta.type === "reasoning_delta") return dim(delta.delta)
      if (delta.type === "function_call_done") return `  ${dim("→")} ${delta.name} ${delta.arguments}\n`
      return ""
    }
    case "ToolResult":
      return event.outcome === "success"
        ? `  ${green("←")} ${event.call.name} ${event.output.output}\n`
        : `  ${red("✗")} ${event.call.name} ${event.outcome}: ${event.reason ?? ""}\n`
    case "ToolProgress":
      return dim(`  … ${event.call.name} ${JSON.stringify(event.value)}\n`)
    case "AttemptDiscarded":
      return dim(`\n  [the text above is void: ${event.cause.message}]\n`)
    case "Compacted":
      return dim(`  [history compacted: ${event.before} → ${event.after} items]\n`)
    case "TurnCompleted": {
      const text = Turn.text(event.turn)
      return `${text.endsWith("\n") || text === "" ? "" : "\n"}${
        dim(
          `  [turn ${event.step} · ${event.turn.usage.input} in / ${event.turn.usage.output} out tokens · ${
            usd(event.cost)
          }]`
        )
      }\n`
    }
    case "Feedback":
      return dim(`  [feedback to the model: ${event.text}]\n`)
    case "Finished": {
      const termination = event.result.termination
      const why = termination._tag === "Stop" ? termination.reason : `submitted through ${termination.tool}`
      return `${green("✓")} ${termination._tag}: ${why}\n  ${dim(accounting(termination.accounting))}\n`
    }
    case "TurnStarted":
    case "Verdict":
      return ""
  }
}

/** The line for a run that ended with an error termination. */
export const termination = (error: Termination.Error): string =>
  `${red("✗")} ${error._tag} (${Termination.category(error)}): ${error.message}\n  ${
    dim(accounting(error.accounting))
  }\n`
