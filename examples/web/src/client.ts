/**
 * The page's script, run in the browser: posts the message to `/chat`, reads
 * the run back as typed `AgentEvent`s with the small `EventStreamClient`, and
 * shows them as they arrive. Stop aborts the request; the server then
 * interrupts the run. Its bundle stays under 40 KB gzipped (see the test).
 */
import type { AgentLoop, Cost } from "@agentloop/core"
import { agent } from "@agentloop/core/stream/EventStream"
import * as EventStreamClient from "@agentloop/core/stream/EventStreamClient"

const element = <E extends HTMLElement>(id: string): E => {
  const found = document.getElementById(id)
  if (found === null) throw new Error(`the page has no #${id}`)
  return found as E
}

const log = element<HTMLElement>("log")
const form = element<HTMLFormElement>("ask")
const input = element<HTMLInputElement>("message")
const send = element<HTMLButtonElement>("send")
const stop = element<HTMLButtonElement>("stop")
const status = element<HTMLElement>("status")

const add = (parent: HTMLElement, className: string, text = ""): HTMLElement => {
  const child = document.createElement("div")
  child.className = className
  child.textContent = text
  parent.append(child)
  return child
}

const usd = (cost: Cost.Cost) => cost === null ? "cost unknown" : `$${cost.toFixed(6)}`

const setStatus = (state: "idle" | "running" | "finished" | "failed" | "stopped", text: string) => {
  status.dataset["state"] = state
  status.textContent = text
  send.disabled = state === "running"
  stop.disabled = state !== "running"
}

/** Shows one run's events in its assistant bubble. */
const renderer = (bubble: HTMLElement) => {
  let turn = add(bubble, "turn")
  let text = add(turn, "text")
  return (event: AgentLoop.AgentEvent): void => {
    switch (event._tag) {
      case "TurnStarted":
        if (event.step > 1) {
          turn = add(bubble, "turn")
          text = add(turn, "text")
        }
        return
      case "Delta":
        if (event.delta.type === "text_delta") text.textContent += event.delta.delta
        if (event.delta.type === "function_call_done") {
          add(turn, "call", `→ ${event.delta.name} ${event.delta.arguments}`)
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
}

let running: AbortController | undefined

const describe = (error: unknown): string =>
  error instanceof Error ? `${"_tag" in error ? String(error._tag) : error.name}: ${error.message}` : String(error)

const chat = async (message: string, bubble: HTMLElement, stopped: AbortSignal) => {
  const render = renderer(bubble)
  try {
    const events = EventStreamClient.events(agent, "/chat", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message }),
      signal: stopped
    })
    for await (const event of events) render(event)
    setStatus("finished", "finished")
  } catch (error) {
    if (stopped.aborted) {
      add(bubble, "ending failed", "■ stopped")
      return setStatus("stopped", "stopped")
    }
    add(bubble, "ending failed", `✗ ${describe(error)}`)
    setStatus("failed", "failed")
  }
}

form.addEventListener("submit", (submitted) => {
  submitted.preventDefault()
  const message = input.value.trim()
  if (message === "" || running !== undefined) return
  add(log, "user", message)
  const bubble = add(log, "assistant")
  setStatus("running", "running…")
  const controller = new AbortController()
  running = controller
  void chat(message, bubble, controller.signal).finally(() => running = undefined)
})

stop.addEventListener("click", () => running?.abort())

setStatus("idle", "idle")
