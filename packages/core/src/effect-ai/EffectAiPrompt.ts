/**
 * An agentloop history and an `effect/ai` prompt, one as the other.
 *
 * Messages map to messages (system and developer messages to system
 * messages, refusals to text), reasoning to reasoning parts, function calls to
 * tool-call parts and their outputs to tool-result parts, matched by call id.
 * Images and files are `effect/ai` file parts (see `EffectAiContent`), in
 * user and assistant messages, and in a tool result's `modelOutput` for what
 * a tool attached to its output. What one side cannot carry (a file in a
 * system message or in reasoning, data that is not base64) fails with
 * `AiError.InvalidRequest` naming it: nothing is dropped.
 *
 * @since 0.2.0
 */
import type { Prompt } from "effect/ai"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as AiError from "../AiError.ts"
import * as Item from "../Item.ts"
import type { ToolChoice } from "../LanguageModel.ts"
import * as ProviderContent from "../provider/ProviderContent.ts"
import * as EffectAiContent from "./EffectAiContent.ts"

/** Where a part of a prompt is, for error messages: `prompt[2] (user) content[1] (file image/png)`. */
const promptWhere = (index: number, role: string, part: number, file: Prompt.FilePart): string =>
  `prompt[${index}] (${role}) content[${part}] (file ${file.mediaType}${
    file.fileName === undefined ? "" : ` ${JSON.stringify(file.fileName)}`
  })`

/** A user message's parts as one user message: text, images and files in order. */
const userItem = (
  message: Prompt.UserMessage,
  index: number
): Result.Result<Item.Message, AiError.InvalidRequest> => {
  const content: Array<Item.ContentPart> = []
  for (const [position, part] of message.content.entries()) {
    if (part.type === "text") {
      content.push({ type: "input_text", text: part.text })
      continue
    }
    const media = EffectAiContent.fromFilePart(part, promptWhere(index, "user", position, part))
    if (Result.isFailure(media)) return Result.fail(media.failure)
    content.push(media.success)
  }
  return Result.succeed(Item.userMessage(content, `msg_${index}`))
}

/**
 * A tool result as a function output. Without `modelOutput`, the output is
 * the result's JSON. With it (what the model is shown in place of the
 * result), the output is its first part when that is text, else the result's
 * JSON, and the rest are the output's `content`.
 */
const outputItem = (
  part: Prompt.ToolResultPart,
  index: number,
  position: number,
  id: string
): Result.Result<Item.FunctionCallOutput, AiError.InvalidRequest> => {
  const item: Item.FunctionCallOutput = {
    type: "function_call_output",
    id: `fco_${id}`,
    status: part.isFailure ? "incomplete" : "completed",
    call_id: part.id,
    output: JSON.stringify(part.result ?? null)
  }
  const modelOutput = part.modelOutput
  if (modelOutput === undefined || modelOutput.length === 0) return Result.succeed(item)
  const [first, ...rest] = modelOutput
  const shown = first?.type === "text" ? rest : modelOutput
  const offset = modelOutput.length - shown.length
  const content = EffectAiContent.fromModelOutput(
    shown,
    (at, file) => `${promptWhere(index, "tool-result", position, file)} modelOutput[${at + offset}]`
  )
  if (Result.isFailure(content)) return Result.fail(content.failure)
  return Result.succeed({
    ...item,
    ...(first?.type === "text" ? { output: first.text } : {}),
    ...(content.success.length === 0 ? {} : { content: content.success })
  })
}

/**
 * The history and instructions of an `effect/ai` prompt: its system messages
 * are the instructions, joined by a blank line; a user message is one user
 * message item (its text, images and files); each part of an assistant
 * message is an item of its own (a file part an assistant message with that
 * image or file), and each tool result a function output. Fails with
 * `InvalidRequest` for a file part that cannot be carried (see
 * `EffectAiContent.fromFilePart`).
 *
 * @since 0.2.0
 * @category conversions
 */
