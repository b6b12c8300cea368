/**
 * Builds the body of a streaming `POST /v1/messages` request from a history
 * and the turn's options.
 *
 * Items become `messages` with roles `user` and `assistant`; consecutive items
 * of one role share a message, so parallel calls travel in one assistant
 * message and their results in the next user message, results first, as the
 * API requires. `instructions` and system or developer messages become
 * `system`. A call is a `tool_use` block whose `input` is its arguments as a
 * JSON object (see `Item.argumentsObject`), its result a `tool_result` block.
 * An assistant text's citations go back on its `text` block, those the API
 * sent (see `AnthropicCitation.toWire`); other providers' are dropped.
 * Reasoning items this provider made go back as the `thinking` blocks (with
 * their signatures) or `redacted_thinking` blocks they came from, and content
 * blocks it kept as extension items (server tools' calls and results) go back
 * as they came; reasoning from another provider is left out, because the API
 * checks every thinking block's signature. Images become `image` blocks and
 * files `document` blocks (PDFs from their bytes or a URL, text as text), in
 * user messages and in a tool's result. The stable prefix of the request (the
 * tools, the system prompt, the history) is marked for the prompt cache (see
 * `AnthropicCache`).
 *
 * @since 0.1.0
 */
import { AiError, Item, ProviderCitation, ProviderContent } from "@agentloop/core"
import type { LanguageModel } from "@agentloop/core"
import * as Effect from "effect/Effect"
import type * as JsonSchema from "effect/JsonSchema"
import * as Result from "effect/Result"
import * as AnthropicCache from "./AnthropicCache.ts"
import * as AnthropicCitation from "./AnthropicCitation.ts"
import * as AnthropicDecoder from "./AnthropicDecoder.ts"
import * as AnthropicError from "./AnthropicError.ts"
import * as AnthropicModels from "./AnthropicModels.ts"
import * as AnthropicSchema from "./AnthropicSchema.ts"

/**
 * `max_tokens` when the turn sets no `params.maxOutputTokens` (the API
 * requires one): 8,192 tokens, which every Claude model from 3.5 on can write.
 * When the turn sets a reasoning effort, the effort's thinking budget is added
 * on top (see {@link thinkingBudgets}), so thinking does not eat the answer.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxTokens = 8192

/**
 * The thinking budget of each reasoning effort, in tokens: what `budget_tokens`
 * is for models that take a budget, and what `max_tokens` grows by when the
 * turn does not set it. The API's smallest budget is 1,024.
 *
 * @since 0.1.0
 * @category constants
 */
export const thinkingBudgets = { minimal: 1024, low: 4096, medium: 10240, high: 24576 } as const

/**
 * How the model thinks, as the API takes it; see `AnthropicModels.thinking` for which models take which.
 *
 * @since 0.1.0
 * @category models
 */
export type Thinking =
  | { readonly type: "enabled"; readonly budget_tokens: number }
  | { readonly type: "adaptive"; readonly display?: "summarized" | "omitted" }
  | { readonly type: "disabled" }

/**
 * An image: its bytes (JPEG, PNG, GIF or WebP) or a URL the API fetches.
 *
 * @since 0.2.0
 * @category models
 */
export interface ImageBlock {
  readonly type: "image"
  readonly source:
    | { readonly type: "base64"; readonly media_type: string; readonly data: string }
    | { readonly type: "url"; readonly url: string }
  readonly cache_control?: AnthropicCache.CacheControl
}

/**
 * A document: a PDF's bytes or URL, or plain text.
 *
 * @since 0.2.0
 * @category models
 */
export interface DocumentBlock {
  readonly type: "document"
  readonly source:
    | { readonly type: "base64"; readonly media_type: "application/pdf"; readonly data: string }
    | { readonly type: "text"; readonly media_type: "text/plain"; readonly data: string }
    | { readonly type: "url"; readonly url: string }
  readonly title?: string
  readonly cache_control?: AnthropicCache.CacheControl
}

/**
 * A text block.
 *
 * @since 0.2.0
 * @category models
 */
export interface TextBlock {
  readonly type: "text"
  readonly text: string
  /** The citations the API sent with the block, with the fields it takes back (see `AnthropicCitation.toWire`). */
  readonly citations?: ReadonlyArray<AnthropicCitation.CitationParam>
  readonly cache_control?: AnthropicCache.CacheControl
}

/**
 * One content block of a request message.
 *
 * @since 0.1.0
 * @category models
 */
