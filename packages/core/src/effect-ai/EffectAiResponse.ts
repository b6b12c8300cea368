/**
 * A model's answer in both vocabularies: agentloop's `TurnDelta`s and `Turn`,
 * and `effect/ai`'s response parts.
 *
 * Text, refusals (as text), reasoning, and function calls with their streamed
 * arguments map one to one; a turn's end is `effect/ai`'s `response-metadata`
 * and `finish` parts, with its stop reason and token usage. Images and files
 * a model made (`effect/ai`'s `file` parts) are parts of the turn's assistant
 * message, and go back as `file` parts; one an `effect/ai` answer cannot hold
 * (at a URL: a response file part holds bytes) fails with
 * `AiError.InvalidRequest`.
 *
 * @since 0.2.0
 */
import type { Response } from "effect/ai"
import * as Result from "effect/Result"
import type * as AiError from "../AiError.ts"
import * as CitationSource from "../internal/citationSource.ts"
import * as Item from "../Item.ts"
import * as TokenUsage from "../TokenUsage.ts"
import type { StopReason, Turn } from "../Turn.ts"
import type { TurnDelta } from "../TurnDelta.ts"
import * as EffectAiContent from "./EffectAiContent.ts"

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

/** Where a part of a turn's item is, for error messages: `turn.items[0] (message "msg_1") content[1] (input_image)`. */
const turnWhere = (index: number, item: Item.Item, position: number, part: Item.MediaPart): string =>
  `turn.items[${index}] (${item.type} ${JSON.stringify(item.id)}) content[${position}] (${part.type})`

/** The text of a message's text and refusal parts. */
const messageText = (message: Item.Message): string =>
  message.content.map((part) => part.type === "refusal" ? part.refusal : Item.partText(part)).join("")

/** The response file parts of an answer's images and files, or the error naming the first that cannot be one. */
const fileParts = (
  message: Item.Message,
  index: number
): Result.Result<Array<Response.FilePartEncoded>, AiError.InvalidRequest> => {
  const files: Array<Response.FilePartEncoded> = []
  for (const [position, part] of message.content.entries()) {
    if (!Item.isMediaPart(part)) continue
    const file = EffectAiContent.toResponseFile(part, turnWhere(index, message, position, part))
    if (Result.isFailure(file)) return Result.fail(file.failure)
    files.push(file.success)
  }
  return Result.succeed(files)
}

/** The parts of one of a turn's items: an assistant message's text then its files, reasoning, a call. */
const itemParts = (
  item: Item.Item,
  index: number
): Result.Result<ReadonlyArray<Response.PartEncoded>, AiError.InvalidRequest> => {
  switch (item.type) {
    case "message": {
      if (item.role !== "assistant") return Result.succeed([])
      const files = fileParts(item, index)
      if (Result.isFailure(files)) return Result.fail(files.failure)
      const text = messageText(item)
      const textParts: ReadonlyArray<Response.PartEncoded> = text === "" && files.success.length > 0
        ? []
        : [{ type: "text", text }]
      return Result.succeed([...textParts, ...files.success])
    }
    case "reasoning":
      return Result.map(
        EffectAiContent.textOnly(
          item.summary ?? item.content,
          "an effect/ai reasoning part",
          (position, part) => turnWhere(index, item, position, part)
        ),
        (text): ReadonlyArray<Response.PartEncoded> => [{
          type: "reasoning",
          text
        }]
      )
    case "function_call":
      return Result.succeed([{
        type: "tool-call",
        id: item.call_id,
        name: item.name,
        params: Item.argumentsObject(item.arguments)
      }])
    default:
      return Result.succeed([])
  }
}

/**
 * The `effect/ai` parts of a whole turn, for `generateText`; fails for an
 * image or a file the answer cannot hold (see `EffectAiContent.toResponseFile`).
 *
 * @example
 * ```ts
 * import * as EffectAiResponse from "@agentloop/core/effect-ai/EffectAiResponse"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Result } from "effect"
 *
 * const parts = EffectAiResponse.turnParts(MockLanguageModel.textTurn("Hello!"))
 * if (Result.isSuccess(parts)) console.log(parts.success.map((part) => part.type)) // [ 'text', 'response-metadata', 'finish' ]
 * ```
 *
 * @since 0.2.0
 * @category conversions
 */