export const toHistory = (prompt: Prompt.Prompt): Effect.Effect<{
  readonly history: ReadonlyArray<Item.Item>
  readonly instructions: string | undefined
}, AiError.InvalidRequest> =>
  Effect.suspend(() => {
    const history: Array<Item.Item> = []
    const instructions: Array<string> = []
    for (const [index, message] of prompt.content.entries()) {
      if (message.role === "system") {
        instructions.push(message.content)
        continue
      }
      if (message.role === "user") {
        if (message.content.length === 0) continue
        const item = userItem(message, index)
        if (Result.isFailure(item)) return Effect.fail(item.failure)
        history.push(item.success)
        continue
      }
      for (const [partIndex, part] of message.content.entries()) {
        const id = `${index}_${partIndex}`
        switch (part.type) {
          case "text":
            history.push(Item.assistantMessage(part.text, `msg_${id}`))
            break
          case "file": {
            const media = EffectAiContent.fromFilePart(part, promptWhere(index, message.role, partIndex, part))
            if (Result.isFailure(media)) return Effect.fail(media.failure)
            history.push({ ...Item.assistantMessage("", `msg_${id}`), content: [media.success] })
            break
          }
          case "reasoning":
            history.push({
              type: "reasoning",
              id: `rs_${id}`,
              status: "completed",
              content: [],
              summary: [{ type: "output_text", text: part.text }]
            })
            break
          case "tool-call":
            history.push({
              type: "function_call",
              id: `fc_${id}`,
              status: "completed",
              call_id: part.id,
              name: part.name,
              arguments: JSON.stringify(part.params ?? {})
            })
            break
          case "tool-result": {
            const output = outputItem(part, index, partIndex, id)
            if (Result.isFailure(output)) return Effect.fail(output.failure)
            history.push(output.success)
            break
          }
          default:
            // Approval requests and responses are effect/ai's own bookkeeping; the model never sees them.
            break
        }
      }
    }
    return Effect.succeed({ history, instructions: instructions.length === 0 ? undefined : instructions.join("\n\n") })
  })

/** A user or assistant message's parts as `effect/ai` text and file parts, in order. */
const messageParts = (
  item: Item.Message,
  index: number
): Result.Result<Array<Prompt.TextPartEncoded | Prompt.FilePartEncoded>, AiError.InvalidRequest> => {
  const parts: Array<Prompt.TextPartEncoded | Prompt.FilePartEncoded> = []
  for (const [position, part] of item.content.entries()) {
    if (!Item.isMediaPart(part)) {
      parts.push({ type: "text", text: part.type === "refusal" ? part.refusal : part.text })
      continue
    }
    const file = EffectAiContent.toFilePart(part, ProviderContent.where(index, item, position, part))
    if (Result.isFailure(file)) return Result.fail(file.failure)
    parts.push(file.success)
  }
  return Result.succeed(parts)
}

