/**
 * A model's answer in both vocabularies: agentloop's `TurnDelta`s and `Turn`,
 * and `effect/ai`'s response parts.
 *
 * Text, refusals (as text), reasoning, and function calls with their streamed
 * arguments map one to one; a turn's end is `effect/ai`'s `response-metadata`
 * and `finish` parts, with its stop reason and token usage.
 *
 * @since 0.2.0
 */
import type { Response } from "effect/ai"
import * as Item from "../Item.ts"
import * as TokenUsage from "../TokenUsage.ts"
import type { StopReason, Turn } from "../Turn.ts"
import type { TurnDelta } from "../TurnDelta.ts"

const finishReasons: Readonly<Record<StopReason, Response.FinishReason>> = {
  stop: "stop",
  tool_calls: "tool-calls",
  max_tokens: "length",
  content_filter: "content-filter",
  malformed_tool_call: "error",
  other: "other"
}

const stopReasons: Readonly<Record<Response.FinishReason, StopReason>> = {
  stop: "stop",
  "tool-calls": "tool_calls",
  length: "max_tokens",
  "content-filter": "content_filter",
  error: "other",
  pause: "other",
  other: "other",
  unknown: "other"
}

const usageEncoded = (usage: TokenUsage.TokenUsage): Response.FinishPartEncoded["usage"] => ({
  inputTokens: {
    total: usage.input,
    uncached: usage.input - (usage.cachedInput ?? 0),
    cacheRead: usage.cachedInput
  },
  outputTokens: { total: usage.output, reasoning: usage.reasoning, text: usage.output - (usage.reasoning ?? 0) }
})

const endParts = (turn: Turn): ReadonlyArray<Response.StreamPartEncoded & Response.PartEncoded> => [
  { type: "response-metadata", id: turn.responseId, modelId: turn.model, timestamp: undefined },
  { type: "finish", reason: finishReasons[turn.stopReason], usage: usageEncoded(turn.usage) }
]

/**
 * The `effect/ai` parts of a whole turn, for `generateText`.
 *
 * @since 0.2.0
 * @category conversions
 */
export const turnParts = (turn: Turn): Array<Response.PartEncoded> => [
  ...turn.items.flatMap((item): ReadonlyArray<Response.PartEncoded> => {
    switch (item.type) {
      case "message":
        return item.role === "assistant"
          ? [{
            type: "text",
            text: item.content.map((part) => part.type === "refusal" ? part.refusal : Item.partText(part)).join("")
          }]
          : []
      case "reasoning":
        return [{ type: "reasoning", text: (item.summary ?? item.content).map(Item.partText).join("") }]
      case "function_call":
        return [{ type: "tool-call", id: item.call_id, name: item.name, params: Item.argumentsObject(item.arguments) }]
      default:
        return []
    }
  }),
  ...endParts(turn)
]

/**
 * A stateful encoder of a turn's deltas as `effect/ai` stream parts: it opens
 * and closes text and reasoning blocks around their deltas. Use one per turn.
 *
 * @since 0.2.0
 * @category conversions
 */
export const makeStreamEncoder = (): (delta: TurnDelta) => ReadonlyArray<Response.StreamPartEncoded> => {
  let open: { readonly kind: "text" | "reasoning"; readonly id: string } | undefined
  let blocks = 0
  const started = new Set<string>()
  const close = (): Array<Response.StreamPartEncoded> => {
    if (open === undefined) return []
    const end: Response.StreamPartEncoded = open.kind === "text"
      ? { type: "text-end", id: open.id }
      : { type: "reasoning-end", id: open.id }
    open = undefined
    return [end]
  }
  const block = (kind: "text" | "reasoning", delta: string): Array<Response.StreamPartEncoded> => {
    const parts = open?.kind === kind ? [] : close()
    if (open === undefined) {
      open = { kind, id: `${kind}_${blocks++}` }
      parts.push(kind === "text" ? { type: "text-start", id: open.id } : { type: "reasoning-start", id: open.id })
    }
    parts.push(
      kind === "text" ? { type: "text-delta", id: open.id, delta } : { type: "reasoning-delta", id: open.id, delta }
    )
    return parts
  }
  return (delta) => {
    switch (delta.type) {
      case "text_delta":
      case "refusal_delta":
        return block("text", delta.delta)
      case "reasoning_delta":
        return block("reasoning", delta.delta)
      case "function_call_start":
        started.add(delta.call_id)
        return [...close(), { type: "tool-params-start", id: delta.call_id, name: delta.name }]
      case "function_call_arguments_delta":
        return started.has(delta.call_id) ? [{ type: "tool-params-delta", id: delta.call_id, delta: delta.delta }] : []
      case "function_call_done":
        return [
          ...close(),
          ...(started.has(delta.call_id) ? [{ type: "tool-params-end" as const, id: delta.call_id }] : []),
          { type: "tool-call", id: delta.call_id, name: delta.name, params: Item.argumentsObject(delta.arguments) }
        ]
      case "usage":
        return []
      case "turn_complete":
        return [...close(), ...endParts(delta.turn)]
    }
  }
}

