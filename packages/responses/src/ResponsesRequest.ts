/**
 * Builds the body of a streaming `POST /responses` request from a history and
 * the turn options. An assistant text's citations go back as its
 * `annotations`, those the API takes (see `ResponsesCitation.toWire`): the
 * rest are dropped.
 *
 * @since 0.1.0
 */
import {
  type AiError,
  Item,
  type LanguageModel,
  ProviderCitation,
  ProviderContent,
  StrictSchema
} from "@agentloop/core"
import type * as JsonSchema from "effect/JsonSchema"
import * as Result from "effect/Result"
import * as ResponsesCitation from "./ResponsesCitation.ts"
import * as ResponsesDecoder from "./ResponsesDecoder.ts"
import * as ResponsesError from "./ResponsesError.ts"

/**
 * Settings of the provider layer that shape every request.
 *
 * @since 0.1.0
 * @category models
 */
export interface Settings {
  /** The model when the turn options name none. */
  readonly model: string
  /** Whether OpenAI keeps the response (the API's default when unset is to keep it). */
  readonly store?: boolean | undefined
  /** Continue from a stored response; send only the items after it. */
  readonly previousResponseId?: string | undefined
  /** Reasoning summaries to ask for when a reasoning effort is set. */
  readonly reasoningSummary?: "auto" | "concise" | "detailed" | undefined
  /** Sent as `prompt_cache_key`: requests with the same key and prefix are routed to the same prompt cache. */
  readonly promptCacheKey?: string | undefined
}

/**
 * An image or a file of the request, as the API takes it.
 *
 * @since 0.2.0
 * @category models
 */
export type MediaInput =
  | { readonly type: "input_image"; readonly image_url: string; readonly detail: Item.ImageDetail }
  | {
    readonly type: "input_file"
    readonly file_data?: string
    readonly file_url?: string
    readonly filename?: string
  }

/**
 * One input item of the request.
 *
 * @since 0.1.0
 * @category models
 */
export type InputItem =
  | {
    readonly type: "message"
    readonly role: Item.Role
    readonly phase?: Item.Phase
    readonly content: ReadonlyArray<
      | { readonly type: "input_text"; readonly text: string }
      | {
        readonly type: "output_text"
        readonly text: string
        readonly annotations: ReadonlyArray<{ readonly [key: string]: unknown }>
      }
      | { readonly type: "refusal"; readonly refusal: string }
      | MediaInput
    >
  }
  | {
    readonly type: "function_call"
    readonly call_id: string
    readonly name: string
    readonly arguments: string
  }
  | {
    readonly type: "function_call_output"
    readonly call_id: string
    readonly output: string | ReadonlyArray<{ readonly type: "input_text"; readonly text: string } | MediaInput>
  }
  | {
    readonly type: "reasoning"
    readonly id: string
    readonly summary: ReadonlyArray<{ readonly type: "summary_text"; readonly text: string }>
    readonly encrypted_content?: string
  }
  /** An output item this layer does not model, sent back as the API sent it. */
  | { readonly [key: string]: unknown }

/**
 * A function tool as the API takes it.
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionTool {
  readonly type: "function"
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema.JsonSchema
  readonly strict: boolean
}

/**
 * The request body.
 *
 * @since 0.1.0
 * @category models
 */
export interface Body {
  readonly model: string
  readonly input: ReadonlyArray<InputItem>
  readonly stream: true
  readonly instructions?: string
  readonly tools?: ReadonlyArray<FunctionTool>
  readonly tool_choice?: "auto" | "none" | "required" | { readonly type: "function"; readonly name: string }
  readonly temperature?: number
  readonly top_p?: number
  readonly max_output_tokens?: number
  readonly text?: {
    readonly format: {
      readonly type: "json_schema"
      readonly name: string
      readonly schema: JsonSchema.JsonSchema
      readonly strict: boolean
    }
  }
  readonly reasoning?: { readonly effort: string; readonly summary?: string }
  readonly store?: boolean
  readonly previous_response_id?: string
  readonly include?: ReadonlyArray<string>
  readonly prompt_cache_key?: string
}

const partText = (part: Item.ContentPart): string => part.type === "refusal" ? part.refusal : Item.partText(part)

/**
 * What the Responses API takes as images and files: PNG, JPEG, WebP and
 * non-animated GIF images; PDFs, text, code, rich documents, presentations and
 * spreadsheets as files; up to 50 MB of them in one request
 * (https://platform.openai.com/docs/guides/images-vision,
 * https://platform.openai.com/docs/guides/file-inputs).
 *
 * @since 0.2.0
 * @category content
 */
