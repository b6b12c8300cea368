/**
 * Tools: typed functions a model may call.
 *
 * A tool pairs an `input` Schema (decoded from the JSON arguments the model
 * writes, and the source of the JSON Schema the model sees) with an `output`
 * Schema (encoded to the JSON text the model reads back). Running tools, with
 * every failure turned into an answer the model can read, is `Toolkit`'s job.
 *
 * @since 0.1.0
 */
import { Context, Duration, JsonPointer, Predicate, Schema } from "effect"
import type { Effect, JsonSchema, Stream } from "effect"
import type { Halt } from "./Halt.ts"
import type * as Item from "./Item.ts"
import type * as LanguageModel from "./LanguageModel.ts"

/** Marks a value as a {@link Tool}. */
export const TypeId = "~@agentloop/core/Tool" as const

/** A progress event of a streaming tool; a UI can show it, the model never sees it. */
export interface Progress<P> {
  readonly _tag: "Progress"
  readonly value: P
}

/** The result of a streaming tool. The first `Done` ends the tool: nothing after it is pulled. */
export interface Done<O> {
  readonly _tag: "Done"
  readonly value: O
}

/** What a streaming tool emits: any number of {@link Progress} events, then one {@link Done}. */
export type StreamEvent<P, O> = Progress<P> | Done<O>

/** Builds a {@link Progress} event. */
export const progress = <P>(value: P): Progress<P> => ({ _tag: "Progress", value })

/** Builds the {@link Done} event that carries a streaming tool's output. */
export const done = <O>(value: O): Done<O> => ({ _tag: "Done", value })

/**
 * A tool. `execute` returns an `Effect` of the output, or a `Stream` of
 * {@link StreamEvent}s whose `Done` carries the output.
 *
 * `execute` and `needsApproval` are methods so that a tool with a specific
 * input type is still a {@link Any}; `Toolkit` only ever passes them what the
 * tool's own `input` Schema decoded.
 */
export interface Tool<Name extends string, Input, Output, Failure = never, P = never, R = never> {
  readonly [TypeId]: typeof TypeId
  readonly name: Name
  readonly description: string
  readonly input: Schema.Codec<Input, unknown>
  readonly output: Schema.Codec<Output, unknown>
  /** When set, the tool's typed failures are encoded with it and sent to the model as `{"error": <encoded>}`. */
  readonly failure: Schema.Codec<Failure, unknown> | undefined
  /** This tool's own time limit; it wins over the `timeout` option of `Toolkit.executeAllSafe`. */
  readonly timeout: Duration.Duration | undefined
  /** The JSON Schema of the arguments, as sent to the model. */
  readonly parameters: JsonSchema.JsonSchema
  /** Whether running a call again is safe; see the `idempotent` option of {@link make}. */
  readonly idempotent: boolean
  needsApproval(input: Input): boolean
  /** What the model is shown besides the output's JSON (a screenshot, a page); see the `content` option of {@link make}. */
  content(output: Output): ReadonlyArray<Item.ToolContentPart>
  execute(
    input: Input
  ): Effect.Effect<Output, Failure | Halt, R> | Stream.Stream<StreamEvent<P, Output>, Failure | Halt, R>
}

/** Any tool whose `execute` needs the services `R`. */
export interface Any<out R = unknown> {
  readonly [TypeId]: typeof TypeId
  readonly name: string
  readonly description: string
  readonly input: Schema.Codec<unknown, unknown>
  readonly output: Schema.Codec<unknown, unknown>
  readonly failure: Schema.Codec<unknown, unknown> | undefined
  readonly timeout: Duration.Duration | undefined
  readonly parameters: JsonSchema.JsonSchema
  readonly idempotent: boolean
  needsApproval(input: unknown): boolean
  content(output: unknown): ReadonlyArray<Item.ToolContentPart>
  execute(input: unknown): Effect.Effect<unknown, unknown, R> | Stream.Stream<StreamEvent<unknown, unknown>, unknown, R>
}

/** The services a tool's `execute` needs. */
export type Services<T> = T extends Any<infer R> ? R : never

/**
 * Defines a tool.
 *
 * The input Schema must describe a JSON object (a `Schema.Struct` or
 * `Schema.Class`): providers only accept object-typed arguments. Arguments are
 * decoded with `Schema.toCodecJson(input)`, so the model writes the JSON form of
 * a field (an ISO string for a `Schema.Date`); for numbers use `Schema.Finite`
 * or `Schema.Int`, as the JSON form of `Schema.Number` also admits the strings
 * `"NaN"` and `"Infinity"` and the model is told so. Schemas must not need services.
 * `needsApproval` may be a function of the decoded input (ask only for
 * destructive arguments).
 *
 * `idempotent` (default `false`) says that running a call again is safe: the
 * tool only reads, or its writes are deduplicated by the {@link IdempotencyKey}
 * it passes on. A durable engine runs such a call again when a crash cut it
 * short; a call of any other tool is not run again, and the model is told that
 * its outcome is unknown.
 *
 * `content` (new in 0.2.0) shows the model images or files besides the
 * output's JSON: a screenshot the tool took, a page it rendered. They go in
 * the output item's `content` (see `Item.FunctionCallOutput`), which
 * providers that take media in tool results send and the others refuse
 * before sending anything.
 */
