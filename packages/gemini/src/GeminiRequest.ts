/**
 * Builds the body of a Gemini `streamGenerateContent` request from a history and
 * the turn's options.
 *
 * Items become `contents` with roles `user` and `model`; consecutive items of one
 * role share a content, so parallel calls and their results travel together as
 * Gemini expects. System and developer messages join `instructions` in
 * `systemInstruction`. A `function_call_output` becomes a `functionResponse` part
 * named after its call (looked up by `call_id` in the history) whose `response`
 * is the output when that is a JSON object and `{ output }` otherwise, because
 * Gemini rejects anything but an object; a call's arguments likewise go as they
 * are when they are an object and as `{ arguments }` otherwise (a model's bad
 * call, which its tool rejected, must still be sendable). Thought signatures
 * kept in reasoning items (see `GeminiDecoder`) go back on the part they came
 * with. Reasoning items another provider made are left out: their content is
 * not Gemini's to read. Images and files in user messages are `inlineData`
 * parts (their bytes) or `fileData` parts (a URL Gemini fetches); a tool's
 * images and files go in its `functionResponse`'s own `parts` (Gemini 3 and
 * later), its text parts after the response. A text's citations are dropped:
 * Gemini's `Content` has no room for them (its grounding is the answer's own).
 *
 * @since 0.1.0
 */
import { AiError, Item, ProviderContent } from "@agentloop/core"
import type { LanguageModel } from "@agentloop/core"
import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as GeminiDecoder from "./GeminiDecoder.ts"

/**
 * A JSON object: what Gemini accepts as function-call arguments and as a function response.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonObject = { readonly [key: string]: unknown }

/**
 * Bytes sent inline, base64, of a media type.
 *
 * @since 0.2.0
 * @category models
 */
export interface InlineData {
  readonly mimeType: string
  readonly data: string
}

/**
 * A file Gemini fetches: an `https` or `gs` URL, or a Files API URI.
 *
 * @since 0.2.0
 * @category models
 */
export interface FileData {
  readonly mimeType?: string
  readonly fileUri: string
}

/**
 * One part of a request content: text (a thought when `thought` is true),
 * inline bytes, a file to fetch, a function call or a function response (with
 * the media the function returned), with the `thoughtSignature` it came with.
 *
 * @since 0.1.0
 * @category models
 */
export interface Part {
  readonly text?: string
  readonly thought?: boolean
  readonly thoughtSignature?: string
  readonly inlineData?: InlineData
  readonly fileData?: FileData
  readonly functionCall?: { readonly id?: string; readonly name: string; readonly args: JsonObject }
  readonly functionResponse?: {
    readonly id?: string
    readonly name: string
    readonly response: JsonObject
    readonly parts?: ReadonlyArray<{ readonly inlineData: InlineData }>
  }
}

/**
 * The author of a content.
 *
 * @since 0.1.0
 * @category models
 */
export type Role = "user" | "model"

/**
 * A turn of the conversation as Gemini sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Content {
  readonly role?: Role
  readonly parts: ReadonlyArray<Part>
}

/**
 * Gemini's thinking switches: a level (Gemini 3), a token budget (Gemini 2.5), and whether to stream thoughts.
 *
 * @since 0.1.0
 * @category models
 */
export interface ThinkingConfig {
  readonly includeThoughts?: boolean
  readonly thinkingBudget?: number
  readonly thinkingLevel?: "minimal" | "low" | "medium" | "high"
}

/**
 * Sampling, length, structured output and thinking parameters.
 *
 * @since 0.1.0
 * @category models
 */
export interface GenerationConfig {
  readonly temperature?: number
  readonly topP?: number
  readonly maxOutputTokens?: number
  readonly stopSequences?: ReadonlyArray<string>
  readonly responseMimeType?: string
  readonly responseJsonSchema?: unknown
  readonly thinkingConfig?: ThinkingConfig
}

/**
 * Which functions the model may or must call, and whether Vertex AI streams a call's arguments.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolConfig {
  readonly functionCallingConfig: {
    readonly mode?: "AUTO" | "ANY" | "NONE"
    readonly allowedFunctionNames?: ReadonlyArray<string>
    readonly streamFunctionCallArguments?: boolean
  }
}

/**
 * The body of a `streamGenerateContent` request.
 *
 * @since 0.1.0
 * @category models
 */
