/**
 * The other way: what `useChat`'s `DefaultChatTransport` posts (the chat's UI
 * messages) as `Schema`s, and those messages as an agentloop history, so a
 * follow-up message, a regenerate and an answered approval all become the
 * `input` of the next run.
 *
 * The body comes from the network: its sizes and the nesting of tools'
 * inputs and outputs are bounded, and what a client
 * may not decide is dropped (system messages: a run's instructions are the
 * server's).
 *
 * @since 0.2.0
 */
import * as Schema from "effect/Schema"
import type * as Approval from "../Approval.ts"
import * as JsonDepth from "../internal/jsonDepth.ts"
import * as Item from "../Item.ts"

const Text = Schema.String.check(Schema.isMaxLength(1_000_000))
const Id = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(512))

/** A tool's input or output as the client sends it back: any JSON, nested so that it can be written again. */
const ToolValue = Schema.Unknown.check(JsonDepth.shallow("a tool's input or output"))

/**
 * A text part (the user's or the assistant's).
 *
 * @since 0.2.0
 * @category parts
 */
export const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Text })
export type TextPart = typeof TextPart.Type

/**
 * A person's answer to an approval request, as `useChat`'s `addToolApprovalResponse` records it:
 * `id` is the request's approval id, the token the server issued with it.
 *
 * @since 0.2.0
 * @category parts
 */
export const ToolApproval = Schema.Struct({
  id: Id,
  approved: Schema.optionalKey(Schema.Boolean),
  reason: Schema.optionalKey(Text)
})
export type ToolApproval = typeof ToolApproval.Type

const toolFields = {
  toolCallId: Id,
  state: Schema.Literals([
    "input-streaming",
    "input-available",
    "approval-requested",
    "approval-responded",
    "output-available",
    "output-error",
    "output-denied"
  ]),
  input: Schema.optionalKey(ToolValue),
  output: Schema.optionalKey(ToolValue),
  errorText: Schema.optionalKey(Text),
  approval: Schema.optionalKey(ToolApproval)
}

/**
 * A call of a tool the chat declared (`tool-<name>`), in the state the UI last saw it.
 *
 * @since 0.2.0
 * @category parts
 */
export const ToolPart = Schema.Struct({ type: Schema.TemplateLiteral(["tool-", Schema.String]), ...toolFields })
export type ToolPart = typeof ToolPart.Type

/**
 * A call of a tool the chat did not declare: agentloop's server-side tools read back this way too.
 *
 * @since 0.2.0
 * @category parts
 */
export const DynamicToolPart = Schema.Struct({ type: Schema.Literal("dynamic-tool"), toolName: Id, ...toolFields })
export type DynamicToolPart = typeof DynamicToolPart.Type

/**
 * The start of a step: the parts after it belong to the next model turn.
 *
 * @since 0.2.0
 * @category parts
 */
export const StepStartPart = Schema.Struct({ type: Schema.Literal("step-start") })
export type StepStartPart = typeof StepStartPart.Type

/**
 * A person's decision on a call that waited for one (`data-agentloop-approval`),
 * sent back as a part of the next user message: works with every `useChat`
 * version (`sendMessage({ parts: [{ type: "data-agentloop-decision", data }] })`).
 * `token` is the request's, echoed: without the token issued for that call,
 * the server does not run it.
 *
 * @since 0.2.0
 * @category parts
 */
export const DecisionPart = Schema.Struct({
  type: Schema.Literal("data-agentloop-decision"),
  data: Schema.Struct({
    toolCallId: Id,
    approved: Schema.Boolean,
    reason: Schema.optionalKey(Text),
    token: Schema.optionalKey(Id)
  })
})
export type DecisionPart = typeof DecisionPart.Type

const known = (type: string) =>
  type === "text" || type === "step-start" || type === "dynamic-tool" || type.startsWith("tool-") ||
  type === "data-agentloop-decision"

/**
 * Any other part (reasoning, data, files, sources): kept by the UI, not sent back to a model.
 *
 * @since 0.2.0
 * @category parts
 */
export const OtherPart = Schema.Struct({
  type: Schema.String.check(Schema.makeFilter((type) => !known(type), { title: "another part's type" }))
})
export type OtherPart = typeof OtherPart.Type

/**
 * A part of a UI message.
 *
 * @since 0.2.0
 * @category parts
 */
export const Part = Schema.Union([TextPart, ToolPart, DynamicToolPart, StepStartPart, DecisionPart, OtherPart])
export type Part = typeof Part.Type

/**
 * A message of the chat, as the UI keeps it.
 *
 * @since 0.2.0
 * @category messages
 */
export const UIMessage = Schema.Struct({
  id: Schema.String.check(Schema.isMaxLength(512)),
  role: Schema.Literals(["system", "user", "assistant"]),
  parts: Schema.Array(Part).check(Schema.isMaxLength(10_000))
})
export type UIMessage = typeof UIMessage.Type

/**
 * The body `DefaultChatTransport` posts: the chat's id, its messages, and why
 * it sends them (a new message, or regenerating the last answer). An app's
 * own `body` fields are ignored here; decode them with a schema of its own.
 * Its bounds apply once the body is read: bound the body itself first
 * (`HttpIncomingMessage.MaxBodySize`), and treat its history as the client's
 * word, which may include calls and outputs no model made.
 *
 * @since 0.2.0
 * @category messages
 */
