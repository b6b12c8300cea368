/**
 * Builds the body of a streaming `POST /chat/completions` request from a
 * history and the turn options. A text's citations are dropped: an assistant
 * message of the API has no room for them.
 *
 * @since 0.2.0
 */
import { AiError, Item, type LanguageModel, ProviderContent, StrictSchema } from "@agentloop/core"
import type * as JsonSchema from "effect/JsonSchema"
import * as Result from "effect/Result"
import * as ChatCompletionsContent from "./ChatCompletionsContent.ts"
import * as ChatCompletionsDecoder from "./ChatCompletionsDecoder.ts"
import * as ChatCompletionsError from "./ChatCompletionsError.ts"
import * as ChatCompletionsExtraContent from "./ChatCompletionsExtraContent.ts"
import * as ChatCompletionsReasoningDetails from "./ChatCompletionsReasoningDetails.ts"

/**
 * Which field carries the reasoning of earlier turns back to the server:
 * `none` (the default) sends none, which every server takes (DeepSeek's
 * reasoner refuses its own `reasoning_content` back with a 400);
 * `reasoning_content` for servers that want it back (DeepSeek's and Kimi's
 * thinking models during tool calls, vLLM); `reasoning` for OpenRouter (with its
 * `reasoning_details`, which carry the signatures its Claude and Gemini models
 * check) and Ollama.
 *
 * @since 0.2.0
 * @category models
 */
export type ReasoningHistory = "none" | "reasoning_content" | "reasoning"

/**
 * Settings of the provider layer that shape every request.
 *
 * @since 0.2.0
 * @category models
 */
export interface Settings {
  /** The model when the turn options name none; empty sends none (servers with one model pick it). */
  readonly model: string
  /** Whether tools and structured output use OpenAI's strict mode where their schema allows it. Default `true`. */
  readonly strict?: boolean | undefined
  /** See {@link ReasoningHistory}. Default `none`. */
  readonly reasoningHistory?: ReasoningHistory | undefined
  /** The field the output limit goes in: `max_tokens` (the default, every server) or `max_completion_tokens` (OpenAI's reasoning models). */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens" | undefined
  /** Whether to ask for the usage chunk (`stream_options.include_usage`). Default `true`. */
  readonly includeUsage?: boolean | undefined
  /** `false` asks for one tool call per turn at most (`parallel_tool_calls`); unset leaves the server's default. */
  readonly parallelToolCalls?: boolean | undefined
  /** Sent as `prompt_cache_key`: requests with the same key and prefix are routed to the same prompt cache. */
  readonly promptCacheKey?: string | undefined
}

/**
 * A text part, of a user message or of a tool message.
 *
 * @since 0.2.0
 * @category models
 */
export interface TextPart {
  readonly type: "text"
  readonly text: string
}

/**
 * A content part of a user message.
 *
 * @since 0.2.0
 * @category models
 */
export type UserPart = TextPart | ChatCompletionsContent.ImagePart | ChatCompletionsContent.FilePart

/**
 * A tool call of an assistant message.
 *
 * @since 0.2.0
 * @category models
 */
export interface ToolCall {
  readonly id: string
  readonly type: "function"
  readonly function: { readonly name: string; readonly arguments: string }
  /** What the call came with in `extra_content` (Gemini's thought signature), sent back as it came. */
  readonly extra_content?: { readonly [key: string]: unknown }
}

/**
 * One message of the request.
 *
 * @since 0.2.0
 * @category models
 */
export type Message =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string | ReadonlyArray<UserPart> }
  | {
    readonly role: "assistant"
    readonly content: string | null
    readonly refusal?: string
    readonly tool_calls?: ReadonlyArray<ToolCall>
    readonly reasoning_content?: string
    readonly reasoning?: string
    readonly reasoning_details?: ReadonlyArray<{ readonly [key: string]: unknown }>
  }
  | { readonly role: "tool"; readonly tool_call_id: string; readonly content: string | ReadonlyArray<TextPart> }

/**
 * A function tool as the API takes it.
 *
 * @since 0.2.0
 * @category models
 */
export interface FunctionTool {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: JsonSchema.JsonSchema
    readonly strict?: boolean
  }
}

/**
 * The request body.
 *
 * @since 0.2.0
 * @category models
 */