export const turnParts = (turn: Turn): Result.Result<Array<Response.PartEncoded>, AiError.InvalidRequest> => {
  const parts: Array<Response.PartEncoded> = []
  for (const [index, item] of turn.items.entries()) {
    const made = itemParts(item, index)
    if (Result.isFailure(made)) return Result.fail(made.failure)
    parts.push(...made.success)
  }
  return Result.succeed([...parts, ...endParts(turn)])
}

/** The file parts of a turn's answer, streamed at its end: no delta carries them. */
const turnFiles = (turn: Turn): Result.Result<Array<Response.FilePartEncoded>, AiError.InvalidRequest> => {
  const files: Array<Response.FilePartEncoded> = []
  for (const [index, item] of turn.items.entries()) {
    if (item.type !== "message" || item.role !== "assistant") continue
    const made = fileParts(item, index)
    if (Result.isFailure(made)) return Result.fail(made.failure)
    files.push(...made.success)
  }
  return Result.succeed(files)
}

/**
 * A stateful encoder of a turn's deltas as `effect/ai` stream parts: it opens
 * and closes text and reasoning blocks around their deltas, and at the turn's
 * end gives its answer's images and files as `file` parts (failing for one
 * that cannot be, see `EffectAiContent.toResponseFile`). A citation is a
 * `source` part, once per source, whose id is `source_<turn>_<n>`: `turn`
 * (an id of the turn, unique in the response) keeps the sources of a
 * response's turns apart. Use one per turn.
 *
 * @since 0.2.0
 * @category conversions
 */
export const makeStreamEncoder = (turn = "0"): (
  delta: TurnDelta
) => Result.Result<ReadonlyArray<Response.StreamPartEncoded>, AiError.InvalidRequest> => {
  let open: { readonly kind: "text" | "reasoning"; readonly id: string } | undefined
  let blocks = 0
  const started = new Set<string>()
  const sources = new Set<string>()
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
  const source = (citation: Item.Citation): Array<Response.StreamPartEncoded> => {
    const cited = CitationSource.of(citation)
    if (sources.has(cited.key)) return []
    sources.add(cited.key)
    const id = `source_${turn}_${sources.size - 1}`
    return [
      cited.kind === "url"
        ? { type: "source", sourceType: "url", id, url: cited.url, title: cited.title ?? cited.url }
        : {
          type: "source",
          sourceType: "document",
          id,
          mediaType: cited.mediaType,
          title: cited.title,
          ...(cited.filename === undefined ? {} : { fileName: cited.filename })
        }
    ]
  }
  const encode = (delta: TurnDelta): ReadonlyArray<Response.StreamPartEncoded> => {
    switch (delta.type) {
      case "citation":
        return source(delta.citation)
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
      case "turn_complete":
        return []
    }
  }
  return (delta) => {
    if (delta.type !== "turn_complete") return Result.succeed(encode(delta))
    return Result.map(turnFiles(delta.turn), (files) => [...close(), ...files, ...endParts(delta.turn)])
  }
}

/**
 * A stateful decoder of `effect/ai` stream parts into a turn's deltas: each
 * part's deltas, and at the `finish` part the `turn_complete` with the
 * assembled turn, whose assistant message holds the answer's text, then the
 * images and files of its `file` parts (which no delta carries). `completed`
 * tells whether that part came. Use one per turn.
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
  const media: Array<Item.MediaPart> = []
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
      ...(text === "" && media.length === 0 ? [] : [{
        ...Item.assistantMessage(text, "msg_0"),
        content: [...(text === "" ? [] : [{ type: "output_text" as const, text }]), ...media]
      }]),
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
      case "file":
        media.push(EffectAiContent.fromResponseFile(part))
        return []
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