export const contentRules: ProviderContent.Rules = {
  provider: ResponsesError.provider,
  imageTypes: ["image/png", "image/jpeg", "image/webp", "image/gif"],
  fileTypes: [
    "application/pdf",
    "text/plain",
    "text/markdown",
    "text/csv",
    "text/tab-separated-values",
    "text/html",
    "text/css",
    "text/xml",
    "application/json",
    "application/rtf",
    "application/msword",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.oasis.opendocument.text",
    "application/vnd.ms-powerpoint",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.ms-excel",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
  ],
  requestLimit: { max: 50_000_000, of: "encoded", what: "of images and files in one request" }
}

type Check = ReturnType<typeof ProviderContent.checker>

/** A media part as the API takes it, once `check` has passed it. */
const mediaInput = (
  part: Item.MediaPart,
  at: string,
  check: Check
): Result.Result<MediaInput, AiError.InvalidRequest> =>
  Result.map(check(part, at), (): MediaInput =>
    part.type === "input_image"
      ? { type: "input_image", image_url: part.image_url, detail: part.detail ?? "auto" }
      : {
        type: "input_file",
        ...(part.file_data === undefined ? {} : { file_data: part.file_data }),
        ...(part.file_url === undefined ? {} : { file_url: part.file_url }),
        ...(part.filename === undefined ? {} : { filename: part.filename })
      })

const notHere = (message: Item.Message, index: number, part: Item.MediaPart, position: number) =>
  ProviderContent.refuse(
    ResponsesError.provider,
    ProviderContent.where(index, message, position, part),
    `images and files go in user messages and tool outputs, not in a${
      message.role === "assistant" ? "n" : ""
    } ${message.role} message`
  )

const messageInput = (
  message: Item.Message,
  index: number,
  check: Check
): Result.Result<InputItem, AiError.InvalidRequest> => {
  const content: Array<Extract<InputItem, { readonly type: "message" }>["content"][number]> = []
  for (const [position, part] of message.content.entries()) {
    if (Item.isMediaPart(part)) {
      if (message.role !== "user") return Result.fail(notHere(message, index, part, position))
      const media = mediaInput(part, ProviderContent.where(index, message, position, part), check)
      if (Result.isFailure(media)) return Result.fail(media.failure)
      content.push(media.success)
    } else if (message.role === "assistant") {
      content.push(
        part.type === "refusal"
          ? part
          : {
            type: "output_text",
            text: part.text,
            annotations: ProviderCitation.toRequest(part, ResponsesCitation.toWire)
          }
      )
    } else {
      content.push({ type: "input_text", text: partText(part) })
    }
  }
  return Result.succeed({
    type: "message",
    role: message.role,
    ...(message.phase === undefined ? {} : { phase: message.phase }),
    content
  })
}

/** A tool's output: its JSON text, then, when the tool attached any, its parts (the API takes both in one list). */
const functionOutput = (
  item: Item.FunctionCallOutput,
  index: number,
  check: Check
): Result.Result<InputItem, AiError.InvalidRequest> => {
  if (item.content === undefined || item.content.length === 0) {
    return Result.succeed({ type: "function_call_output", call_id: item.call_id, output: item.output })
  }
  const output: Array<{ readonly type: "input_text"; readonly text: string } | MediaInput> = [
    { type: "input_text", text: item.output }
  ]
  for (const [position, part] of item.content.entries()) {
    if (!Item.isMediaPart(part)) {
      output.push(part)
      continue
    }
    const media = mediaInput(part, ProviderContent.where(index, item, position, part), check)
    if (Result.isFailure(media)) return Result.fail(media.failure)
    output.push(media.success)
  }
  return Result.succeed({ type: "function_call_output", call_id: item.call_id, output })
}

/**
 * Maps a history to input items, one for one, except: extension items (`x-…`)
 * are the application's and are not sent, unless they are output items this
 * layer kept as extensions (`x-openai.…`, see `ResponsesDecoder`), which go back
 * as the API sent them; and reasoning items are sent only when they came from
 * OpenAI (an `rs_` id), because the API rejects reasoning it did not produce.
 * Images and files go as `input_image` and `input_file` parts, in user
 * messages and in a tool's output (after its JSON text); fails with
 * `AiError.InvalidRequest` naming a part the API would refuse (see
 * {@link contentRules}), or one in another role's message.
 *
 * @since 0.1.0
 * @category encoding
 */