export interface Body {
  readonly model?: string
  readonly messages: ReadonlyArray<Message>
  readonly stream: true
  readonly stream_options?: { readonly include_usage: true }
  readonly tools?: ReadonlyArray<FunctionTool>
  readonly tool_choice?: "auto" | "none" | "required" | {
    readonly type: "function"
    readonly function: { readonly name: string }
  }
  readonly parallel_tool_calls?: boolean
  readonly response_format?: {
    readonly type: "json_schema"
    readonly json_schema: {
      readonly name: string
      readonly schema: JsonSchema.JsonSchema
      readonly strict?: boolean
    }
  }
  readonly temperature?: number
  readonly top_p?: number
  readonly max_tokens?: number
  readonly max_completion_tokens?: number
  readonly stop?: ReadonlyArray<string>
  readonly reasoning_effort?: string
  readonly prompt_cache_key?: string
}

/** The assistant message being gathered from consecutive assistant items. */
interface Assistant {
  readonly text: Array<string>
  readonly refusal: Array<string>
  readonly calls: Array<ToolCall>
  readonly reasoning: Array<string>
  readonly details: Array<{ readonly [key: string]: unknown }>
}

type MediaCheck = ReturnType<typeof ChatCompletionsContent.checker>

const notHere = (item: Item.Item, index: number, part: Item.MediaPart, position: number, why: string) =>
  ProviderContent.refuse(ChatCompletionsError.provider, ProviderContent.where(index, item, position, part), why)

/**
 * A message's text, or the refusal of its first image or file: only user
 * messages carry them on this wire.
 */
const textOnly = (message: Item.Message, index: number): Result.Result<string, AiError.InvalidRequest> => {
  const text: Array<string> = []
  for (const [position, part] of message.content.entries()) {
    if (Item.isMediaPart(part)) {
      return Result.fail(notHere(
        message,
        index,
        part,
        position,
        `images and files go in user messages, not in a${
          message.role === "assistant" ? "n" : ""
        } ${message.role} message`
      ))
    }
    text.push(part.type === "refusal" ? part.refusal : part.text)
  }
  return Result.succeed(text.join(""))
}

/**
 * A user message's content: one text part as a string, which every server
 * takes; anything else as an array of parts, images and files mapped by
 * `check`.
 */
const userContent = (
  message: Item.Message,
  index: number,
  check: MediaCheck
): Result.Result<string | ReadonlyArray<UserPart>, AiError.InvalidRequest> => {
  const [only, ...others] = message.content
  if (only !== undefined && others.length === 0 && !Item.isMediaPart(only)) return Result.succeed(Item.partText(only))
  const parts: Array<UserPart> = []
  for (const [position, part] of message.content.entries()) {
    if (!Item.isMediaPart(part)) {
      parts.push({ type: "text", text: Item.partText(part) })
      continue
    }
    const media = check(part, ProviderContent.where(index, message, position, part))
    if (Result.isFailure(media)) return Result.fail(media.failure)
    parts.push(media.success)
  }
  return Result.succeed(parts.length === 0 ? "" : parts)
}

/**
 * A tool message's content: the output's JSON text, then the text parts the
 * tool attached, as text parts. A tool message carries text only (OpenAI's
 * `content` is a string or text parts), so an image or a file is refused.
 */
const toolContent = (
  item: Item.FunctionCallOutput,
  index: number
): Result.Result<string | ReadonlyArray<TextPart>, AiError.InvalidRequest> => {
  if (item.content === undefined || item.content.length === 0) return Result.succeed(item.output)
  const parts: Array<TextPart> = [{ type: "text", text: item.output }]
  for (const [position, part] of item.content.entries()) {
    if (Item.isMediaPart(part)) {
      return Result.fail(notHere(
        item,
        index,
        part,
        position,
        `a tool message carries text only on ${ChatCompletionsError.provider} (OpenAI's tool message takes no images or files): show it in a user message instead`
      ))
    }
    parts.push({ type: "text", text: part.text })
  }
  return Result.succeed(parts)
}

/** A reasoning item's text and, when it holds OpenRouter's, its `reasoning_details`. */
const addReasoning = (assistant: Assistant, item: Item.Reasoning): void => {
  const text = item.content.map(Item.partText).join("")
  if (text !== "") assistant.reasoning.push(text)
  const details = item.encrypted_content === undefined
    ? undefined
    : ChatCompletionsReasoningDetails.fromEncrypted(item.encrypted_content)
  if (details !== undefined) assistant.details.push(...details)
}