export type ContentBlock =
  | TextBlock
  | ImageBlock
  | DocumentBlock
  | { readonly type: "thinking"; readonly thinking: string; readonly signature: string }
  | { readonly type: "redacted_thinking"; readonly data: string }
  | {
    readonly type: "tool_use"
    readonly id: string
    readonly name: string
    readonly input: { readonly [key: string]: unknown }
    readonly cache_control?: AnthropicCache.CacheControl
  }
  | {
    readonly type: "tool_result"
    readonly tool_use_id: string
    readonly content?: string | ReadonlyArray<TextBlock | ImageBlock | DocumentBlock>
    readonly cache_control?: AnthropicCache.CacheControl
  }
  /** A block this layer does not model (a server tool's call or result), sent back as the API sent it. */
  | { readonly [key: string]: unknown }

/**
 * A message of the conversation.
 *
 * @since 0.1.0
 * @category models
 */
export interface Message {
  readonly role: "user" | "assistant"
  readonly content: ReadonlyArray<ContentBlock>
}

/**
 * A client tool as the API takes it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tool {
  readonly name: string
  readonly description: string
  readonly input_schema: JsonSchema.JsonSchema
  readonly cache_control?: AnthropicCache.CacheControl
}

/**
 * Which tools the model may or must call; `disable_parallel_tool_use` asks for one call at most.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolChoice =
  | { readonly type: "auto" | "any"; readonly disable_parallel_tool_use?: boolean }
  | { readonly type: "tool"; readonly name: string; readonly disable_parallel_tool_use?: boolean }
  | { readonly type: "none" }

/**
 * The request body.
 *
 * @since 0.1.0
 * @category models
 */
export interface Body {
  readonly model: string
  readonly max_tokens: number
  readonly messages: ReadonlyArray<Message>
  readonly system?: ReadonlyArray<TextBlock>
  readonly tools?: ReadonlyArray<Tool>
  readonly tool_choice?: ToolChoice
  readonly thinking?: Thinking
  readonly output_config?: {
    readonly effort?: "low" | "medium" | "high"
    readonly format?: { readonly type: "json_schema"; readonly schema: JsonSchema.JsonSchema }
  }
  readonly temperature?: number
  readonly top_p?: number
  readonly stop_sequences?: ReadonlyArray<string>
  readonly stream: true
}

/**
 * Request settings that come from the layer rather than from the turn.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  readonly model: string
  /** `max_tokens` when the turn sets none; default {@link defaultMaxTokens}. */
  readonly maxTokens?: number | undefined
  /** Sent when the turn sets no reasoning effort. */
  readonly thinking?: Thinking | undefined
  /** `false` asks for one tool call per turn at most (`disable_parallel_tool_use`). */
  readonly parallelToolCalls?: boolean | undefined
  /** Where the prompt cache's breakpoints go; default all of `AnthropicCache.PromptCache`'s, `false` none. */
  readonly promptCache?: AnthropicCache.PromptCache | false | undefined
}

/**
 * A request body, and the name of the tool that carries a structured output when the model answers through one.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly body: Body
  readonly outputTool: string | undefined
}

const invalid = (message: string) => new AiError.InvalidRequest({ provider: AnthropicError.provider, message })

/**
 * A call id as the API takes it (letters, digits, `_` and `-`): other providers' ids may carry other characters.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toolUseId = (callId: string): string => callId.replace(/[^a-zA-Z0-9_-]/g, "_") || "call"

/**
 * The text blocks of text parts, with the citations the API sent (another
 * provider's are dropped); the API refuses empty blocks, so those are left out.
 */
const textBlocks = (parts: ReadonlyArray<Item.ContentPart>): Array<TextBlock> =>
  parts.flatMap((part) => {
    if (Item.isMediaPart(part)) return []
    const text = part.type === "refusal" ? part.refusal : part.text
    if (text === "") return []
    const citations = ProviderCitation.toRequest(part, AnthropicCitation.toWire)
    return [citations.length === 0 ? { type: "text" as const, text } : { type: "text" as const, text, citations }]
  })

/**
 * What the Messages API takes as images and files
 * (https://docs.claude.com/en/docs/build-with-claude/vision and
 * /pdf-support): JPEG, PNG, GIF and WebP images of at most 5 MB each (the
 * API counts the base64 text), PDFs (from their bytes or a URL) and plain
 * text documents, within the API's 32 MB request size.
 *
 * @since 0.2.0
 * @category content
 */
