/**
 * The page's script, run in the browser: posts the message to `/chat`, reads
 * the run back as typed `AgentEvent`s with the small `EventStreamClient`, and
 * shows them as they arrive. Stop aborts the request; the server then
 * interrupts the run. Its bundle stays under 40 KB gzipped (see the test).
 */
import { agent } from "@agentloop/core/stream/EventStream"
import * as EventStreamClient from "@agentloop/core/stream/EventStreamClient"
import { add, renderer } from "./render.ts"

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

const setStatus = (state: "idle" | "running" | "finished" | "failed" | "stopped", text: string) => {
  status.dataset["state"] = state
  status.textContent = text
  send.disabled = state === "running"
  stop.disabled = state !== "running"
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