const assistantMessage = (assistant: Assistant, history: ReasoningHistory): Message | undefined => {
  const text = assistant.text.join("")
  const reasoning = assistant.reasoning.join("")
  const sendsReasoning = history !== "none" && (reasoning !== "" || assistant.details.length > 0)
  if (text === "" && assistant.refusal.length === 0 && assistant.calls.length === 0 && !sendsReasoning) return undefined
  return {
    role: "assistant",
    // OpenAI takes a null content beside tool calls, and wants one otherwise.
    content: text === "" && assistant.calls.length > 0 ? null : text,
    ...(assistant.refusal.length === 0 ? {} : { refusal: assistant.refusal.join("") }),
    ...(assistant.calls.length === 0 ? {} : { tool_calls: assistant.calls }),
    ...(!sendsReasoning
      ? {}
      : history === "reasoning_content"
      ? { reasoning_content: reasoning }
      : {
        reasoning,
        ...(assistant.details.length === 0 ? {} : { reasoning_details: assistant.details })
      })
  }
}

/**
 * Maps a history to messages. Consecutive assistant items (reasoning, assistant
 * messages, function calls) are one assistant message, its text joined, its
 * calls as `tool_calls`; a function output is a `tool` message, and the outputs
 * of a run of user-side items go first, right after the calls they answer, as
 * OpenAI requires. System and developer messages are `system` messages (few
 * servers know `developer`). Reasoning goes back only in the field `history`
 * names, and only when this provider made it; a call's kept `extra_content`
 * goes back on the call (see `ChatCompletionsExtraContent`); the application's
 * own `x-…` items are not sent. Images and files go as `image_url` and `file`
 * parts of user messages. Fails with `InvalidRequest` when an output answers no
 * call of the history, and, naming the part, for an image or a file the API
 * would refuse (see `ChatCompletionsContent.rules`), one in another role's
 * message, and one a tool attached to its output (a tool message carries text
 * only).
 *
 * @since 0.2.0
 * @category encoding
 */
export const messages = (
  items: ReadonlyArray<Item.Item>,
  history: ReasoningHistory = "none"
): Result.Result<Array<Message>, AiError.InvalidRequest> => {
  const out: Array<Message> = []
  const calls = new Set<string>()
  // The extra_content kept before each call, by the call's id (see ChatCompletionsExtraContent).
  const extras = new Map<string, { readonly [key: string]: unknown }>()
  let assistant: Assistant | undefined
  let outputs: Array<Message> = []
  let others: Array<Message> = []
  const flushAssistant = () => {
    const message = assistant === undefined ? undefined : assistantMessage(assistant, history)
    if (message !== undefined) out.push(message)
    assistant = undefined
  }
  const flushUserSide = () => {
    out.push(...outputs, ...others)
    outputs = []
    others = []
  }
  const assistantSide = (): Assistant => {
    flushUserSide()
    assistant ??= { text: [], refusal: [], calls: [], reasoning: [], details: [] }
    return assistant
  }
  const check = ChatCompletionsContent.checker()
  for (const [index, item] of items.entries()) {
    switch (item.type) {
      case "message": {
        if (item.role === "user") {
          flushAssistant()
          const content = userContent(item, index, check)
          if (Result.isFailure(content)) return Result.fail(content.failure)
          others.push({ role: "user", content: content.success })
          break
        }
        const text = textOnly(item, index)
        if (Result.isFailure(text)) return Result.fail(text.failure)
        if (item.role === "assistant") {
          const side = assistantSide()
          for (const part of item.content) {
            if (part.type === "refusal") side.refusal.push(part.refusal)
            else side.text.push(Item.partText(part))
          }
          break
        }
        flushAssistant()
        others.push({ role: "system", content: text.success })
        break
      }
      case "function_call": {
        calls.add(item.call_id)
        const extra = extras.get(item.call_id)
        assistantSide().calls.push({
          id: item.call_id,
          type: "function",
          // A call without arguments is sent with an empty object, which every server parses.
          function: { name: item.name, arguments: item.arguments.trim() === "" ? "{}" : item.arguments },
          ...(extra === undefined ? {} : { extra_content: extra })
        })
        break
      }
      case "reasoning": {
        if (!item.id.startsWith(ChatCompletionsDecoder.itemIdPrefix)) break
        const kept = item.encrypted_content === undefined
          ? undefined
          : ChatCompletionsExtraContent.fromEncrypted(item.encrypted_content)
        if (kept === undefined) addReasoning(assistantSide(), item)
        else extras.set(kept.callId, kept.extra)
        break
      }
      case "function_call_output": {
        if (!calls.has(item.call_id)) {
          return Result.fail(
            new AiError.InvalidRequest({
              provider: ChatCompletionsError.provider,
              message: `function_call_output ${item.id} answers call ${item.call_id}, which is not in the history`
            })
          )
        }
        flushAssistant()
        const content = toolContent(item, index)
        if (Result.isFailure(content)) return Result.fail(content.failure)
        outputs.push({ role: "tool", tool_call_id: item.call_id, content: content.success })
        break
      }
      default:
        break
    }
  }
  flushAssistant()
  flushUserSide()
  return Result.succeed(out)
}

