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
 * Gemini rejects anything but an object. Thought signatures kept in reasoning
 * items (see `GeminiTurn`) go back on the part they came with. Reasoning items
 * another provider made are left out: their content is not Gemini's to read.
 *
 * @since 0.1.0
 */
import { AiError, Item } from "@agentloop/core"
import type { LanguageModel } from "@agentloop/core"
import { Effect, Predicate, Result, Schema } from "effect"
import * as GeminiTurn from "./GeminiTurn.ts"
import * as GeminiWire from "./GeminiWire.ts"

const provider = "gemini"

const decodeJsonObject = Schema.decodeUnknownResult(Schema.fromJsonString(GeminiWire.JsonObject))

// Some providers send an empty string for a call without arguments; `Toolkit` reads it as `{}` too.
const decodeArguments = (text: string) => text.trim() === "" ? Result.succeed({}) : decodeJsonObject(text)
const decodeJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))

/** Request settings that come from the layer rather than from the turn. */
export interface Settings {
  /** Sent as `generationConfig.thinkingConfig`; `reasoningEffort` in the turn's params overrides its level. */
  readonly thinkingConfig?: GeminiWire.ThinkingConfig | undefined
  /** The model the request goes to: Gemini 1.x and 2.x take a thinking budget where later models take a level. */
  readonly model?: string | undefined
}

/** The `response` object of a function result: the output if it is a JSON object, else `{ output }`. */
export const functionResponse = (output: string): { readonly [key: string]: unknown } => {
  const parsed = decodeJson(output)
  if (Result.isFailure(parsed)) return { output }
  return Predicate.isReadonlyObject(parsed.success) ? parsed.success : { output: parsed.success }
}

const invalid = (message: string) => new AiError.InvalidRequest({ provider, message })

class ContentsBuilder {
  readonly contents: Array<{ role: GeminiWire.Role; parts: Array<GeminiWire.Part> }> = []
  private signature: string | undefined = undefined

  push(role: GeminiWire.Role, part: GeminiWire.Part): void {
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

const partsOf = (message: Item.Message): Array<GeminiWire.Part> =>
  message.content.map((part) => ({ text: part.type === "refusal" ? part.refusal : part.text }))

/**
 * Builds the request body. Fails with `AiError.InvalidRequest` when the history
 * cannot be expressed for Gemini: a call whose arguments are not a JSON object
 * (empty arguments are read as `{}`), or a result whose call is not in the history.
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
  const system: Array<GeminiWire.Part> = options.instructions === undefined ? [] : [{ text: options.instructions }]
  const builder = new ContentsBuilder()
  for (const item of history) {
    switch (item.type) {
      case "message": {
        if (item.role === "system" || item.role === "developer") {
          system.push(...partsOf(item))
        } else {
          const role = item.role === "assistant" ? "model" : "user"
          for (const part of partsOf(item)) builder.push(role, part)
        }
        break
      }
      case "function_call": {
        const args = decodeArguments(item.arguments)
        if (Result.isFailure(args)) {
          return yield* invalid(`function_call ${item.call_id} (${item.name}): arguments are not a JSON object`)
        }
        builder.push("model", {
          functionCall: {
            ...(GeminiTurn.isSynthesizedCallId(item.call_id) ? {} : { id: item.call_id }),
            name: item.name,
            args: args.success
          }
        })
        break
      }
      case "function_call_output": {
        const name = callNames.get(item.call_id)
        if (name === undefined) {
          return yield* invalid(`function_call_output ${item.call_id}: no function_call with this call_id in the history`)
        }
        builder.push("user", {
          functionResponse: {
            ...(GeminiTurn.isSynthesizedCallId(item.call_id) ? {} : { id: item.call_id }),
            name,
            response: functionResponse(item.output)
          }
        })
        break
      }
      case "reasoning": {
        if (!item.id.startsWith(GeminiTurn.itemIdPrefix)) break
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
  const body: GeminiWire.GenerateContentRequest = {
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
    ...(options.toolChoice === undefined ? {} : { toolConfig: toolConfigOf(options.toolChoice) }),
    ...(generationConfig === undefined ? {} : { generationConfig })
  }
  return body
})

const toolConfigOf = (choice: LanguageModel.ToolChoice): GeminiWire.ToolConfig => {
  if (choice === "auto") return { functionCallingConfig: { mode: "AUTO" } }
  if (choice === "none") return { functionCallingConfig: { mode: "NONE" } }
  if (choice === "required") return { functionCallingConfig: { mode: "ANY" } }
  return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [choice.name] } }
}

const generationConfigOf = (
  options: LanguageModel.TurnOptions,
  settings: Settings
): GeminiWire.GenerationConfig | undefined => {
  const params = options.params ?? {}
  const thinkingConfig = thinkingConfigOf(params.reasoningEffort, settings.thinkingConfig, settings.model)
  const config: GeminiWire.GenerationConfig = {
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
  configured: GeminiWire.ThinkingConfig | undefined,
  model: string | undefined
): GeminiWire.ThinkingConfig | undefined => {
  if (effort === undefined && configured === undefined) return undefined
  const base: GeminiWire.ThinkingConfig = { includeThoughts: true, ...configured }
  if (effort === undefined) return base
  // Gemini rejects a request that sets both a level and a budget.
  const { thinkingBudget: _budget, thinkingLevel: _level, ...rest } = base
  return takesThinkingBudget(model) ? { ...rest, thinkingBudget: thinkingBudgets[effort] } : { ...rest, thinkingLevel: effort }
}
