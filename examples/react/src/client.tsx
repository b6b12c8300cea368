/**
 * The React chat, run in the browser: `useChat` from `@ai-sdk/react` against
 * the agentloop server's `/api/chat`. It shows each answer as it streams,
 * step by step: text, every tool call with its input and result, each turn's
 * cost and the run's total from agentloop's `data-agentloop-*` parts, and how
 * the run ended. Stop aborts the request; the server interrupts the run.
 */
import type { UIMessageChunk } from "@agentloop/core"
import { useChat } from "@ai-sdk/react"
import { DefaultChatTransport, getToolName, isToolUIPart } from "ai"
import type { UIMessage } from "ai"
import { useState } from "react"
import type { FormEvent, ReactNode } from "react"
import { createRoot } from "react-dom/client"

/** The chat's messages, with agentloop's data parts typed. */
type ChatMessage = UIMessage<unknown, {
  readonly "agentloop-turn": UIMessageChunk.TurnData
  readonly "agentloop-termination": UIMessageChunk.TerminationData
  readonly "agentloop-notice": UIMessageChunk.NoticeData
  readonly "agentloop-approval": UIMessageChunk.ApprovalData
  readonly "agentloop-decision": { readonly toolCallId: string; readonly token: string; readonly approved: boolean }
}>

type Part = ChatMessage["parts"][number]

const usd = (cost: number | null) => cost === null ? "cost unknown" : `$${cost.toFixed(6)}`

const json = (value: unknown) => JSON.stringify(value) ?? ""

/** Sends a person's decision on a call, as the next message, with the request's token. */
type Decide = (request: UIMessageChunk.ApprovalData, approved: boolean) => void

const PartView = ({ decide, part }: { readonly part: Part; readonly decide: Decide | undefined }): ReactNode => {
  if (part.type === "text") return <div className="text">{part.text}</div>
  if (isToolUIPart(part)) {
    const name = getToolName(part)
    const text = part.state === "output-available"
      ? `← ${name} ${json(part.output)}`
      : part.state === "output-error"
      ? `✗ ${name} ${part.errorText}`
      : `→ ${name} ${json(part.input)}`
    return <div className="tool" data-state={part.state}>{text}</div>
  }
  switch (part.type) {
    case "data-agentloop-turn":
      return (
        <div className="cost">
          turn {part.data.step} · {part.data.usage.input} in / {part.data.usage.output} out · {usd(part.data.cost)}
          {" · so far "}
          {usd(part.data.total.cost)}
        </div>
      )
    case "data-agentloop-termination":
      return (
        <div className="ending" data-category={part.data.category}>
          {part.data.category === "success" ? "✓" : "✗"} {part.data.tag}: {part.data.message} · {usd(part.data.cost)}
        </div>
      )
    case "data-agentloop-notice":
      return <div className="cost">{part.data.message}</div>
    case "data-agentloop-approval":
      return (
        <div className="approval">
          {part.data.toolName} {json(part.data.input)} needs your approval {decide === undefined ? null : (
            <>
              <button type="button" className="approve" onClick={() => decide(part.data, true)}>
                Approve
              </button>{" "}
              <button type="button" className="deny" onClick={() => decide(part.data, false)}>Deny</button>
            </>
          )}
        </div>
      )
    default:
      return null
  }
}

/** An answer's parts, grouped by step (one model turn and its tools). */
const steps = (parts: ReadonlyArray<Part>): ReadonlyArray<ReadonlyArray<Part>> => {
  const grouped: Array<Array<Part>> = [[]]
  for (const part of parts) {
    if (part.type === "step-start") grouped.push([])
    else grouped[grouped.length - 1]?.push(part)
  }
  return grouped.filter((step) => step.length > 0)
}

const MessageView = (
  { decide, message }: { readonly message: ChatMessage; readonly decide: Decide | undefined }
): ReactNode => {
  if (message.role !== "user") {
    return (
      <div className="assistant">
        {steps(message.parts).map((step, i) => (
          <div className="step" key={i}>
            {step.map((part, j) => <PartView part={part} decide={decide} key={j} />)}
          </div>
        ))}
      </div>
    )
  }
  const text = message.parts.map((part) => part.type === "text" ? part.text : "").join("")
  // A message that only carries a decision is shown on the call it decides.
  return text === "" ? null : <div className="user">{text}</div>
}

const transport = new DefaultChatTransport<ChatMessage>({ api: "/api/chat" })

const App = ({ question }: { readonly question: string }): ReactNode => {
  const [input, setInput] = useState(question)
  const { error, messages, sendMessage, status, stop } = useChat<ChatMessage>({ transport })
  const running = status === "submitted" || status === "streaming"
  const decide: Decide = ({ toolCallId, token }, approved) =>
    void sendMessage({ parts: [{ type: "data-agentloop-decision", data: { toolCallId, token, approved } }] })
  const submit = (event: FormEvent) => {
    event.preventDefault()
    const text = input.trim()
    if (text === "" || running) return
    void sendMessage({ text })
    setInput("")
  }
  return (
    <>
      <main className="log">
        {messages.map((message, i) => (
          // Only the last answer's requests can still be decided.
          <MessageView
            message={message}
            decide={i === messages.length - 1 && !running ? decide : undefined}
            key={message.id}
          />
        ))}
      </main>
      {error === undefined ? null : <div className="error">✗ {error.message}</div>}
      <form onSubmit={submit}>
        <input value={input} onChange={(event) => setInput(event.target.value)} autoComplete="off" />
        <button type="submit" className="send" disabled={running}>Send</button>
        <button type="button" className="stop" disabled={!running} onClick={() => void stop()}>Stop</button>
      </form>
      <div className="status" data-status={status}>{status}</div>
    </>
  )
}

const root = document.getElementById("root")
if (root === null) throw new Error("the page has no #root")
createRoot(root).render(<App question={root.dataset["question"] ?? ""} />)