/**
 * A schema as sent: the strict form with `strict: true` when `strict` is on and
 * OpenAI's strict mode can take it (see `StrictSchema`), else as it is
 * (without its `$schema` dialect, which some servers refuse) and no `strict`.
 *
 * @since 0.2.0
 * @category encoding
 */
export const schemaOf = (
  schema: JsonSchema.JsonSchema,
  strict: boolean
): { readonly schema: JsonSchema.JsonSchema; readonly strict?: true } => {
  const made = StrictSchema.make(schema)
  return strict && made.strict ? { schema: made.schema, strict: true } : { schema: strictless(schema) }
}

const strictless = (schema: JsonSchema.JsonSchema): JsonSchema.JsonSchema => {
  const { $schema: _, ...rest } = schema
  return rest
}

/**
 * A tool definition as a function tool.
 *
 * @since 0.2.0
 * @category encoding
 */
export const tool = (definition: LanguageModel.ToolDefinition, strict: boolean): FunctionTool => {
  const { schema, ...mode } = schemaOf(definition.parameters, strict)
  return {
    type: "function",
    function: { name: definition.name, description: definition.description, parameters: schema, ...mode }
  }
}

const toolChoice = (choice: LanguageModel.ToolChoice): NonNullable<Body["tool_choice"]> =>
  typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } }

/**
 * The whole request body for one streaming turn; fails with `InvalidRequest`
 * when the history cannot be sent (see {@link messages}).
 *
 * @example
 * ```ts
 * import { ChatCompletionsRequest } from "@agentloop/chat-completions"
 * import { Item } from "@agentloop/core"
 * import { Result } from "effect"
 *
 * const body = ChatCompletionsRequest.body([Item.userMessage("Hello")], {}, { model: "gpt-4o-mini", includeUsage: true })
 * if (Result.isSuccess(body)) console.log(body.success.messages.length, body.success.stream_options) // 1 { include_usage: true }
 * ```
 *
 * @since 0.2.0
 * @category encoding
 */
export const body = (
  history: ReadonlyArray<Item.Item>,
  options: LanguageModel.TurnOptions,
  settings: Settings
): Result.Result<Body, AiError.InvalidRequest> => {
  const strict = settings.strict ?? true
  const params = options.params
  const output = options.output
  const model = options.model ?? settings.model
  const maxTokens = settings.maxTokensField ?? "max_tokens"
  return Result.map(messages(history, settings.reasoningHistory), (items): Body => ({
    ...(model === "" ? {} : { model }),
    messages: options.instructions === undefined
      ? items
      : [{ role: "system", content: options.instructions }, ...items],
    stream: true,
    ...(settings.includeUsage === false ? {} : { stream_options: { include_usage: true } }),
    ...(options.tools === undefined || options.tools.length === 0
      ? {}
      : { tools: options.tools.map((definition) => tool(definition, strict)) }),
    ...(options.toolChoice === undefined ? {} : { tool_choice: toolChoice(options.toolChoice) }),
    ...(settings.parallelToolCalls === undefined ? {} : { parallel_tool_calls: settings.parallelToolCalls }),
    ...(output === undefined ? {} : {
      response_format: { type: "json_schema", json_schema: { name: output.name, ...schemaOf(output.schema, strict) } }
    }),
    ...(params?.temperature === undefined ? {} : { temperature: params.temperature }),
    ...(params?.topP === undefined ? {} : { top_p: params.topP }),
    ...(params?.maxOutputTokens === undefined
      ? {}
      : maxTokens === "max_tokens"
      ? { max_tokens: params.maxOutputTokens }
      : { max_completion_tokens: params.maxOutputTokens }),
    ...(params?.stopSequences === undefined ? {} : { stop: params.stopSequences }),
    ...(params?.reasoningEffort === undefined ? {} : { reasoning_effort: params.reasoningEffort }),
    ...(settings.promptCacheKey === undefined ? {} : { prompt_cache_key: settings.promptCacheKey })
  }))
}