/**
 * A stateful decoder of `effect/ai` stream parts into a turn's deltas: each
 * part's deltas, and at the `finish` part the `turn_complete` with the
 * assembled turn. `completed` tells whether that part came. Use one per turn.
 *
 * @since 0.2.0
 * @category conversions
 */
export const makeStreamDecoder = (): {
  readonly decode: (part: Response.AnyPart) => ReadonlyArray<TurnDelta>
  readonly completed: () => boolean
} => {
  let text = ""
  let reasoning = ""
  const calls: Array<Item.FunctionCall> = []
  const started = new Set<string>()
  let model: string | undefined
  let responseId: string | undefined
  let completed = false
  const turn = (part: Response.FinishPart): Turn => {
    const usage = TokenUsage.make(part.usage.inputTokens.total ?? 0, part.usage.outputTokens.total ?? 0, {
      cachedInput: part.usage.inputTokens.cacheRead,
      reasoning: part.usage.outputTokens.reasoning
    })
    const items: Array<Item.Item> = [
      ...(reasoning === ""
        ? []
        : [{
          type: "reasoning" as const,
          id: "rs_0",
          status: "completed" as const,
          content: [],
          summary: [{ type: "output_text" as const, text: reasoning }]
        }]),
      ...(text === "" ? [] : [Item.assistantMessage(text, "msg_0")]),
      ...calls
    ]
    return {
      items,
      usage,
      stopReason: stopReasons[part.reason],
      ...(part.reason === stopReasons[part.reason] ? {} : { providerStopReason: part.reason }),
      ...(model === undefined ? {} : { model }),
      ...(responseId === undefined ? {} : { responseId })
    }
  }
  const decode = (part: Response.AnyPart): ReadonlyArray<TurnDelta> => {
    switch (part.type) {
      case "text-delta":
        text += part.delta
        return [{ type: "text_delta", delta: part.delta }]
      case "reasoning-delta":
        reasoning += part.delta
        return [{ type: "reasoning_delta", delta: part.delta }]
      case "tool-params-start":
        started.add(part.id)
        return [{ type: "function_call_start", call_id: part.id, name: part.name }]
      case "tool-params-delta":
        return [{ type: "function_call_arguments_delta", call_id: part.id, delta: part.delta }]
      case "tool-call": {
        const args = JSON.stringify(part.params ?? {})
        calls.push({
          type: "function_call",
          id: `fc_${part.id}`,
          status: "completed",
          call_id: part.id,
          name: part.name,
          arguments: args
        })
        return [
          ...(started.has(part.id)
            ? []
            : [{ type: "function_call_start" as const, call_id: part.id, name: part.name }]),
          { type: "function_call_done", call_id: part.id, name: part.name, arguments: args }
        ]
      }
      case "response-metadata":
        model = part.modelId ?? model
        responseId = part.id ?? responseId
        return []
      case "finish": {
        completed = true
        const assembled = turn(part)
        return [{ type: "usage", usage: assembled.usage }, { type: "turn_complete", turn: assembled }]
      }
      default:
        return []
    }
  }
  return { decode, completed: () => completed }
}