export const contentRules: ProviderContent.Rules = {
  provider: AnthropicError.provider,
  imageTypes: ["image/jpeg", "image/png", "image/gif", "image/webp"],
  fileTypes: ["application/pdf", "text/plain"],
  fileUrlTypes: ["application/pdf"],
  partLimit: (mediaType) =>
    mediaType.startsWith("image/") ? { max: 5 * 1024 * 1024, of: "encoded", what: "for an image" } : undefined,
  requestLimit: { max: 32_000_000, of: "encoded", what: "for a whole request" }
}

type Check = ReturnType<typeof ProviderContent.checker>

/** The block of an image or a file, once `check` has passed it. */
const mediaBlock = (
  part: Item.MediaPart,
  at: string,
  check: Check
): Result.Result<ImageBlock | DocumentBlock, AiError.InvalidRequest> => {
  const checked = check(part, at)
  if (Result.isFailure(checked)) return Result.fail(checked.failure)
  const source = checked.success
  if (part.type === "input_image") {
    return Result.succeed({
      type: "image",
      source: source.type === "url"
        ? { type: "url", url: source.url }
        : { type: "base64", media_type: source.mediaType, data: source.data }
    })
  }
  const title = part.filename === undefined ? {} : { title: part.filename }
  if (source.type === "url") {
    return Result.succeed({ type: "document", source: { type: "url", url: source.url }, ...title })
  }
  if (source.mediaType === "application/pdf") {
    return Result.succeed({
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: source.data },
      ...title
    })
  }
  const text = ProviderContent.decodeText(source.data)
  if (Result.isFailure(text)) return Result.fail(ProviderContent.refuse(AnthropicError.provider, at, text.failure))
  return Result.succeed({
    type: "document",
    source: { type: "text", media_type: "text/plain", data: text.success },
    ...title
  })
}

/** The blocks of a message: its text, and in a user message its images and files; fails for media elsewhere or refused. */
const messageBlocks = (
  message: Item.Message,
  index: number,
  check: Check
): Result.Result<Array<ContentBlock>, AiError.InvalidRequest> => {
  const blocks: Array<ContentBlock> = []
  for (const [position, part] of message.content.entries()) {
    if (!Item.isMediaPart(part)) {
      blocks.push(...textBlocks([part]))
      continue
    }
    const at = ProviderContent.where(index, message, position, part)
    if (message.role !== "user") {
      return Result.fail(ProviderContent.refuse(
        AnthropicError.provider,
        at,
        `images and files go in user messages and tool outputs, not in a${
          message.role === "assistant" ? "n" : ""
        } ${message.role} message`
      ))
    }
    const block = mediaBlock(part, at, check)
    if (Result.isFailure(block)) return Result.fail(block.failure)
    blocks.push(block.success)
  }
  return Result.succeed(blocks)
}

/** A tool's result: its output as text, or, with images or files, a list of the output's text and those blocks. */
const toolResult = (
  item: Item.FunctionCallOutput,
  index: number,
  check: Check
): Result.Result<ContentBlock, AiError.InvalidRequest> => {
  const tool_use_id = toolUseId(item.call_id)
  if (item.content === undefined || item.content.length === 0) {
    return Result.succeed({ type: "tool_result", tool_use_id, ...(item.output === "" ? {} : { content: item.output }) })
  }
  const content: Array<TextBlock | ImageBlock | DocumentBlock> = textBlocks([{ type: "input_text", text: item.output }])
  for (const [position, part] of item.content.entries()) {
    if (!Item.isMediaPart(part)) {
      content.push(...textBlocks([part]))
      continue
    }
    const block = mediaBlock(part, ProviderContent.where(index, item, position, part), check)
    if (Result.isFailure(block)) return Result.fail(block.failure)
    content.push(block.success)
  }
  return Result.succeed({ type: "tool_result", tool_use_id, content })
}

/** A schema without its `$schema` dialect, which the API has no use for. */
const withoutDialect = (schema: JsonSchema.JsonSchema): JsonSchema.JsonSchema => {
  const { $schema: _, ...rest } = schema
  return rest
}

const reasoningBlock = (item: Item.Reasoning): ContentBlock | undefined => {
  if (!item.id.startsWith(AnthropicDecoder.itemIdPrefix) || item.encrypted_content === undefined) return undefined
  return item.content.length === 0
    ? { type: "redacted_thinking", data: item.encrypted_content }
    : { type: "thinking", thinking: item.content.map(Item.partText).join(""), signature: item.encrypted_content }
}

class MessagesBuilder {
  readonly messages: Array<{ readonly role: Message["role"]; content: Array<ContentBlock> }> = []

