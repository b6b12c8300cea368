/**
 * Builds the body of a streaming `POST /responses` request from a history and
 * the turn options.
 *
 * @since 0.1.0
 */
import type { Item, LanguageModel } from "@agentloop/core"
import type { JsonSchema } from "effect"
import * as ResponsesDecoder from "./ResponsesDecoder.ts"
import * as ResponsesStrict from "./ResponsesStrict.ts"

/** Settings of the provider layer that shape every request. */
export interface Settings {
  /** The model when the turn options name none. */
  readonly model: string
  /** Whether OpenAI keeps the response (the API's default when unset is to keep it). */
  readonly store?: boolean | undefined
  /** Continue from a stored response; send only the items after it. */
  readonly previousResponseId?: string | undefined
  /** Reasoning summaries to ask for when a reasoning effort is set. */
  readonly reasoningSummary?: "auto" | "concise" | "detailed" | undefined
}

/** One input item of the request. */
export type InputItem =
  | {
    readonly type: "message"
    readonly role: Item.Role
    readonly phase?: Item.Phase
    readonly content: ReadonlyArray<
      | { readonly type: "input_text"; readonly text: string }
      | { readonly type: "output_text"; readonly text: string; readonly annotations: ReadonlyArray<never> }
      | { readonly type: "refusal"; readonly refusal: string }
    >
  }
  | {
    readonly type: "function_call"
    readonly call_id: string
    readonly name: string
    readonly arguments: string
  }
  | { readonly type: "function_call_output"; readonly call_id: string; readonly output: string }
  | {
    readonly type: "reasoning"
    readonly id: string
    readonly summary: ReadonlyArray<{ readonly type: "summary_text"; readonly text: string }>
    readonly encrypted_content?: string
  }
  /** An output item this layer does not model, sent back as the API sent it. */
  | { readonly [key: string]: unknown }

/** A function tool as the API takes it. */
export interface FunctionTool {
  readonly type: "function"
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema.JsonSchema
  readonly strict: boolean
}

/** The request body. */
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
}

const partText = (part: Item.ContentPart): string => part.type === "refusal" ? part.refusal : part.text

const messageInput = (message: Item.Message): InputItem => ({
  type: "message",
  role: message.role,
  ...(message.phase === undefined ? {} : { phase: message.phase }),
  content: message.role === "assistant"
    ? message.content.map((part) =>
      part.type === "refusal"
        ? part
        : { type: "output_text" as const, text: part.text, annotations: [] }
    )
    : message.content.map((part) => ({ type: "input_text" as const, text: partText(part) }))
})

/**
 * Maps a history to input items, one for one, except: extension items (`x-…`)
 * are the application's and are not sent, unless they are output items this
 * layer kept as extensions (`x-openai.…`, see `ResponsesDecoder`), which go back
 * as the API sent them; and reasoning items are sent only when they came from
 * OpenAI (an `rs_` id), because the API rejects reasoning it did not produce.
 */
export const input = (history: ReadonlyArray<Item.Item>): Array<InputItem> => {
  const out: Array<InputItem> = []
  for (const item of history) {
    switch (item.type) {
      case "message":
        out.push(messageInput(item))
        break
      case "function_call":
        out.push({ type: "function_call", call_id: item.call_id, name: item.name, arguments: item.arguments })
        break
      case "function_call_output":
        out.push({ type: "function_call_output", call_id: item.call_id, output: item.output })
        break
      case "reasoning":
        if (item.id.startsWith("rs_")) {
          out.push({
            type: "reasoning",
            id: item.id,
            summary: (item.summary ?? []).map((part) => ({ type: "summary_text", text: partText(part) })),
            ...(item.encrypted_content === undefined ? {} : { encrypted_content: item.encrypted_content })
          })
        }
        break
      default:
        if (ResponsesDecoder.isOutputExtension(item)) out.push(item.data)
        break
    }
  }
  return out
}

/** A tool definition as a function tool, strict whenever its schema can be made strict (see `ResponsesStrict`). */
export const tool = (definition: LanguageModel.ToolDefinition): FunctionTool => {
  const strict = ResponsesStrict.make(definition.parameters)
  return {
    type: "function",
    name: definition.name,
    description: definition.description,
    parameters: strict.schema,
    strict: strict.strict
  }
}

const outputFormat = (output: LanguageModel.OutputFormat): NonNullable<Body["text"]>["format"] => {
  const strict = ResponsesStrict.make(output.schema)
  return { type: "json_schema", name: output.name, schema: strict.schema, strict: strict.strict }
}

const toolChoice = (choice: LanguageModel.ToolChoice): NonNullable<Body["tool_choice"]> =>
  typeof choice === "string" ? choice : { type: "function", name: choice.name }

/** The whole request body for one streaming turn. */
export const body = (
  history: ReadonlyArray<Item.Item>,
  options: LanguageModel.TurnOptions,
  settings: Settings
): Body => {
  const params = options.params
  const output = options.output
  return {
    model: options.model ?? settings.model,
    input: input(history),
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
    ...(settings.previousResponseId === undefined ? {} : { previous_response_id: settings.previousResponseId })
  }
}
