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
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as JsonPointer from "effect/JsonPointer"
import type * as JsonSchema from "effect/JsonSchema"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type * as CheckpointVersion from "./CheckpointVersion.ts"
import type { Halt } from "./Halt.ts"
import { sha256Hex } from "./internal/sha256.ts"
import type * as Item from "./Item.ts"
import type * as LanguageModel from "./LanguageModel.ts"
import type * as ToolMemory from "./ToolMemory.ts"

/**
 * Marks a value as a {@link Tool}.
 *
 * @since 0.1.0
 * @category type IDs
 */
export const TypeId = "~@agentloop/core/Tool" as const

/**
 * A progress event of a streaming tool; a UI can show it, the model never sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Progress<P> {
  readonly _tag: "Progress"
  readonly value: P
}

/**
 * The result of a streaming tool. The first `Done` ends the tool: nothing after it is pulled.
 *
 * @since 0.1.0
 * @category models
 */
export interface Done<O> {
  readonly _tag: "Done"
  readonly value: O
}

/**
 * What a streaming tool emits: any number of {@link Progress} events, then one {@link Done}.
 *
 * @since 0.1.0
 * @category models
 */
export type StreamEvent<P, O> = Progress<P> | Done<O>

/**
 * Builds a {@link Progress} event.
 *
 * @example
 * ```ts
 * import { Tool } from "@agentloop/core"
 * import { Effect, Schema, Stream } from "effect"
 *
 * // A streaming tool: progress events for a UI, then `Tool.done(output)`.
 * const download = Tool.make({
 *   name: "download",
 *   description: "Downloads a URL",
 *   input: Schema.Struct({ url: Schema.String }),
 *   output: Schema.Struct({ bytes: Schema.Finite }),
 *   execute: () => Stream.make(Tool.progress("50%"), Tool.progress("100%"), Tool.done({ bytes: 2048 }))
 * })
 *
 * const events = download.execute({ url: "https://example.com/file" })
 * if (Stream.isStream(events)) Effect.runPromise(Stream.runCollect(events)).then((all) => console.log(all.length)) // 3
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const progress = <P>(value: P): Progress<P> => ({ _tag: "Progress", value })

/**
 * Builds the {@link Done} event that carries a streaming tool's output.
 *
 * @since 0.1.0
 * @category constructors
 */
export const done = <O>(value: O): Done<O> => ({ _tag: "Done", value })

/**
 * Item schemas a tool contributes, as the seed's `itemSchemas`: gates, never
 * normalizers (an item that passes one is kept as it is). Each list is checked
 * against this tool's own items only.
 *
 * @since 0.2.0
 * @category models
 */
export interface ItemSchemas {
  /** A call of this tool must satisfy one of these; one that does not is answered as invalid arguments, and not run. */
  readonly toolCalls?: ReadonlyArray<Schema.Top> | undefined
  /**
   * This tool's result item (after `decorateResultItem`, for every outcome,
   * failures included) must satisfy one of these; one that does not ends the
   * call as a defect, with the plain result item.
   */
  readonly toolResults?: ReadonlyArray<Schema.Top> | undefined
}

/**
 * What a tool's `decorateResultItem` is given: the result item the runtime
 * made (`baseItem`), the call, the decoded arguments (`undefined` when they
 * did not decode), the tool's output (`undefined` unless the call succeeded),
 * the text the model reads, and whether the call failed.
 *
 * @since 0.2.0
 * @category models
 */
export interface DecorateParams<Input, Output> {
  readonly baseItem: Item.FunctionCallOutput
  readonly callItem: Item.FunctionCall
  readonly args: Input | undefined
  readonly result: Output | undefined
  readonly output: string
  readonly error: boolean
}

