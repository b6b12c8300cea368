/**
 * The durable run page's script: reads the run's whole log, then follows it,
 * with the small `EventStreamClient`; loading the page again shows the whole
 * run again. Cancel stops the run on the server, which every page following
 * it sees as the run's termination.
 */
import * as EventStreamClient from "@agentloop/core/stream/EventStreamClient"
import * as DurableEvent from "@agentloop/durable/DurableEvent"
import { add, renderer } from "./render.ts"

const log = document.getElementById("log")!
const status = document.getElementById("status")!
const id = location.pathname.split("/").at(-1) ?? ""

const setStatus = (state: "running" | "finished" | "failed", text: string) => {
  status.dataset["state"] = state
  status.textContent = text
}

document.getElementById("cancel")!.addEventListener("click", () => {
  void fetch(`/runs/${id}/cancel`, { method: "POST" })
})

const follow = async () => {
  const bubble = add(log, "assistant")
  const view = renderer(bubble)
  try {
    for await (const event of EventStreamClient.events(DurableEvent.codec, `/runs/${id}/events`)) view.show(event)
    setStatus("finished", "finished")
  } catch (error) {
    const text = error instanceof Error && "_tag" in error ? `${String(error._tag)}: ${error.message}` : String(error)
    add(bubble, "ending failed", `✗ ${text}`)
    setStatus("failed", "failed")
  }
}

void follow()