  push(role: Message["role"], blocks: ReadonlyArray<ContentBlock>): void {
    if (blocks.length === 0) return
    const last = this.messages[this.messages.length - 1]
    if (last?.role === role) last.content.push(...blocks)
    else this.messages.push({ role, content: [...blocks] })
  }

  /** The messages, each user message with its tool results first, as the API requires. */
  build(): Array<Message> {
    return this.messages.map((message) =>
      message.role === "assistant" ? message : {
        role: "user",
        content: [
          ...message.content.filter((block) => block.type === "tool_result"),
          ...message.content.filter((block) => block.type !== "tool_result")
        ]
      }
    )
  }
}

const toolChoiceOf = (choice: LanguageModel.ToolChoice): ToolChoice =>
  choice === "auto" ? { type: "auto" } : choice === "none" ? { type: "none" } : choice === "required"
    ? { type: "any" }
    : { type: "tool", name: choice.name }

const withParallel = (choice: ToolChoice, parallel: boolean | undefined): ToolChoice =>
  parallel === false && choice.type !== "none" ? { ...choice, disable_parallel_tool_use: true } : choice

const thinkingOf = (
  effort: LanguageModel.ModelParams["reasoningEffort"],
  model: string,
  maxTokens: number
): Pick<Body, "thinking" | "output_config"> => {
  if (effort === undefined) return {}
  if (AnthropicModels.thinking(model) === "adaptive") {
    return {
      thinking: { type: "adaptive", display: "summarized" },
      output_config: { effort: effort === "minimal" ? "low" : effort }
    }
  }
  const budget = Math.min(thinkingBudgets[effort], maxTokens - 1)
  return budget < thinkingBudgets.minimal ? {} : { thinking: { type: "enabled", budget_tokens: budget } }
}

/** The system blocks of the request: the turn's instructions, then the history's system and developer messages. */
const systemOf = (history: ReadonlyArray<Item.Item>, instructions: string | undefined) => [
  ...(instructions === undefined || instructions === "" ? [] : [{ type: "text" as const, text: instructions }]),
  ...history.flatMap((item) =>
    item.type === "message" && (item.role === "system" || item.role === "developer")
      ? textBlocks(item.content)
      : []
  )
]

/**
 * The messages of a history; fails for a result whose call is not in it, and
 * for an image or a file the API would refuse (see {@link contentRules}) or
 * that is in an assistant, system or developer message.
 */
const messagesOf = (history: ReadonlyArray<Item.Item>): Result.Result<Array<Message>, AiError.InvalidRequest> => {
  const calls = new Set<string>()
  for (const item of history) if (item.type === "function_call") calls.add(item.call_id)
  const builder = new MessagesBuilder()
  const check = ProviderContent.checker(contentRules)
  for (const [index, item] of history.entries()) {
    switch (item.type) {
      case "message": {
        const blocks = messageBlocks(item, index, check)
        if (Result.isFailure(blocks)) return Result.fail(blocks.failure)
        if (item.role === "user") builder.push("user", blocks.success)
        else if (item.role === "assistant") builder.push("assistant", blocks.success)
        break
      }
      case "function_call":
        builder.push("assistant", [{
          type: "tool_use",
          id: toolUseId(item.call_id),
          name: item.name,
          input: Item.argumentsObject(item.arguments)
        }])
        break
      case "function_call_output":
        if (!calls.has(item.call_id)) {
          return Result.fail(
            invalid(`function_call_output ${item.call_id}: no function_call with this call_id in the history`)
          )
        }
        {
          const result = toolResult(item, index, check)
          if (Result.isFailure(result)) return Result.fail(result.failure)
          builder.push("user", [result.success])
        }
        break
      case "reasoning": {
        const block = reasoningBlock(item)
        if (block !== undefined) builder.push("assistant", [block])
        break
      }
      default:
        if (AnthropicDecoder.isContentBlockExtension(item)) builder.push("assistant", [item.data])
        break
    }
  }
  return Result.succeed(builder.build())
}

/** The tools and tool choice of a turn, and how it asks for its structured output. */
interface Tooling {
  readonly tools: ReadonlyArray<Tool>
  readonly toolChoice: ToolChoice | undefined
  readonly format: JsonSchema.JsonSchema | undefined
  readonly outputTool: string | undefined
}

/**
 * The tools of a turn with its structured output: the API's own when the model
 * has it and the schema fits (`format`), else a tool named after the output
 * that the model is made to call (`outputTool`).
 */
