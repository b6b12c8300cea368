/**
 * How the chat pages show a run: a bubble per answer, a block per turn with
 * its text, calls, results and cost, and how the run ended.
 */
import type { AgentLoop, Cost } from "@agentloop/core"
import * as Turn from "@agentloop/core/Turn"
import type * as DurableEvent from "@agentloop/durable/DurableEvent"

/** Appends a `div` of class `className` with `text` to `parent`. */
export const add = (parent: HTMLElement, className: string, text = ""): HTMLElement => {
  const child = document.createElement("div")
  child.className = className
  child.textContent = text
  parent.append(child)
  return child
}

const usd = (cost: Cost.Cost) => cost === null ? "cost unknown" : `$${cost.toFixed(6)}`

/**
 * Shows one run's events in its assistant bubble. A turn that streamed no
 * deltas (a log holds completed turns) shows its text and calls when it
 * completes. `discardTurnInProgress` forgets what the deltas of a turn not
 * completed yet showed: a stream resumed after its last id sends them again.
 */
export const renderer = (bubble: HTMLElement) => {
  let turn = add(bubble, "turn")
  let text = add(turn, "text")
  let streamed = false
  let completed = false
  /** The calls shown as the model wrote them, in the turn in progress. */
  let written: Array<HTMLElement> = []
  const discardTurnInProgress = () => {
    if (completed) return
    text.textContent = ""
    for (const call of written) call.remove()
    written = []
    streamed = false
  }
  const show = (event: AgentLoop.AgentEvent | DurableEvent.ApprovalRequested): void => {
    switch (event._tag) {
      case "TurnStarted":
        if (event.step > 1) {
          turn = add(bubble, "turn")
          text = add(turn, "text")
        }
        streamed = false
        completed = false
        written = []
        return
      case "Delta":
        streamed = true
        if (event.delta.type === "text_delta") text.textContent += event.delta.delta
        if (event.delta.type === "function_call_done") {
          written.push(add(turn, "call", `→ ${event.delta.name} ${event.delta.arguments}`))
        }
        return
      case "AttemptDiscarded":
        // The text so far belongs to a lost attempt: the next one starts afresh.
        text.textContent = ""
        return
      case "ToolResult":
        add(
          turn,
          `result ${event.outcome === "success" ? "success" : "mistake"}`,
          event.outcome === "success"
            ? `← ${event.call.name} ${event.output.output}`
            : `✗ ${event.call.name} ${event.outcome}: ${event.reason ?? ""}`
        )
        return
      case "TurnCompleted":
        completed = true
        if (!streamed) {
          text.textContent = Turn.text(event.turn)
          for (const call of Turn.functionCalls(event.turn)) add(turn, "call", `→ ${call.name} ${call.arguments}`)
        }
        add(
          turn,
          "meta",
          `turn ${event.step} · ${event.turn.usage.input} in / ${event.turn.usage.output} out · ${usd(event.cost)}`
        )
        return
      case "Finished": {
        const ended = event.result.termination
        add(
          bubble,
          "ending",
          `✓ ${ended._tag}: ${ended._tag === "Stop" ? ended.reason : `submitted through ${ended.tool}`} · ${
            usd(ended.accounting.cost)
          }`
        )
        return
      }
      default:
        return
    }
  }
  return { show, discardTurnInProgress }
}