export const make = <
  const Name extends string,
  Input,
  Output,
  Failure = never,
  P = never,
  R = never
>(options: {
  readonly name: Name
  readonly description: string
  readonly input: Schema.Codec<Input, { readonly [key: string]: unknown }>
  readonly output: Schema.Codec<Output, unknown>
  readonly failure?: Schema.Codec<Failure, unknown> | undefined
  readonly timeout?: Duration.Input | undefined
  readonly needsApproval?: boolean | ((input: Input) => boolean) | undefined
  readonly idempotent?: boolean | undefined
  readonly content?: ((output: NoInfer<Output>) => ReadonlyArray<Item.ToolContentPart>) | undefined
  readonly execute: (
    input: Input
  ) =>
    | Effect.Effect<NoInfer<Output>, Failure | Halt, R>
    | Stream.Stream<StreamEvent<P, NoInfer<Output>>, Failure | Halt, R>
}): Tool<Name, Input, Output, Failure, P, R> => {
  const approval = options.needsApproval
  const execute = options.execute
  const content = options.content
  return {
    [TypeId]: TypeId,
    name: options.name,
    description: options.description,
    input: options.input,
    output: options.output,
    failure: options.failure,
    timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
    parameters: toParameters(options.input),
    idempotent: options.idempotent ?? false,
    needsApproval: (input) => typeof approval === "function" ? approval(input) : approval === true,
    content: (output) => content === undefined ? [] : content(output),
    execute: (input) => execute(input)
  }
}

/**
 * The key of the call a tool is running, when the engine running it can run
 * it again (a durable run after a crash): the same key every time the same call
 * runs, a different key for every other call. Pass it to a service that
 * deduplicates writes (an `Idempotency-Key` header, a unique column), and
 * declare the tool `idempotent`. `undefined` where calls are never run again.
 */
export const IdempotencyKey: Context.Reference<string | undefined> = Context.Reference<string | undefined>(
  "@agentloop/core/Tool/IdempotencyKey",
  { defaultValue: () => undefined }
)

/** The tool as a model request carries it: name, description and the JSON Schema of its arguments. */
export const definition = (tool: Any<unknown>): LanguageModel.ToolDefinition => ({
  name: tool.name,
  description: tool.description,
  parameters: tool.parameters
})

/**
 * The JSON Schema of a tool's arguments: the draft 2020-12 schema of the
 * Schema's JSON form, with `additionalProperties: false` on every object and
 * named definitions inlined, because OpenAI strict mode and Gemini read
 * self-contained schemas best. Only recursive definitions stay under `$defs`.
 *
 * OpenAI strict mode also wants every property `required`; for a Schema with
 * optional keys the Responses provider makes them required and nullable, and
 * takes the model's `null`s out of the arguments again.
 */
export const toParameters = (schema: Schema.Top): JsonSchema.JsonSchema => {
  const document = Schema.toJsonSchemaDocument(schema, { onExcessProperty: "error" })
  const recursive = new Set<string>()
  const root = inline(document.schema, document.definitions, [], recursive)
  if (recursive.size === 0) return root
  const defs: Record<string, JsonSchema.JsonSchema> = {}
  for (const name of recursive) {
    const target = document.definitions[name]
    if (target !== undefined) defs[name] = inline(target, document.definitions, [name], recursive)
  }
  return { ...root, $defs: defs }
}

const refPrefix = "#/$defs/"

const inline = (
  schema: JsonSchema.JsonSchema,
  definitions: JsonSchema.Definitions,
  visiting: ReadonlyArray<string>,
  recursive: Set<string>
): JsonSchema.JsonSchema => {
  const { $ref, ...rest } = schema
  if (typeof $ref === "string" && $ref.startsWith(refPrefix)) {
    // `$ref` is a JSON pointer: an identifier like "@app/Address" appears in it as "@app~1Address".
    const name = JsonPointer.unescapeToken($ref.slice(refPrefix.length))
    const target = definitions[name]
    if (target !== undefined) {
      if (visiting.includes(name)) {
        recursive.add(name)
        return schema
      }
      return {
        ...inline(target, definitions, [...visiting, name], recursive),
        ...inlineValues(rest, definitions, visiting, recursive)
      }
    }
  }
  return inlineValues(schema, definitions, visiting, recursive)
}

const inlineValues = (
  schema: JsonSchema.JsonSchema,
  definitions: JsonSchema.Definitions,
  visiting: ReadonlyArray<string>,
  recursive: Set<string>
): JsonSchema.JsonSchema => {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    out[key] = inlineUnknown(value, definitions, visiting, recursive)
  }
  return out
}

const inlineUnknown = (
  value: unknown,
  definitions: JsonSchema.Definitions,
  visiting: ReadonlyArray<string>,
  recursive: Set<string>
): unknown => {
  if (Array.isArray(value)) return value.map((item) => inlineUnknown(item, definitions, visiting, recursive))
  if (Predicate.isReadonlyObject(value)) return inline(value, definitions, visiting, recursive)
  return value
}