/**
 * A tool. `execute` returns an `Effect` of the output, or a `Stream` of
 * {@link StreamEvent}s whose `Done` carries the output.
 *
 * `execute` and `needsApproval` are methods so that a tool with a specific
 * input type is still a {@link Any}; `Toolkit` only ever passes them what the
 * tool's own `input` Schema decoded.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tool<Name extends string, Input, Output, Failure = never, P = never, R = never> {
  readonly [TypeId]: typeof TypeId
  readonly name: Name
  readonly description: string
  readonly input: Schema.Codec<Input, unknown>
  readonly output: Schema.Codec<Output, unknown>
  /** The version of `output` and how recorded outputs of older versions reach it; see the `outputVersioning` option of {@link make}. */
  readonly outputVersioning: CheckpointVersion.Versioning | undefined
  /** When set, the tool's typed failures are encoded with it and sent to the model as `{"error": <encoded>}`. */
  readonly failure: Schema.Codec<Failure, unknown> | undefined
  /** This tool's own time limit; it wins over the `timeout` option of `Toolkit.executeAllSafe`. */
  readonly timeout: Duration.Duration | undefined
  /** The JSON Schema of the arguments, as sent to the model. */
  readonly parameters: JsonSchema.JsonSchema
  /** Whether running a call again is safe (a recorded run runs such a call again after a crash); see the `idempotent` option of {@link make}. */
  readonly idempotent: boolean
  /** The schemas this tool's call and result items must satisfy; see {@link ItemSchemas}. */
  readonly itemSchemas: ItemSchemas | undefined
  /** This tool's memory, when it has one; see the `ToolMemory` module. */
  readonly memory: ToolMemory.Declaration | undefined
  needsApproval(input: Input): boolean
  /** What the model is shown besides the output's JSON (a screenshot, a page); see the `content` option of {@link make}. */
  content(output: Output): ReadonlyArray<Item.ToolContentPart>
  execute(
    input: Input
  ): Effect.Effect<Output, Failure | Halt, R> | Stream.Stream<StreamEvent<P, Output>, Failure | Halt, R>
  /** Makes the result item of a call: the runtime's `baseItem`, as it is when the tool has no `decorateResultItem`. */
  resultItem(params: DecorateParams<Input, Output>): Item.FunctionCallOutput
}