export interface Body {
  readonly contents: ReadonlyArray<Content>
  readonly systemInstruction?: Content
  readonly tools?: ReadonlyArray<{
    readonly functionDeclarations: ReadonlyArray<{
      readonly name: string
      readonly description: string
      readonly parametersJsonSchema?: unknown
    }>
  }>
  readonly toolConfig?: ToolConfig
  readonly generationConfig?: GenerationConfig
}

const decodeJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))

/**
 * Request settings that come from the layer rather than from the turn.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  /** Sent as `generationConfig.thinkingConfig`; `reasoningEffort` in the turn's params overrides its level. */
  readonly thinkingConfig?: ThinkingConfig | undefined
  /** The model the request goes to: Gemini 1.x and 2.x take a thinking budget where later models take a level. */
  readonly model?: string | undefined
  /** Asks Vertex AI to stream each call's arguments (`toolConfig.functionCallingConfig.streamFunctionCallArguments`). */
  readonly streamFunctionCallArguments?: boolean | undefined
}

/**
 * The `response` object of a function result: the output if it is a JSON object, else `{ output }`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const functionResponse = (output: string): JsonObject => {
  const parsed = decodeJson(output)
  if (Result.isFailure(parsed)) return { output }
  return Predicate.isReadonlyObject(parsed.success) && !Array.isArray(parsed.success)
    ? parsed.success
    : { output: parsed.success }
}

const invalid = (message: string) => new AiError.InvalidRequest({ provider: GeminiDecoder.provider, message })

const imageTypes = ["image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"]

/**
 * What the Gemini API takes as images and files
 * (https://ai.google.dev/gemini-api/docs/file-input-methods and the image,
 * document, audio and video understanding pages): PNG, JPEG, WebP, HEIC and
 * HEIF images; PDFs, text documents, audio and video as files; inline data up
 * to 100 MB (base64) per request and a PDF up to 50 MB; `https`, `http` and
 * `gs` URLs, whose media type Gemini needs (told by the file's name or the
 * URL's extension).
 *
 * @since 0.2.0
 * @category content
 */
export const contentRules: ProviderContent.Rules = {
  provider: GeminiDecoder.provider,
  imageTypes,
  fileTypes: [
    ...imageTypes,
    "application/pdf",
    "text/plain",
    "text/html",
    "text/css",
    "text/csv",
    "text/markdown",
    "text/xml",
    "application/json",
    "application/rtf",
    "audio/wav",
    "audio/mp3",
    "audio/aiff",
    "audio/aac",
    "audio/ogg",
    "audio/flac",
    "video/mp4",
    "video/mpeg",
    "video/mov",
    "video/avi",
    "video/x-flv",
    "video/mpg",
    "video/webm",
    "video/wmv",
    "video/3gpp"
  ],
  partLimit: (mediaType) =>
    mediaType === "application/pdf" ? { max: 50_000_000, of: "decoded", what: "for a PDF" } : undefined,
  requestLimit: { max: 100_000_000, of: "encoded", what: "of inline data in one request" },
  urlSchemes: ["https:", "http:", "gs:"],
  urlNeedsType: true
}

/**
 * What a function response takes (Gemini 3 models): PNG, JPEG and WebP
 * images, PDFs and text, inline only (the Gemini API fetches no URL there).
 *
 * @since 0.2.0
 * @category content
 */
export const functionResponseRules: ProviderContent.Rules = {
  ...contentRules,
  imageTypes: ["image/png", "image/jpeg", "image/webp"],
  fileTypes: ["application/pdf", "text/plain"],
  urlSchemes: []
}

type Check = ReturnType<typeof ProviderContent.checker>

const mediaOf = (source: ProviderContent.Source): Part =>
  source.type === "base64"
    ? { inlineData: { mimeType: source.mediaType, data: source.data } }
    : { fileData: { ...(source.mediaType === undefined ? {} : { mimeType: source.mediaType }), fileUri: source.url } }

/** The parts of a message: text, and in a user message its images and files; fails for media elsewhere or refused. */
const messageParts = (
  message: Item.Message,
  index: number,
  check: Check
): Result.Result<Array<Part>, AiError.InvalidRequest> => {
  const parts: Array<Part> = []
  for (const [position, part] of message.content.entries()) {
    if (!Item.isMediaPart(part)) {
      parts.push({ text: part.type === "refusal" ? part.refusal : part.text })
      continue
    }
    const at = ProviderContent.where(index, message, position, part)
    if (message.role !== "user") {
      return Result.fail(ProviderContent.refuse(
        GeminiDecoder.provider,
        at,
        `images and files go in user messages and tool outputs, not in a${
          message.role === "assistant" ? "n" : ""
        } ${message.role} message`
      ))
    }
    const source = check(part, at)
    if (Result.isFailure(source)) return Result.fail(source.failure)
    parts.push(mediaOf(source.success))
  }
  return Result.succeed(parts)
}

