/**
 * Traces that follow OpenTelemetry's GenAI semantic conventions.
 *
 * A run is an `invoke_agent` span, each model turn a `chat {model}` span (kind
 * client) and each tool call an `execute_tool {tool}` span, with the `gen_ai.*`
 * attributes the conventions name: operation, provider, request and response
 * model, token usage, finish reasons, tool name and call id. Message content
 * (instructions, inputs, outputs, tool arguments and results) is recorded only
 * under {@link layerCaptureContent}: it may hold personal data and is large.
 *
 * Spans are Effect spans: export them with `@effect/opentelemetry`.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type * as Tracer from "effect/Tracer"
import * as Item from "./Item.ts"
import type { TurnOptions } from "./LanguageModel.ts"
import type { TokenUsage } from "./TokenUsage.ts"
import type { Turn } from "./Turn.ts"

/**
 * Whether spans record message content. Off unless {@link layerCaptureContent} is provided.
 *
 * @since 0.1.0
 * @category services
 */
export const CaptureContent: Context.Reference<boolean> = Context.Reference<boolean>(
  "@agentloop/core/Telemetry/CaptureContent",
  { defaultValue: () => false }
)

/**
 * Records message content on spans: instructions, messages, tool arguments and results.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerCaptureContent: Layer.Layer<never> = Layer.succeed(CaptureContent, true)

/**
 * Span attributes, as Effect spans take them.
 *
 * @since 0.1.0
 * @category models
 */
export type Attributes = Readonly<Record<string, unknown>>

const wellKnownProviders: Readonly<Record<string, string>> = { gemini: "gcp.gemini" }

/**
 * The `gen_ai.provider.name` of a `LanguageModel`'s provider: the conventions' well-known name where there is one.
 *
 * @since 0.1.0
 * @category naming
 */
export const providerName = (provider: string): string => wellKnownProviders[provider] ?? provider

/**
 * The name of a model turn's span: `chat {model}`, or `chat` when the provider's default model is used.
 *
 * @since 0.1.0
 * @category naming
 */
export const chatSpanName = (model: string | undefined): string => model === undefined ? "chat" : `chat ${model}`

/**
 * The name of a tool call's span.
 *
 * @since 0.1.0
 * @category naming
 */
export const toolSpanName = (tool: string): string => `execute_tool ${tool}`

/**
 * The name of a run's span: `invoke_agent {name}`, or `invoke_agent`.
 *
 * @since 0.1.0
 * @category naming
 */
export const agentSpanName = (name: string | undefined): string =>
  name === undefined ? "invoke_agent" : `invoke_agent ${name}`

// Spans are made for every turn and tool call: a plain loop, no `Object.entries` pairs.
const defined = (attributes: Record<string, unknown>): Attributes => {
  const out: Record<string, unknown> = {}
  for (const key in attributes) {
    const value = attributes[key]
    if (value !== undefined) out[key] = value
  }
  return out
}

/**
 * The attributes of a model turn's span known before the request: operation, provider, model, parameters.
 *
 * @since 0.1.0
 * @category attributes
 */
export const chatAttributes = (options: {
  readonly provider: string
  readonly request: TurnOptions
  readonly history: ReadonlyArray<Item.Item>
  readonly captureContent: boolean
}): Attributes => {
  const { params } = options.request
  return defined({
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": providerName(options.provider),
    "gen_ai.request.model": options.request.model,
    "gen_ai.request.temperature": params?.temperature,
    "gen_ai.request.top_p": params?.topP,
    "gen_ai.request.max_tokens": params?.maxOutputTokens,
    "gen_ai.request.stop_sequences": params?.stopSequences,
    "gen_ai.output.type": options.request.output === undefined ? "text" : "json",
    ...(options.captureContent
      ? {
        "gen_ai.system_instructions": options.request.instructions === undefined
          ? undefined
          : JSON.stringify([{ type: "text", content: options.request.instructions }]),
        "gen_ai.input.messages": JSON.stringify(messages(options.history)),
        "gen_ai.tool.definitions": options.request.tools === undefined
          ? undefined
          : JSON.stringify(options.request.tools)
      }
      : {})
  })
}

/**
 * The usage attributes of a span: input, output, cache-read, cache-write and reasoning tokens.
 *
 * @example
 * ```ts
 * import { Telemetry, TokenUsage } from "@agentloop/core"
 *
 * // The OpenTelemetry GenAI semantic conventions' names and attributes.
 * console.log(Telemetry.chatSpanName("gpt-5-mini")) // chat gpt-5-mini
 * console.log(Telemetry.toolSpanName("search")) // execute_tool search
 * console.log(Telemetry.usageAttributes(TokenUsage.make(120, 30)))
 * // { 'gen_ai.usage.input_tokens': 120, 'gen_ai.usage.output_tokens': 30 }
 * ```
 *
 * @since 0.1.0
 * @category attributes
 */