/**
 * Any tool whose `execute` needs the services `R`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any<out R = unknown> {
  readonly [TypeId]: typeof TypeId
  readonly name: string
  readonly description: string
  readonly input: Schema.Codec<unknown, unknown>
  readonly output: Schema.Codec<unknown, unknown>
  readonly outputVersioning: CheckpointVersion.Versioning | undefined
  readonly failure: Schema.Codec<unknown, unknown> | undefined
  readonly timeout: Duration.Duration | undefined
  readonly parameters: JsonSchema.JsonSchema
  readonly idempotent: boolean
  readonly itemSchemas: ItemSchemas | undefined
  readonly memory: ToolMemory.Declaration | undefined
  needsApproval(input: unknown): boolean
  content(output: unknown): ReadonlyArray<Item.ToolContentPart>
  execute(input: unknown): Effect.Effect<unknown, unknown, R> | Stream.Stream<StreamEvent<unknown, unknown>, unknown, R>
  resultItem(params: DecorateParams<unknown, unknown>): Item.FunctionCallOutput
}

/**
 * The services a tool's `execute` needs.
 *
 * @since 0.1.0
 * @category models
 */
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
 * it passes on. It matters to recorded runs (an `AgentLoop` run with a
 * `runId` and a `Checkpointer`, a step program executed with an `id` and a
 * `Checkpointer`, a run of `@agentloop/durable`), which record that a call
 * of a tool that is not idempotent starts (after its approval) before it
 * runs: when a crash or an interruption cuts such a call short, the resumed
 * run does not run it again, and the model is told that its outcome is
 * unknown (`Toolkit.outcomeUnknown`; a step program's `tool` step fails with
 * `StepFailed` instead). A call of an idempotent tool cut short runs again,
 * with the same `IdempotencyKey`, and its start costs no record. A run
 * without a record (no `runId`, no `Checkpointer`) never runs a call again.
 *
 * `content` (new in 0.2.0) shows the model images or files besides the
 * output's JSON: a screenshot the tool took, a page it rendered. They go in
 * the output item's `content` (see `Item.FunctionCallOutput`), which
 * providers that take media in tool results send and the others refuse
 * before sending anything.
 *
 * The seed's extensions: `decorateResultItem` makes the result item of each
 * call from the runtime's (fields of its own added to it: a card for a UI,
 * say; it must stay the call's `function_call_output`), `itemSchemas` are the
 * gates this tool's items must pass (see {@link ItemSchemas}), and `memory`
 * declares a state of the tool's own (see the `ToolMemory` module; its `id`
 * is the tool's name unless given).
 *
 * `outputVersioning` (new in 0.2.0) is for a tool whose output schema
 * changed while runs that recorded its outputs may still resume: its
 * `version` is recorded with each output (none: version 1, as every output
 * recorded before), and its `migrations` bring an output recorded at another
 * version to it when a run resumes (see the `CheckpointVersion` module). The
 * model's history keeps the output as the model read it.
 *
 * @example
 * ```ts
 * import { Item, Tool, Toolkit } from "@agentloop/core"
 * import { Effect, Schema } from "effect"
 *
 * const getWeather = Tool.make({
 *   name: "get_weather",
 *   description: "Current weather for a city",
 *   input: Schema.Struct({ city: Schema.String.annotate({ description: "City name, e.g. Paris" }) }),
 *   output: Schema.Struct({ celsius: Schema.Finite }),
 *   timeout: "10 seconds",
 *   execute: ({ city }) => Effect.succeed({ celsius: city === "Paris" ? 21 : 15 })
 * })
 *
 * console.log(Tool.definition(getWeather).name) // get_weather
 *
 * const call: Item.FunctionCall = {
 *   type: "function_call",
 *   id: "fc_1",
 *   status: "completed",
 *   call_id: "c1",
 *   name: "get_weather",
 *   arguments: "{\"city\":\"Paris\"}"
 * }
 * Effect.runPromise(Toolkit.executeAllSafe(Toolkit.make(getWeather), [call])).then(([result]) =>
 *   console.log(result?.output.output) // {"celsius":21}
 * )
 * ```
 *
 * @since 0.1.0
 * @category constructors
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
  readonly outputVersioning?: CheckpointVersion.Versioning | undefined
  readonly failure?: Schema.Codec<Failure, unknown> | undefined
  readonly timeout?: Duration.Input | undefined
  readonly needsApproval?: boolean | ((input: Input) => boolean) | undefined
  readonly idempotent?: boolean | undefined
  readonly content?: ((output: NoInfer<Output>) => ReadonlyArray<Item.ToolContentPart>) | undefined
  readonly itemSchemas?: ItemSchemas | undefined
  readonly decorateResultItem?:
    | ((params: DecorateParams<NoInfer<Input>, NoInfer<Output>>) => Item.FunctionCallOutput)
    | undefined
  readonly memory?: Omit<ToolMemory.Declaration, "id"> & { readonly id?: string | undefined } | undefined
  readonly execute: (
    input: Input
  ) =>
    | Effect.Effect<NoInfer<Output>, Failure | Halt, R>
    | Stream.Stream<StreamEvent<P, NoInfer<Output>>, Failure | Halt, R>
}): Tool<Name, Input, Output, Failure, P, R> => {
  const approval = options.needsApproval
  const execute = options.execute
  const content = options.content
  const decorate = options.decorateResultItem
  const memory = options.memory
  return {
    [TypeId]: TypeId,
    name: options.name,
    description: options.description,
    input: options.input,
    output: options.output,
    outputVersioning: options.outputVersioning,
    failure: options.failure,
    timeout: options.timeout === undefined ? undefined : Duration.fromInputUnsafe(options.timeout),
    parameters: toParameters(options.input),
    idempotent: options.idempotent ?? false,
    itemSchemas: options.itemSchemas,
    memory: memory === undefined
      ? undefined
      : { id: memory.id ?? options.name, init: () => memory.init(), recall: (state) => memory.recall(state) },
    needsApproval: (input) => typeof approval === "function" ? approval(input) : approval === true,
    content: (output) => content === undefined ? [] : content(output),
    execute: (input) => execute(input),
    resultItem: (params) => decorate === undefined ? params.baseItem : decorate(params)
  }
}

/**
 * The result item of a call of `tool`: `params.baseItem` as the tool's
 * `decorateResultItem` makes it, checked against the tool's
 * `itemSchemas.toolResults`. Fails with the reason, to tell the model, when
 * the decoration throws, is not the call's `function_call_output`, or passes
 * none of the schemas.
 *
 * @since 0.2.0
 * @category items
 */