const toolingOf = (
  options: LanguageModel.TurnOptions,
  model: string,
  thinks: boolean
): Result.Result<Tooling, AiError.InvalidRequest> => {
  const tools: Array<Tool> = (options.tools ?? []).map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: withoutDialect(tool.parameters)
  }))
  const toolChoice = options.toolChoice === undefined ? undefined : toolChoiceOf(options.toolChoice)
  const output = options.output
  if (output === undefined) return Result.succeed({ tools, toolChoice, format: undefined, outputTool: undefined })
  const format = AnthropicModels.structuredOutput(model) ? AnthropicSchema.structuredOutput(output.schema) : undefined
  if (format !== undefined) return Result.succeed({ tools, toolChoice, format, outputTool: undefined })
  if (tools.some((tool) => tool.name === output.name)) {
    return Result.fail(invalid(`the structured output ${output.name} is named like one of the turn's tools`))
  }
  const ownTools = tools.length > 0 && toolChoice?.type !== "none"
  return Result.succeed({
    tools: [...tools, {
      name: output.name,
      description: "Give your final answer by calling this tool with it as the input.",
      input_schema: withoutDialect(output.schema)
    }],
    // The API does not let thinking run with a forced tool.
    toolChoice: thinks
      ? { type: "auto" }
      : toolChoice?.type === "tool"
      ? toolChoice
      : ownTools
      ? { type: "any" }
      : { type: "tool", name: output.name },
    format: undefined,
    outputTool: output.name
  })
}

/**
 * Builds the request. Fails with `AiError.InvalidRequest` when the history
 * cannot be expressed for the API: a result whose call is not in the history,
 * or a structured output named like one of the turn's tools.
 *
 * A structured output uses the API's own (`output_config.format`) when the
 * model has it and the schema fits it (see `AnthropicSchema`); otherwise it is
 * a tool named after the output that the model is made to call (`tool_choice`
 * `tool`, or `any` when the turn has tools of its own; `auto` with thinking on,
 * which the API does not let force a tool), whose call the decoder turns into
 * the answer's text.
 *
 * @example
 * ```ts
 * import { AnthropicRequest } from "@agentloop/anthropic"
 * import { Item } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * const history = [Item.userMessage("Hello")]
 * const options = { instructions: "Answer in French.", params: { maxOutputTokens: 256 } }
 * Effect.runPromise(AnthropicRequest.make(history, options, { model: "claude-haiku-4-5" })).then(({ body }) => {
 *   console.log(body.system?.[0]?.text) // Answer in French.
 *   console.log(body.messages.map((message) => message.role), body.max_tokens) // [ 'user' ] 256
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(
  history: ReadonlyArray<Item.Item>,
  options: LanguageModel.TurnOptions,
  settings: Settings
) {
  const model = settings.model
  const params = options.params ?? {}
  const messages = messagesOf(history)
  if (Result.isFailure(messages)) return yield* messages.failure
  const effort = params.reasoningEffort
  const maxTokens = params.maxOutputTokens ?? settings.maxTokens ??
    defaultMaxTokens + (effort === undefined ? 0 : thinkingBudgets[effort])
  const thinking = effort === undefined
    ? (settings.thinking === undefined ? {} : { thinking: settings.thinking })
    : thinkingOf(effort, model, maxTokens)
  const tooling = toolingOf(options, model, thinking.thinking !== undefined && thinking.thinking.type !== "disabled")
  if (Result.isFailure(tooling)) return yield* tooling.failure
  const { format, outputTool, tools } = tooling.success
  const toolChoice = tooling.success.toolChoice ?? (settings.parallelToolCalls === false ? { type: "auto" } : undefined)
  const outputConfig = {
    ...thinking.output_config,
    ...(format === undefined ? {} : { format: { type: "json_schema" as const, schema: format } })
  }
  const system = systemOf(history, options.instructions)
  const body: Body = {
    model,
    max_tokens: maxTokens,
    messages: messages.success,
    ...(system.length === 0 ? {} : { system }),
    ...(tools.length === 0 ? {} : { tools }),
    ...(toolChoice === undefined || tools.length === 0
      ? {}
      : { tool_choice: withParallel(toolChoice, settings.parallelToolCalls) }),
    ...(thinking.thinking === undefined ? {} : { thinking: thinking.thinking }),
    ...(Object.keys(outputConfig).length === 0 ? {} : { output_config: outputConfig }),
    ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
    ...(params.topP === undefined ? {} : { top_p: params.topP }),
    ...(params.stopSequences === undefined || params.stopSequences.length === 0
      ? {}
      : { stop_sequences: params.stopSequences }),
    stream: true
  }
  return { body: AnthropicCache.withBreakpoints(body, settings.promptCache), outputTool } satisfies Request
})