/**
 * The `effect/ai` prompt of an agentloop history, the instructions first as a
 * system message. Images and files become file parts of user and assistant
 * messages, and what a tool attached to its output the `modelOutput` of its
 * result (the output's text first); items of an application's own kind
 * (`x-…`) are left out, as providers leave them out. Fails with
 * `InvalidRequest`, naming the part, for an image or a file in a system or
 * developer message or in reasoning (`effect/ai` has room only for text
 * there), or whose data or URL is not one.
 *
 * @example
 * ```ts
 * import { Item } from "@agentloop/core"
 * import * as EffectAiPrompt from "@agentloop/core/effect-ai/EffectAiPrompt"
 * import { Result } from "effect"
 *
 * const messages = EffectAiPrompt.fromHistory([Item.userMessage("Hi"), Item.assistantMessage("Hello!")], "Be brief.")
 * if (Result.isSuccess(messages)) console.log(messages.success.map((message) => message.role)) // [ 'system', 'user', 'assistant' ]
 * ```
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromHistory = (
  history: ReadonlyArray<Item.Item>,
  instructions: string | undefined
): Result.Result<ReadonlyArray<Prompt.MessageEncoded>, AiError.InvalidRequest> => {
  const messages: Array<Prompt.MessageEncoded> = []
  if (instructions !== undefined) messages.push({ role: "system", content: instructions })
  const names = new Map<string, string>()
  for (const [index, item] of history.entries()) {
    switch (item.type) {
      case "message": {
        const at = (position: number, part: Item.MediaPart) => ProviderContent.where(index, item, position, part)
        if (item.role === "system" || item.role === "developer") {
          const text = EffectAiContent.textOnly(item.content, `an effect/ai ${item.role} message`, at)
          if (Result.isFailure(text)) return Result.fail(text.failure)
          messages.push({ role: "system", content: text.success })
          break
        }
        const parts = messageParts(item, index)
        if (Result.isFailure(parts)) return Result.fail(parts.failure)
        messages.push({ role: item.role, content: joinText(parts.success) })
        break
      }
      case "reasoning": {
        const text = EffectAiContent.textOnly(
          item.summary ?? item.content,
          "an effect/ai reasoning part",
          (position, part) => ProviderContent.where(index, item, position, part)
        )
        if (Result.isFailure(text)) return Result.fail(text.failure)
        messages.push({ role: "assistant", content: [{ type: "reasoning", text: text.success }] })
        break
      }
      case "function_call":
        names.set(item.call_id, item.name)
        messages.push({
          role: "assistant",
          content: [{
            type: "tool-call",
            id: item.call_id,
            name: item.name,
            params: Item.argumentsObject(item.arguments)
          }]
        })
        break
      case "function_call_output": {
        const content = item.content ?? []
        const modelOutput = content.length === 0
          ? undefined
          : EffectAiContent.toModelOutput(
            item.output,
            content,
            (position, part) => ProviderContent.where(index, item, position, part)
          )
        if (modelOutput !== undefined && Result.isFailure(modelOutput)) return Result.fail(modelOutput.failure)
        messages.push({
          role: "tool",
          content: [{
            type: "tool-result",
            id: item.call_id,
            name: names.get(item.call_id) ?? "",
            isFailure: item.status !== "completed",
            result: outputValue(item.output),
            ...(modelOutput === undefined ? {} : { modelOutput: modelOutput.success })
          }]
        })
        break
      }
      default:
        break
    }
  }
  return Result.succeed(messages)
}

/** Parts with each run of consecutive text parts joined into one, as one text part was sent before files came. */
const joinText = (
  parts: ReadonlyArray<Prompt.TextPartEncoded | Prompt.FilePartEncoded>
): Array<Prompt.TextPartEncoded | Prompt.FilePartEncoded> => {
  const out: Array<Prompt.TextPartEncoded | Prompt.FilePartEncoded> = []
  for (const part of parts) {
    const last = out[out.length - 1]
    if (part.type === "text" && last?.type === "text") {
      out[out.length - 1] = { type: "text", text: last.text + part.text }
    } else out.push(part)
  }
  return out.length === 0 ? [{ type: "text", text: "" }] : out
}

const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Json))

// The output is JSON text as agentloop writes it; a foreign history may hold plain text.
const outputValue = (output: string): unknown => Option.getOrElse(decodeJson(output), () => output)

/**
 * An `effect/ai` tool choice as agentloop's, and the tools it allows: a choice
 * of several tools (`oneOf`) sends only those.
 *
 * @since 0.2.0
 * @category conversions
 */
export const toToolChoice = (
  choice: "auto" | "none" | "required" | { readonly tool: string } | {
    readonly mode?: "auto" | "required"
    readonly oneOf: ReadonlyArray<string>
  }
): { readonly toolChoice: ToolChoice; readonly allowed: ((name: string) => boolean) | undefined } => {
  if (typeof choice === "string") return { toolChoice: choice, allowed: undefined }
  if ("tool" in choice) return { toolChoice: { name: choice.tool }, allowed: undefined }
  return { toolChoice: choice.mode ?? "auto", allowed: (name) => choice.oneOf.includes(name) }
}

/**
 * agentloop's tool choice as `effect/ai`'s.
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromToolChoice = (
  choice: ToolChoice | undefined
): "auto" | "none" | "required" | { readonly tool: string } =>
  choice === undefined ? "auto" : typeof choice === "string" ? choice : { tool: choice.name }