export const checkedResultItem = (
  tool: Any<unknown>,
  params: DecorateParams<unknown, unknown>
): Result.Result<Item.FunctionCallOutput, string> => {
  let item: Item.FunctionCallOutput
  try {
    item = tool.resultItem(params)
  } catch (error) {
    return Result.fail(
      `Tool "${tool.name}" could not make its result item: ${error instanceof Error ? error.message : String(error)}`
    )
  }
  if (!Predicate.isObject(item) || item.type !== "function_call_output" || item.call_id !== params.callItem.call_id) {
    return Result.fail(`Tool "${tool.name}" made a result item that is not the function_call_output of its call`)
  }
  const gates = tool.itemSchemas?.toolResults
  if (gates !== undefined && !gates.some((schema) => Schema.is(schema)(item))) {
    return Result.fail(`Tool "${tool.name}" made a result item that matches none of its itemSchemas.toolResults`)
  }
  return Result.succeed(item)
}

/**
 * Whether a call item of `tool` passes the tool's `itemSchemas.toolCalls`
 * (every call does when the tool has none).
 *
 * @since 0.2.0
 * @category items
 */
export const acceptsCall = (tool: Any<unknown>, call: Item.FunctionCall): boolean => {
  const gates = tool.itemSchemas?.toolCalls
  return gates === undefined || gates.some((schema) => Schema.is(schema)(call))
}

/**
 * The key of the call a tool is running, in a recorded run that can run it
 * again after a crash: an `AgentLoop` run with a `runId` and a
 * `Checkpointer` (the key derives from the run id and the call's place: its
 * turn and its position in it), a step program executed with an `id` and a
 * `Checkpointer` (its `llm` steps' calls and its `tool` steps), and a run of
 * `@agentloop/durable`. The same key every time the same call of the same
 * run runs, a different key for every other call: 32 hex digits. Pass it to
 * a service that deduplicates writes (an `Idempotency-Key` header, a unique
 * column), and declare the tool `idempotent`. `undefined` where calls are
 * never run again (a run without a record, `Toolkit.executeAllSafe` called
 * directly).
 *
 * @example
 * ```ts
 * import { Tool } from "@agentloop/core"
 * import { Effect, Schema } from "effect"
 *
 * // Safe to run again: the payment service charges once per key.
 * const charge = Tool.make({
 *   name: "charge",
 *   description: "Charges the card",
 *   input: Schema.Struct({ cents: Schema.Int }),
 *   output: Schema.String,
 *   idempotent: true,
 *   execute: ({ cents }) =>
 *     Effect.map(Tool.IdempotencyKey, (key) => `charged ${cents} (Idempotency-Key: ${key ?? "none"})`)
 * })
 *
 * const once = charge.execute({ cents: 500 })
 * if (Effect.isEffect(once)) {
 *   Effect.runPromise(Effect.provideService(once, Tool.IdempotencyKey, "5f0c")).then(console.log)
 *   // charged 500 (Idempotency-Key: 5f0c)
 * }
 * ```
 *
 * @since 0.1.0
 * @category services
 */
export const IdempotencyKey: Context.Reference<string | undefined> = Context.Reference<string | undefined>(
  "@agentloop/core/Tool/IdempotencyKey",
  { defaultValue: () => undefined }
)

/**
 * The {@link IdempotencyKey} of call `call` (its place in the run, as the
 * run names it) of the recorded run `run`: the first 32 hex digits of the
 * SHA-256 of both (UTF-8), the same each time the same call of the same run
 * runs. Every recorded run derives its calls' keys with it: an `AgentLoop`
 * run's, a step program's, a durable run's (keyed by its execution id).
 *
 * @example
 * ```ts
 * import { Tool } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // The key of the first call of turn 1 of run "order-7": the same every time that call runs.
 * const program = Effect.gen(function*() {
 *   const key = yield* Tool.idempotencyKey("order-7", "tool/1/0")
 *   console.log(key.length, key === (yield* Tool.idempotencyKey("order-7", "tool/1/0"))) // 32 true
 * })
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.3.0
 * @category services
 */
export const idempotencyKey = (run: string, call: string): Effect.Effect<string> => sha256Hex(`${run}-${call}`)

/**
 * The tool as a model request carries it: name, description and the JSON Schema of its arguments.
 *
 * @since 0.1.0
 * @category getters
 */
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
 *
 * @since 0.1.0
 * @category conversions
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
