/**
 * An agentloop history and an `effect/ai` prompt, one as the other.
 *
 * Messages map to messages (system and developer messages to system
 * messages, refusals to text), reasoning to reasoning parts, function calls to
 * tool-call parts and their outputs to tool-result parts, matched by call id.
 * Files and images are not carried yet: a prompt with a file part is refused.
 *
 * @since 0.2.0
 */
import { Effect, Option, Schema } from "effect"
import type { Prompt } from "effect/ai"
import * as AiError from "../AiError.ts"
import * as Item from "../Item.ts"
import type { ToolChoice } from "../LanguageModel.ts"

/**
 * The history and instructions of an `effect/ai` prompt: its system messages
 * are the instructions, joined by a blank line; every other message becomes
 * items. Fails with `InvalidRequest` on a file part.
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
      for (const [partIndex, part] of message.content.entries()) {
        const id = `${index}_${partIndex}`
        switch (part.type) {
          case "text":
            history.push(
              message.role === "user"
                ? Item.userMessage(part.text, `msg_${id}`)
                : Item.assistantMessage(part.text, `msg_${id}`)
            )
            break
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
          case "tool-result":
            history.push({
              type: "function_call_output",
              id: `fco_${id}`,
              status: part.isFailure ? "incomplete" : "completed",
              call_id: part.id,
              output: JSON.stringify(part.result ?? null)
            })
            break
          case "file":
            return Effect.fail(
              new AiError.InvalidRequest({
                provider: "effect-ai",
                message: `A ${part.mediaType} file in the prompt: agentloop items do not carry files yet.`
              })
            )
          default:
            // Approval requests and responses are effect/ai's own bookkeeping; the model never sees them.
            break
        }
      }
    }
    return Effect.succeed({ history, instructions: instructions.length === 0 ? undefined : instructions.join("\n\n") })
  })

/**
 * The `effect/ai` prompt of an agentloop history, the instructions first as a
 * system message. Items of an application's own kind (`x-…`) are left out, as
 * providers leave them out.
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromHistory = (
  history: ReadonlyArray<Item.Item>,
  instructions: string | undefined
): ReadonlyArray<Prompt.MessageEncoded> => {
  const messages: Array<Prompt.MessageEncoded> = []
  if (instructions !== undefined) messages.push({ role: "system", content: instructions })
  const names = new Map<string, string>()
  for (const item of history) {
    switch (item.type) {
      case "message": {
        const text = item.content.map((part) => part.type === "refusal" ? part.refusal : Item.partText(part)).join("")
        if (item.role === "system" || item.role === "developer") messages.push({ role: "system", content: text })
        else if (item.role === "user") messages.push({ role: "user", content: [{ type: "text", text }] })
        else messages.push({ role: "assistant", content: [{ type: "text", text }] })
        break
      }
      case "reasoning": {
        const text = (item.summary ?? item.content).map(Item.partText).join("")
        messages.push({ role: "assistant", content: [{ type: "reasoning", text }] })
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
      case "function_call_output":
        messages.push({
          role: "tool",
          content: [{
            type: "tool-result",
            id: item.call_id,
            name: names.get(item.call_id) ?? "",
            isFailure: item.status !== "completed",
            result: outputValue(item.output)
          }]
        })
        break
      default:
        break
    }
  }
  return messages
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