export const usageAttributes = (usage: TokenUsage): Attributes =>
  defined({
    "gen_ai.usage.input_tokens": usage.input,
    "gen_ai.usage.output_tokens": usage.output,
    "gen_ai.usage.cache_read.input_tokens": usage.cachedInput,
    "gen_ai.usage.cache_creation.input_tokens": usage.cacheWrite,
    "gen_ai.usage.reasoning.output_tokens": usage.reasoning
  })

/**
 * Records what the model answered on its turn's span: the provider that
 * answered (when the turn names it, as a fallback's does), response model and
 * id, finish reason, usage, and the output when content is captured.
 *
 * @since 0.1.0
 * @category tracing
 */
export const annotateTurn = (span: Tracer.Span, turn: Turn, captureContent: boolean): void => {
  const attributes = defined({
    "gen_ai.provider.name": turn.provider === undefined ? undefined : providerName(turn.provider),
    "gen_ai.response.model": turn.model,
    "gen_ai.response.id": turn.responseId,
    "gen_ai.response.finish_reasons": [turn.providerStopReason ?? turn.stopReason],
    ...usageAttributes(turn.usage),
    "gen_ai.output.messages": captureContent
      ? JSON.stringify(messages(turn.items).map((message) => ({ ...message, finish_reason: turn.stopReason })))
      : undefined
  })
  for (const key in attributes) span.attribute(key, attributes[key])
}

/**
 * The attributes of a tool call's span. Arguments and result are content: recorded only when captured.
 *
 * @since 0.1.0
 * @category attributes
 */
export const toolAttributes = (options: {
  readonly call: Item.FunctionCall
  readonly description: string | undefined
  readonly captureContent: boolean
}): Attributes =>
  defined({
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": options.call.name,
    "gen_ai.tool.call.id": options.call.call_id,
    "gen_ai.tool.type": "function",
    "gen_ai.tool.description": options.description,
    "gen_ai.tool.call.arguments": options.captureContent ? options.call.arguments : undefined
  })

type Part =
  | { readonly type: "text"; readonly content: string }
  | { readonly type: "reasoning"; readonly content: string }
  | { readonly type: "uri"; readonly modality: Modality; readonly mime_type?: string; readonly uri: string }
  | { readonly type: "blob"; readonly modality: Modality; readonly mime_type: string }
  | { readonly type: "tool_call"; readonly id: string; readonly name: string; readonly arguments: string }
  | { readonly type: "tool_call_response"; readonly id: string; readonly response: string }

interface Message {
  readonly role: string
  readonly parts: ReadonlyArray<Part>
}

type Modality = "image" | "document"

const dataUrl = /^data:([^;,]+)/

/**
 * A media part as the conventions' `uri` part, or, for inline bytes, a `blob`
 * part without its `content`: a span would otherwise carry megabytes.
 */
const mediaPart = (part: Item.MediaPart): Part => {
  const modality: Modality = part.type === "input_image" ? "image" : "document"
  const url = part.type === "input_image" ? part.image_url : part.file_data ?? part.file_url ?? ""
  const inline = dataUrl.exec(url)
  return inline === null ? { type: "uri", modality, uri: url } : { type: "blob", modality, mime_type: inline[1]! }
}

const text = (parts: ReadonlyArray<Item.ContentPart>): ReadonlyArray<Part> =>
  parts.map((part) =>
    Item.isMediaPart(part)
      ? mediaPart(part)
      : { type: "text", content: part.type === "refusal" ? part.refusal : part.text }
  )

/** Items as the conventions' messages: role and parts (text, reasoning, tool calls and their responses). */
const messages = (items: ReadonlyArray<Item.Item>): ReadonlyArray<Message> =>
  items.flatMap((item): ReadonlyArray<Message> => {
    switch (item.type) {
      case "message":
        return [{ role: item.role, parts: text(item.content) }]
      case "function_call":
        return [{
          role: "assistant",
          parts: [{ type: "tool_call", id: item.call_id, name: item.name, arguments: item.arguments }]
        }]
      case "function_call_output":
        return [{
          role: "tool",
          parts: [
            { type: "tool_call_response", id: item.call_id, response: item.output },
            ...text(item.content ?? [])
          ]
        }]
      case "reasoning":
        return [{
          role: "assistant",
          parts: (item.summary ?? item.content).flatMap((part) =>
            Item.isMediaPart(part)
              ? []
              : [{ type: "reasoning" as const, content: part.type === "refusal" ? part.refusal : part.text }]
          )
        }]
      default:
        return []
    }
  })