export const input = (history: ReadonlyArray<Item.Item>): Result.Result<Array<InputItem>, AiError.InvalidRequest> => {
  const check = ProviderContent.checker(contentRules)
  const out: Array<InputItem> = []
  for (const [index, item] of history.entries()) {
    switch (item.type) {
      case "message": {
        const message = messageInput(item, index, check)
        if (Result.isFailure(message)) return Result.fail(message.failure)
        out.push(message.success)
        break
      }
      case "function_call":
        out.push({ type: "function_call", call_id: item.call_id, name: item.name, arguments: item.arguments })
        break
      case "function_call_output": {
        const output = functionOutput(item, index, check)
        if (Result.isFailure(output)) return Result.fail(output.failure)
        out.push(output.success)
        break
      }
      case "reasoning":
        if (item.id.startsWith("rs_")) {
          out.push({
            type: "reasoning",
            id: item.id,
            summary: (item.summary ?? []).flatMap((part) =>
              Item.isMediaPart(part) ? [] : [{ type: "summary_text" as const, text: partText(part) }]
            ),
            ...(item.encrypted_content === undefined ? {} : { encrypted_content: item.encrypted_content })
          })
        }
        break
      default:
        if (ResponsesDecoder.isOutputExtension(item)) out.push(item.data)
        break
    }
  }
  return Result.succeed(out)
}

/**
 * A tool definition as a function tool, strict whenever its schema can be made strict (see `StrictSchema`).
 *
 * @since 0.1.0
 * @category encoding
 */
export const tool = (definition: LanguageModel.ToolDefinition): FunctionTool => {
  const strict = StrictSchema.make(definition.parameters)
  return {
    type: "function",
    name: definition.name,
    description: definition.description,
    parameters: strict.schema,
    strict: strict.strict
  }
}

const outputFormat = (output: LanguageModel.OutputFormat): NonNullable<Body["text"]>["format"] => {
  const strict = StrictSchema.make(output.schema)
  return { type: "json_schema", name: output.name, schema: strict.schema, strict: strict.strict }
}

const toolChoice = (choice: LanguageModel.ToolChoice): NonNullable<Body["tool_choice"]> =>
  typeof choice === "string" ? choice : { type: "function", name: choice.name }

/**
 * The whole request body for one streaming turn; fails when the history
 * cannot be sent (see {@link input}).
 *
 * @example
 * ```ts
 * import { Item } from "@agentloop/core"
 * import { ResponsesRequest } from "@agentloop/responses"
 * import { Result } from "effect"
 *
 * const body = ResponsesRequest.body([Item.userMessage("Hello")], { params: { maxOutputTokens: 256 } }, { model: "gpt-5-mini" })
 * if (Result.isSuccess(body)) console.log(body.success.model, body.success.input.length) // gpt-5-mini 1
 * ```
 *
 * @since 0.1.0
 * @category encoding
 */
export const body = (
  history: ReadonlyArray<Item.Item>,
  options: LanguageModel.TurnOptions,
  settings: Settings
): Result.Result<Body, AiError.InvalidRequest> =>
  Result.map(input(history), (items) => bodyOf(items, options, settings))

const bodyOf = (
  items: ReadonlyArray<InputItem>,
  options: LanguageModel.TurnOptions,
  settings: Settings
): Body => {
  const params = options.params
  const output = options.output
  return {
    model: options.model ?? settings.model,
    input: items,
    stream: true,
    ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
    ...(options.tools === undefined || options.tools.length === 0 ? {} : { tools: options.tools.map(tool) }),
    ...(options.toolChoice === undefined ? {} : { tool_choice: toolChoice(options.toolChoice) }),
    ...(params?.temperature === undefined ? {} : { temperature: params.temperature }),
    ...(params?.topP === undefined ? {} : { top_p: params.topP }),
    ...(params?.maxOutputTokens === undefined ? {} : { max_output_tokens: params.maxOutputTokens }),
    ...(output === undefined ? {} : { text: { format: outputFormat(output) } }),
    ...(params?.reasoningEffort === undefined ? {} : {
      reasoning: {
        effort: params.reasoningEffort,
        ...(settings.reasoningSummary === undefined ? {} : { summary: settings.reasoningSummary })
      }
    }),
    ...(settings.store === undefined ? {} : { store: settings.store }),
    // Without storage, reasoning can only be carried to the next turn as encrypted content.
    ...(settings.store === false ? { include: ["reasoning.encrypted_content"] } : {}),
    ...(settings.previousResponseId === undefined ? {} : { previous_response_id: settings.previousResponseId }),
    ...(settings.promptCacheKey === undefined ? {} : { prompt_cache_key: settings.promptCacheKey })
  }
}