/**
 * A tool's result: the `functionResponse` (with its images and files as the
 * response's own parts, which Gemini 3 models take), then its text parts.
 */
const functionResultParts = (
  item: Item.FunctionCallOutput,
  index: number,
  name: string,
  model: string | undefined,
  check: Check
): Result.Result<Array<Part>, AiError.InvalidRequest> => {
  const media: Array<{ readonly inlineData: InlineData }> = []
  const text: Array<Part> = []
  for (const [position, part] of (item.content ?? []).entries()) {
    if (!Item.isMediaPart(part)) {
      text.push({ text: part.text })
      continue
    }
    const at = ProviderContent.where(index, item, position, part)
    if (takesThinkingBudget(model)) {
      return Result.fail(ProviderContent.refuse(
        GeminiDecoder.provider,
        at,
        `${model} takes no images or files in a function response (Gemini 3 models do)`
      ))
    }
    const source = check(part, at, functionResponseRules)
    if (Result.isFailure(source)) return Result.fail(source.failure)
    // The rules of a function response take inline data only.
    if (source.success.type === "base64") {
      media.push({ inlineData: { mimeType: source.success.mediaType, data: source.success.data } })
    }
  }
  const response: NonNullable<Part["functionResponse"]> = {
    ...(GeminiDecoder.isSynthesizedCallId(item.call_id) ? {} : { id: item.call_id }),
    name,
    response: functionResponse(item.output),
    ...(media.length === 0 ? {} : { parts: media })
  }
  return Result.succeed([{ functionResponse: response }, ...text])
}

class ContentsBuilder {
  readonly contents: Array<{ role: Role; parts: Array<Part> }> = []
  private signature: string | undefined = undefined

  push(role: Role, part: Part): void {
    if (role === "model" && this.signature !== undefined && part.thoughtSignature === undefined) {
      part = { ...part, thoughtSignature: this.signature }
      this.signature = undefined
    } else {
      this.flushSignature()
    }
    const last = this.contents[this.contents.length - 1]
    if (last !== undefined && last.role === role) last.parts.push(part)
    else this.contents.push({ role, parts: [part] })
  }

  /** A signature with no readable thought goes on the next model part. */
  carry(signature: string): void {
    this.flushSignature()
    this.signature = signature
  }

  flushSignature(): void {
    const signature = this.signature
    if (signature === undefined) return
    this.signature = undefined
    this.push("model", { text: "", thoughtSignature: signature })
  }
}

