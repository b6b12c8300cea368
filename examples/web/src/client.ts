/**
 * The page's script, run in the browser: a conversation whose every message
 * is a run the server executes (see `Server.ts`) on the conversation before
 * it, read back as typed `AgentEvent`s with the small `EventStreamClient`,
 * and shown as they arrive. The conversation (its id, its messages, each with
 * the conversation it was sent with, and the history of its last exchange
 * that finished) is kept in the tab's `sessionStorage`: a page loaded again
 * (a reload) reads each of its runs again, whole, and follows the one in
 * progress. A connection cut mid-run is read again from the last id it had.
 * Stop cancels the run on the server. Its bundle stays under 40 KB gzipped
 * (see the test).
 */
import { agent, EventStreamError } from "@agentloop/core/stream/EventStream"
import * as EventStreamClient from "@agentloop/core/stream/EventStreamClient"
import { Halted } from "@agentloop/core/Termination"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { History } from "./Conversation.ts"
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
const fresh = element<HTMLButtonElement>("new")
const status = element<HTMLElement>("status")

type State = "idle" | "running" | "finished" | "failed" | "stopped"

const setStatus = (state: State, text: string = state) => {
  status.dataset["state"] = state
  status.textContent = text
  send.disabled = state === "running"
  stop.disabled = state !== "running"
}

/** A message, and the conversation before it that it was sent with (JSON, see `Conversation`). */
interface Message {
  readonly text: string
  readonly context: unknown
}

/**
 * The conversation: the server names its runs after its id and each message's
 * place in it. `context` is what the next message is sent with: the history of
 * the last exchange that finished (`finished`, its place).
 */
interface Conversation {
  readonly id: string
  readonly messages: Array<Message>
  context: unknown
  finished: number
}

const Saved = Schema.Struct({
  id: Schema.String,
  messages: Schema.mutable(Schema.Array(Schema.Struct({ text: Schema.String, context: Schema.Unknown }))),
  context: Schema.Unknown,
  finished: Schema.Number
})

const saved = (): Conversation | undefined =>
  Option.getOrUndefined(
    Schema.decodeUnknownOption(Schema.fromJsonString(Saved))(sessionStorage.getItem("agentloop-chat"))
  )

const conversation: Conversation = saved() ?? { id: crypto.randomUUID(), messages: [], context: [], finished: -1 }
const save = () => sessionStorage.setItem("agentloop-chat", JSON.stringify(conversation))
const encodeHistory = Schema.encodeSync(History)

/** What the server is asked about message `index`: its run's events, or to cancel it. */
const request = (index: number): RequestInit => {
  const message = conversation.messages[index]
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ conversation: conversation.id, index, message: message?.text, context: message?.context })
  }
}

const describe = (error: unknown): string =>
  error instanceof Error ? `${"_tag" in error ? String(error._tag) : error.name}: ${error.message}` : String(error)

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Shows the run of message `index` in `bubble`: its events from the start, and
 * when the connection breaks, the rest after the last id it had (what the
 * turn in progress had shown is dropped: it comes again). How the run ended.
 */
const follow = async (index: number, bubble: HTMLElement): Promise<State> => {
  const view = renderer(bubble)
  let lastEventId: string | undefined
  for (let retries = 0;;) {
    try {
      for await (const { event, id } of EventStreamClient.entries(agent, "/chat", request(index), { lastEventId })) {
        if (id !== "") lastEventId = id
        retries = 0
        view.show(event)
        // The latest exchange that finished is what the next message is sent with.
        if (event._tag === "Finished" && index > conversation.finished) {
          conversation.context = encodeHistory(event.result.history)
          conversation.finished = index
          save()
        }
      }
      return "finished"
    } catch (error) {
      if (error instanceof EventStreamError && error.reason === "truncated" && retries < 5) {
        retries++
        view.discardTurnInProgress()
        await pause(250 * retries)
        continue
      }
      if (error instanceof Halted && error.source === "person") {
        add(bubble, "ending failed", "■ stopped")
        return "stopped"
      }
      add(bubble, "ending failed", `✗ ${describe(error)}`)
      return "failed"
    }
  }
}

let running: number | undefined

/** Shows message `index` and its answer; the last one is the run in progress, which the status follows. */
const show = (index: number, last: boolean) => {
  add(log, "user", conversation.messages[index]?.text)
  const ended = follow(index, add(log, "assistant"))
  if (!last) return
  running = index
  setStatus("running", "running…")
  void ended.then((state) => {
    running = undefined
    setStatus(state)
  })
}

form.addEventListener("submit", (submitted) => {
  submitted.preventDefault()
  const message = input.value.trim()
  if (message === "" || running !== undefined) return
  conversation.messages.push({ text: message, context: conversation.context })
  save()
  show(conversation.messages.length - 1, true)
})

stop.addEventListener("click", () => {
  if (running !== undefined) void fetch("/chat/cancel", request(running))
})

fresh.addEventListener("click", () => {
  sessionStorage.removeItem("agentloop-chat")
  location.reload()
})

setStatus("idle")
// Loaded again: the whole conversation, each run read again from its start.
conversation.messages.forEach((_, index) => show(index, index === conversation.messages.length - 1))
