/**
 * Builds the body of a streaming `POST /responses` request from a history and
 * the turn options.
 *
 * @since 0.1.0
 */
import type { Item, LanguageModel } from "@agentloop/core"
import type { JsonSchema } from "effect"

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
 * are the application's and are not sent, and reasoning items are sent only
 * when they came from OpenAI (an `rs_` id), because the API rejects reasoning
 * it did not produce.
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
        break
    }
  }
  return out
}

// Keywords strict mode rejects (OpenAI answers e.g. "'oneOf' is not permitted"); `Schema.Union(..., { mode: "oneOf" })` emits one.
const unsupportedInStrictMode = [
  "oneOf",
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "dependentRequired",
  "dependentSchemas",
  "patternProperties",
  "propertyNames",
  "unevaluatedProperties",
  "unevaluatedItems",
  "contains"
]

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const valuesOf = (value: unknown): ReadonlyArray<unknown> =>
  Array.isArray(value) ? value : isRecord(value) ? Object.values(value) : []

/** The schemas nested in `schema`, by keyword: property names, `enum` values and defaults are data, not schemas. */
const subschemas = (schema: Readonly<Record<string, unknown>>): ReadonlyArray<unknown> => [
  ...valuesOf(schema.properties),
  ...valuesOf(schema.$defs),
  ...valuesOf(schema.definitions),
  ...valuesOf(schema.anyOf),
  ...valuesOf(schema.prefixItems),
  ...(isRecord(schema.items) ? [schema.items] : valuesOf(schema.items))
]

/**
 * Whether OpenAI's strict mode accepts a JSON Schema: every object closes its
 * properties (`additionalProperties: false`) and requires all of them, and no
 * keyword strict mode rejects is used. Strict mode guarantees the model's JSON
 * matches the schema, so it is used whenever it can be.
 */
export const isStrictCompatible = (schema: unknown): boolean => {
  if (!isRecord(schema)) return true
  if (unsupportedInStrictMode.some((keyword) => keyword in schema)) return false
  const properties = schema.properties
  if (schema.type === "object" || isRecord(properties)) {
    if (schema.additionalProperties !== false) return false
    const keys = isRecord(properties) ? Object.keys(properties) : []
    const required = Array.isArray(schema.required) ? schema.required : []
    if (!keys.every((key) => required.includes(key))) return false
  }
  return subschemas(schema).every(isStrictCompatible)
}

const withoutDialect = (schema: JsonSchema.JsonSchema): JsonSchema.JsonSchema => {
  const { $schema: _, ...rest } = schema
  return rest
}

/** A tool definition as a function tool, strict when its schema allows. */
export const tool = (definition: LanguageModel.ToolDefinition): FunctionTool => ({
  type: "function",
  name: definition.name,
  description: definition.description,
  parameters: withoutDialect(definition.parameters),
  strict: isStrictCompatible(definition.parameters)
})

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
    ...(output === undefined ? {} : {
      text: {
        format: {
          type: "json_schema",
          name: output.name,
          schema: withoutDialect(output.schema),
          strict: isStrictCompatible(output.schema)
        }
      }
    }),
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