/**
 * Builds the request body. Fails with `AiError.InvalidRequest` when the history
 * cannot be expressed for Gemini: a result whose call is not in the history,
 * or an image or a file Gemini would refuse (see {@link contentRules}), or one
 * outside a user message or a tool's output.
 *
 * @example
 * ```ts
 * import { Item } from "@agentloop/core"
 * import { GeminiRequest } from "@agentloop/gemini"
 * import { Effect } from "effect"
 *
 * const history = [Item.userMessage("Hello"), Item.assistantMessage("Hi!"), Item.userMessage("How are you?")]
 * Effect.runPromise(GeminiRequest.make(history, {})).then((body) =>
 *   console.log(body.contents.map((content) => content.role)) // [ 'user', 'model', 'user' ]
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(
  history: ReadonlyArray<Item.Item>,
  options: LanguageModel.TurnOptions,
  settings: Settings = {}
) {
  const callNames = new Map<string, string>()
  for (const item of history) {
    if (item.type === "function_call") callNames.set(item.call_id, item.name)
  }
  const system: Array<Part> = options.instructions === undefined ? [] : [{ text: options.instructions }]
  const builder = new ContentsBuilder()
  const check = ProviderContent.checker(contentRules)
  for (const [index, item] of history.entries()) {
    switch (item.type) {
      case "message": {
        const parts = messageParts(item, index, check)
        if (Result.isFailure(parts)) return yield* parts.failure
        if (item.role === "system" || item.role === "developer") {
          system.push(...parts.success)
        } else {
          const role = item.role === "assistant" ? "model" : "user"
          for (const part of parts.success) builder.push(role, part)
        }
        break
      }
      case "function_call": {
        builder.push("model", {
          functionCall: {
            ...(GeminiDecoder.isSynthesizedCallId(item.call_id) ? {} : { id: item.call_id }),
            name: item.name,
            args: Item.argumentsObject(item.arguments)
          }
        })
        break
      }
      case "function_call_output": {
        const name = callNames.get(item.call_id)
        if (name === undefined) {
          return yield* invalid(
            `function_call_output ${item.call_id}: no function_call with this call_id in the history`
          )
        }
        const parts = functionResultParts(item, index, name, settings.model, check)
        if (Result.isFailure(parts)) return yield* parts.failure
        for (const part of parts.success) builder.push("user", part)
        break
      }
      case "reasoning": {
        if (!item.id.startsWith(GeminiDecoder.itemIdPrefix)) break
        const text = item.content.map(Item.partText).join("")
        if (item.content.length > 0) {
          builder.push("model", {
            text,
            thought: true,
            ...(item.encrypted_content === undefined ? {} : { thoughtSignature: item.encrypted_content })
          })
        } else if (item.encrypted_content !== undefined) {
          builder.carry(item.encrypted_content)
        }
        break
      }
      default:
        break
    }
  }
  builder.flushSignature()
  const generationConfig = generationConfigOf(options, settings)
  const tools = options.tools ?? []
  const toolConfig = toolConfigOf(options.toolChoice, settings.streamFunctionCallArguments === true && tools.length > 0)
  const body: Body = {
    contents: builder.contents,
    ...(system.length === 0 ? {} : { systemInstruction: { parts: system } }),
    ...(tools.length === 0 ? {} : {
      tools: [{
        functionDeclarations: tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          parametersJsonSchema: tool.parameters
        }))
      }]
    }),
    ...(toolConfig === undefined ? {} : { toolConfig }),
    ...(generationConfig === undefined ? {} : { generationConfig })
  }
  return body
})

const modeOf = (choice: LanguageModel.ToolChoice): ToolConfig["functionCallingConfig"] => {
  if (choice === "auto") return { mode: "AUTO" }
  if (choice === "none") return { mode: "NONE" }
  if (choice === "required") return { mode: "ANY" }
  return { mode: "ANY", allowedFunctionNames: [choice.name] }
}

const toolConfigOf = (choice: LanguageModel.ToolChoice | undefined, stream: boolean): ToolConfig | undefined =>
  choice === undefined && !stream ? undefined : {
    functionCallingConfig: {
      ...(choice === undefined ? {} : modeOf(choice)),
      ...(stream ? { streamFunctionCallArguments: true } : {})
    }
  }

const generationConfigOf = (
  options: LanguageModel.TurnOptions,
  settings: Settings
): GenerationConfig | undefined => {
  const params = options.params ?? {}
  const thinkingConfig = thinkingConfigOf(params.reasoningEffort, settings.thinkingConfig, settings.model)
  const config: GenerationConfig = {
    ...(params.temperature === undefined ? {} : { temperature: params.temperature }),
    ...(params.topP === undefined ? {} : { topP: params.topP }),
    ...(params.maxOutputTokens === undefined ? {} : { maxOutputTokens: params.maxOutputTokens }),
    ...(params.stopSequences === undefined ? {} : { stopSequences: params.stopSequences }),
    ...(options.output === undefined ? {} : {
      responseMimeType: "application/json",
      responseJsonSchema: options.output.schema
    }),
    ...(thinkingConfig === undefined ? {} : { thinkingConfig })
  }
  return Object.keys(config).length === 0 ? undefined : config
}

/**
 * The thinking budget in tokens for each effort, for the models that take a
 * budget instead of a level; each is within the range of every Gemini 2.5
 * model (Pro: 128 to 32,768; Flash: 0 to 24,576; Flash-Lite: 512 to 24,576).
 */
const thinkingBudgets = { minimal: 512, low: 2048, medium: 8192, high: 24576 } as const

const takesThinkingBudget = (model: string | undefined): boolean =>
  model !== undefined && /^(models\/)?gemini-[12]\./.test(model)

const thinkingConfigOf = (
  effort: LanguageModel.ModelParams["reasoningEffort"],
  configured: ThinkingConfig | undefined,
  model: string | undefined
): ThinkingConfig | undefined => {
  if (effort === undefined && configured === undefined) return undefined
  const base: ThinkingConfig = { includeThoughts: true, ...configured }
  if (effort === undefined) return base
  // Gemini rejects a request that sets both a level and a budget.
  const { thinkingBudget: _budget, thinkingLevel: _level, ...rest } = base
  return takesThinkingBudget(model)
    ? { ...rest, thinkingBudget: thinkingBudgets[effort] }
    : { ...rest, thinkingLevel: effort }
}