export const ChatRequest = Schema.Struct({
  id: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(512))),
  messages: Schema.Array(UIMessage).check(Schema.isMinLength(1), Schema.isMaxLength(1_000)),
  trigger: Schema.optionalKey(Schema.Literals(["submit-message", "regenerate-message"])),
  messageId: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(512)))
})
export type ChatRequest = typeof ChatRequest.Type

const json = (value: unknown): string => JSON.stringify(value) ?? "null"

const toolName = (part: ToolPart | DynamicToolPart): string =>
  part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length)

/**
 * What a tool part's state means for the history: a call with its output, or
 * a call waiting for its output (the run will execute it, with the person's
 * decision when it asked for one).
 */
const toolItems = (part: ToolPart | DynamicToolPart, id: string) => {
  const call: Item.FunctionCall = {
    type: "function_call",
    id: `${id}_call`,
    status: "completed",
    call_id: part.toolCallId,
    name: toolName(part),
    arguments: json(part.input ?? {})
  }
  const output = (text: string): Item.FunctionCallOutput => ({
    type: "function_call_output",
    id: `${id}_output`,
    status: "completed",
    call_id: part.toolCallId,
    output: text
  })
  switch (part.state) {
    case "output-available":
      return { call, output: output(json(part.output)) }
    case "output-error":
      return { call, output: output(json({ error: part.errorText ?? "the tool failed" })) }
    case "output-denied":
      return {
        call,
        output: output(
          json({ error: `a person denied the call${part.approval?.reason ? `: ${part.approval.reason}` : ""}` })
        )
      }
    default:
      return { call, output: undefined }
  }
}

/**
 * A call of the history that has no output yet, and the person's decision on
 * it when the UI asked for one, with the approval token the decision came
 * with (the client's word: `ChatApprovals` checks it).
 *
 * @since 0.2.0
 * @category history
 */
export interface PendingCall {
  readonly call: Item.FunctionCall
  readonly decision: Approval.Decision | undefined
  readonly token: string | undefined
}

/**
 * A chat as a run's input: the history of its messages, and the calls of the
 * last answer that have no output yet (each with the person's decision, if
 * any).
 *
 * @since 0.2.0
 * @category history
 */
export interface Conversation {
  readonly history: ReadonlyArray<Item.Item>
  readonly pending: ReadonlyArray<PendingCall>
}

const decided = (approved: boolean, reason: string | undefined): Approval.Decision =>
  approved ? { _tag: "Approved" } : { _tag: "Denied", reason: reason ?? "a person denied the call" }

const pendingOf = (part: ToolPart | DynamicToolPart, call: Item.FunctionCall): PendingCall =>
  part.state !== "approval-responded" || part.approval?.approved === undefined
    ? { call, decision: undefined, token: undefined }
    : { call, decision: decided(part.approval.approved, part.approval.reason), token: part.approval.id }

/**
 * The history of a chat's messages: users' text as user messages, and each
 * step of an answer as the assistant's text, its calls and their outputs.
 * System messages are dropped; so are parts a model does not read back
 * (reasoning, data, files). Calls without an output are left out of the
 * history and listed in `pending`.
 *
 * @example
 * ```ts
 * import { UIMessage } from "@agentloop/core/stream"
 *
 * const { history } = UIMessage.toConversation([
 *   { id: "m1", role: "user", parts: [{ type: "text", text: "How far is 26.2 miles in km?" }] }
 * ])
 * console.log(history[0]?.type) // "message"
 * ```
 *
 * @since 0.2.0
 * @category history
 */
export const toConversation = (messages: ReadonlyArray<UIMessage>): Conversation => {
  const history: Array<Item.Item> = []
  let pending: Array<PendingCall> = []
  for (const message of messages) {
    if (message.role === "system") continue
    if (message.role === "user") {
      const decisions = new Map<string, { readonly decision: Approval.Decision; readonly token: string | undefined }>()
      for (const part of message.parts) {
        if (part.type !== "data-agentloop-decision" || !("data" in part)) continue
        const { approved, reason, token, toolCallId } = part.data
        decisions.set(toolCallId, { decision: decided(approved, reason), token })
      }
      // A message that only decides keeps the answer's pending calls, now with their decisions.
      pending = pending.map((pending) => ({ ...pending, ...decisions.get(pending.call.call_id) }))
      const content = message.parts.flatMap((part) =>
        "text" in part ? [{ type: "input_text", text: part.text } as const] : []
      )
      if (content.length > 0) {
        pending = []
        history.push({ type: "message", id: message.id, status: "completed", role: "user", content })
      }
      continue
    }
    pending = []
    let step = 0
    let texts: Array<Item.OutputText> = []
    let calls: Array<Item.FunctionCall> = []
    let outputs: Array<Item.FunctionCallOutput> = []
    const flush = () => {
      if (texts.length > 0) {
        history.push({
          type: "message",
          id: `${message.id}_${step}`,
          status: "completed",
          role: "assistant",
          content: texts
        })
      }
      history.push(...calls, ...outputs)
      texts = []
      calls = []
      outputs = []
      step++
    }
    for (const part of message.parts) {
      if (part.type === "step-start") flush()
      else if ("text" in part) texts.push({ type: "output_text", text: part.text })
      else if ("toolCallId" in part) {
        const items = toolItems(part, `${message.id}_${part.toolCallId}`)
        if (items.output === undefined) pending.push(pendingOf(part, items.call))
        else {
          calls.push(items.call)
          outputs.push(items.output)
        }
      }
    }
    flush()
  }
  return { history, pending }
}
