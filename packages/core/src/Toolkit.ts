/**
 * Toolkits: a set of tools, the definitions a model request carries, and the
 * safe execution of the function calls a model makes.
 *
 * `executeAllSafe` never fails. Every way a call can go wrong (an unknown tool,
 * arguments that are not JSON or do not decode, a tool failure, a defect, a
 * timeout, a denied approval) becomes a `function_call_output` whose JSON text
 * tells the model the real reason, plus an `outcome` the agent loop counts
 * mistakes from.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Res from "effect/Result"
import * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import * as Stream from "effect/Stream"
import * as Approval from "./Approval.ts"
import { Halt } from "./Halt.ts"
import { detached } from "./internal/detached.ts"
import type * as Item from "./Item.ts"
import type * as LanguageModel from "./LanguageModel.ts"
import * as Telemetry from "./Telemetry.ts"
import * as Tool from "./Tool.ts"
import * as ToolOutcome from "./ToolOutcome.ts"

/**
 * Marks a value as a {@link Toolkit}.
 *
 * @since 0.1.0
 * @category type IDs
 */
export const TypeId = "~@agentloop/core/Toolkit" as const

/**
 * A set of tools with unique names; `R` is what their `execute` functions need.
 *
 * @since 0.1.0
 * @category models
 */
export interface Toolkit<out R = never> {
  readonly [TypeId]: typeof TypeId
  readonly tools: ReadonlyArray<Tool.Any<R>>
  readonly byName: ReadonlyMap<string, Tool.Any<R>>
}

/**
 * Builds a toolkit. Throws when two tools share a name: the model could not
 * tell them apart, and providers reject such requests.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const Tools extends ReadonlyArray<Tool.Any>>(
  ...tools: Tools
): Toolkit<Tool.Services<Tools[number]>> => {
  // Each tool's execute needs at most its own services; the union of them is `Services<Tools[number]>`.
  const typed = tools as ReadonlyArray<Tool.Any<Tool.Services<Tools[number]>>>
  const byName = new Map<string, Tool.Any<Tool.Services<Tools[number]>>>()
  for (const tool of typed) {
    if (byName.has(tool.name)) throw new Error(`Toolkit.make: two tools are named "${tool.name}"`)
    byName.set(tool.name, tool)
  }
  return { [TypeId]: TypeId, tools: typed, byName }
}

/**
 * The tool definitions to send with a model request, in the toolkit's order.
 *
 * @since 0.1.0
 * @category getters
 */
export const definitions = (toolkit: Toolkit<unknown>): ReadonlyArray<LanguageModel.ToolDefinition> =>
  toolkit.tools.map(Tool.definition)

/**
 * How a call ended: see `ToolOutcome`.
 *
 * @since 0.1.0
 * @category models
 */
export const Outcome = ToolOutcome.Outcome
export type Outcome = ToolOutcome.Outcome

/**
 * A call that ran to its output. `output.output` is the JSON text of the
 * output encoded with the tool's `output` Schema; `value` is the output itself.
 *
 * @since 0.1.0
 * @category models
 */
export interface Success {
  readonly outcome: "success"
  readonly call: Item.FunctionCall
  readonly output: Item.FunctionCallOutput
  readonly value: unknown
}

/**
 * A call that did not produce an output. `output.output` is `{"error": …}` JSON
 * carrying `reason` (or, for a tool with a `failure` Schema, its encoded error).
 *
 * @since 0.1.0
 * @category models
 */
export interface Mistake {
  readonly outcome: Exclude<Outcome, "success">
  readonly call: Item.FunctionCall
  readonly output: Item.FunctionCallOutput
  readonly reason: string
}

/**
 * The result of one call.
 *
 * @since 0.1.0
 * @category models
 */
export type Result = Success | Mistake

/**
 * Whether the call is a mistake (anything but a success).
 *
 * @since 0.1.0
 * @category guards
 */
export const isMistake = (result: Result): result is Mistake => result.outcome !== "success"

/**
 * The output items of the results, in order: what to append to the history.
 *
 * @since 0.1.0
 * @category getters
 */
export const outputs = (results: ReadonlyArray<Result>): ReadonlyArray<Item.FunctionCallOutput> =>
  results.map((result) => result.output)

/**
 * A progress event of a streaming tool, tagged with the call that emitted it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ProgressEvent {
  readonly index: number
  readonly call: Item.FunctionCall
  readonly value: unknown
}

/**
 * Options of {@link executeAllSafe} and {@link streamAll}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** How many calls run at once (default 4). */
  readonly concurrency?: number | undefined
  /**
   * The time limit of each call (default {@link defaultTimeout}; `Duration.infinity`
   * for none). A tool's own `timeout` wins. Approval waits do not count. At the
   * limit the call ends at once, and its tool is interrupted: one whose body
   * cannot be interrupted (an uninterruptible region, a blocking call) runs on
   * to its end on its own, and what it returns is dropped.
   */
  readonly timeout?: Duration.Input | undefined
  /** Called with every progress event of a streaming tool, in the order that tool emitted them. */
  readonly onProgress?: ((event: ProgressEvent) => Effect.Effect<void>) | undefined
}

const defaultConcurrency = 4

/**
 * The time limit of a call when neither the tool nor the caller sets one: five
 * minutes. A tool that never returns is stopped, and the model is told so.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultTimeout: Duration.Duration = Duration.minutes(5)

/**
 * Runs the calls and returns one result per call, in call order, whatever order
 * they finish in. Never fails; interrupting it interrupts the running tools
 * and returns without waiting for them to stop.
 *
 * The output item of call `c` has id `fco_<c.call_id>` and status `"completed"`
 * on success, `"incomplete"` otherwise (the `outcome` says why; `"failed"` is
 * avoided because the Responses API does not accept it on input items).
 *
 * @example
 * ```ts
 * import { Item, Tool, Toolkit } from "@agentloop/core"
 * import { Effect, Schema } from "effect"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   output: Schema.Finite,
 *   execute: ({ a, b }) => Effect.succeed(a + b)
 * })
 * const toolkit = Toolkit.make(add)
 *
 * const call = (id: string, name: string, args: string): Item.FunctionCall => ({
 *   type: "function_call",
 *   id: `fc_${id}`,
 *   status: "completed",
 *   call_id: id,
 *   name,
 *   arguments: args
 * })
 *
 * const program = Effect.gen(function*() {
 *   // Nothing here fails: every mistake becomes an output the model reads.
 *   const results = yield* Toolkit.executeAllSafe(toolkit, [
 *     call("1", "add", "{\"a\":2,\"b\":3}"),
 *     call("2", "add", "{\"a\":\"two\"}"),
 *     call("3", "sub", "{}")
 *   ])
 *   console.log(results.map((result) => result.outcome)) // [ 'success', 'invalid_arguments', 'unknown_tool' ]
 *   console.log(results.filter(Toolkit.isMistake).length) // 2
 *   console.log(Toolkit.outputs(results).length) // 3 function_call_output items
 * })
 *
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.1.0
 * @category execution
 */
export const executeAllSafe: <R>(
  toolkit: Toolkit<R>,
  calls: Iterable<Item.FunctionCall>,
  options?: Options
) => Effect.Effect<ReadonlyArray<Result>, never, R> = Effect.fn("Toolkit.executeAllSafe")(function*<R>(
  toolkit: Toolkit<R>,
  calls: Iterable<Item.FunctionCall>,
  options?: Options
) {
  return yield* Effect.forEach(
    calls,
    (call, index) => executeOne(toolkit, call, index, options),
    { concurrency: options?.concurrency ?? defaultConcurrency }
  )
})

/**
 * Whether running `call` would wait for the `Approval` service: its tool exists,
 * its arguments decode, and the tool's `needsApproval` says so for them.
 * Exactly the calls {@link executeAllSafe} asks about (a call that cannot get
 * that far is a mistake, not a question), for engines that wait for decisions
 * before running calls.
 *
 * @since 0.1.0
 * @category predicates
 */
export const needsApproval = <R>(toolkit: Toolkit<R> | undefined, call: Item.FunctionCall): boolean => {
  const tool = toolkit?.byName.get(call.name)
  if (tool === undefined) return false
  const json = parseJson(call.arguments)
  if (json._tag === "Invalid") return false
  const decoded = Schema.decodeUnknownExit(Schema.toCodecJson(tool.input))(json.value)
  if (Exit.isFailure(decoded)) return false
  try {
    return tool.needsApproval(decoded.value)
  } catch {
    // executeAllSafe turns a throwing needsApproval into a defect the model reads: nothing to wait for.
    return false
  }
}

/**
 * What {@link streamAll} emits: progress while calls run, and each result as soon as its call ends.
 *
 * @since 0.1.0
 * @category models
 */
export type Event =
  | { readonly _tag: "Progress"; readonly index: number; readonly call: Item.FunctionCall; readonly value: unknown }
  | { readonly _tag: "Result"; readonly index: number; readonly result: Result }

/**
 * The options of {@link streamAll}, for an engine that records its calls:
 * `E` and `R` are those of its hooks.
 *
 * @since 0.2.0
 * @category models
 */
export interface StreamOptions<E, R> extends Omit<Options, "onProgress"> {
  /**
   * Runs as soon as a call ends, before its result is emitted and whether or
   * not anyone pulls it, and is not interrupted once started (to record the
   * result durably); its failure fails the stream.
   */
  readonly onResult?: ((index: number, result: Result) => Effect.Effect<void, E, R>) | undefined
  /**
   * Runs when a call is about to run its tool (its arguments decoded, its
   * approval given, if it needed one), right before the tool's `execute`, to
   * record that it started; its failure fails the stream, and the tool does
   * not run. A call that ends before (an unknown tool, invalid arguments, a
   * denial) never starts.
   */
  readonly onStart?: ((index: number, tool: Tool.Any<unknown>) => Effect.Effect<void, E, R>) | undefined
  /**
   * The `Tool.IdempotencyKey` call `index` runs with: the same every time the
   * same call runs (none: the tools see `undefined`).
   */
  readonly idempotencyKey?: ((index: number) => Effect.Effect<string>) | undefined
}

/**
 * Like {@link executeAllSafe}, as a stream for a UI: progress events, and each
 * result as its call ends (so in completion order; `index` is the call's
 * position). Ending the stream early interrupts the running tools. The hooks
 * of {@link StreamOptions} let an engine record each call as it starts and
 * as it ends.
 *
 * @since 0.1.0
 * @category execution
 */
export const streamAll = <R, E = never, R2 = never>(
  toolkit: Toolkit<R>,
  calls: Iterable<Item.FunctionCall>,
  options?: StreamOptions<E, R2>
): Stream.Stream<Event, E, R | R2> =>
  Stream.callback<Event, E, R | R2>((queue) => {
    const emit = (event: Event) => Effect.asVoid(Queue.offer(queue, event))
    const onResult = options?.onResult
    const list = Array.from(calls)
    const one = (call: Item.FunctionCall, index: number) => {
      const executed = executeOne(toolkit, call, index, {
        ...options,
        onProgress: (event) => emit({ _tag: "Progress", ...event })
      })
      // Once a call has ended, its result is recorded even if the stream is being interrupted.
      const recorded = onResult === undefined ?
        executed :
        Effect.uninterruptibleMask((restore) => Effect.tap(restore(executed), (result) => onResult(index, result)))
      return Effect.flatMap(recorded, (result) => emit({ _tag: "Result", index, result }))
    }
    // A single call (the common turn) runs in this fiber, as it is: no fiber forked for it, no loop over one call.
    const all = list.length === 1
      ? one(list[0]!, 0)
      : Effect.forEach(list, one, { concurrency: options?.concurrency ?? defaultConcurrency, discard: true })
    return Effect.andThen(all, Queue.end(queue))
  })

/** A tool's input decoder and output encoder, made once per tool rather than once per call. */
interface Codecs {
  readonly decodeInput: (
    input: unknown,
    options?: SchemaAST.ParseOptions
  ) => Effect.Effect<unknown, Schema.SchemaError>
  readonly encodeOutput: (output: unknown) => Effect.Effect<unknown, Schema.SchemaError>
}

const codecs = new WeakMap<Tool.Any<unknown>, Codecs>()

const codecsOf = <R>(tool: Tool.Any<R>): Codecs => {
  let found = codecs.get(tool)
  if (found === undefined) {
    found = {
      decodeInput: Schema.decodeUnknownEffect(Schema.toCodecJson(tool.input)),
      encodeOutput: Schema.encodeUnknownEffect(Schema.toCodecJson(tool.output))
    }
    codecs.set(tool, found)
  }
  return found
}

const executeOne = <R, E = never, R2 = never>(
  toolkit: Toolkit<R>,
  call: Item.FunctionCall,
  index: number,
  options: Options & Omit<StreamOptions<E, R2>, "onResult"> | undefined
): Effect.Effect<Result, E, R | R2> => {
  const tool = toolkit.byName.get(call.name)
  /** The call's arguments, once they decoded: what the tool's `decorateResultItem` is given. */
  let args: unknown = undefined
  /** Why recording the call's start failed: the stream's failure, not a mistake the model reads. */
  let notStarted: Cause.Cause<E> | undefined = undefined
  const attempt = Effect.gen(function*() {
    if (tool === undefined) return mistake(call, "unknown_tool", unknownToolReason(toolkit, call.name))
    if (!Tool.acceptsCall(tool, call)) {
      return mistake(
        call,
        "invalid_arguments",
        `The call of tool "${tool.name}" does not match the tool's item schemas (itemSchemas.toolCalls).`
      )
    }

    const json = parseJson(call.arguments)
    if (json._tag === "Invalid") {
      return mistake(
        call,
        "invalid_arguments",
        `The arguments of tool "${tool.name}" are not valid JSON (${json.message}). Send one JSON object.`
      )
    }
    const decoded = yield* Effect.exit(codecsOf(tool).decodeInput(json.value, { errors: "all" }))
    if (Exit.isFailure(decoded)) {
      return mistake(
        call,
        "invalid_arguments",
        `The arguments of tool "${tool.name}" do not match its parameters: ${causeMessage(decoded.cause)}`
      )
    }
    const input = decoded.value
    args = input

    if (tool.needsApproval(input)) {
      const approval = yield* Approval.Approval
      const decision = yield* Effect.exit(approval.decide({ tool: tool.name, call, input }))
      if (Exit.isFailure(decision)) {
        return mistake(call, "denied", `The approval of tool "${tool.name}" failed: ${causeMessage(decision.cause)}`)
      }
      if (decision.value._tag === "Denied") return mistake(call, "denied", decision.value.reason)
    }

    const onStart = options?.onStart
    if (onStart !== undefined) {
      const started = yield* Effect.exit(onStart(index, tool))
      if (Exit.isFailure(started)) {
        notStarted = started.cause
        return yield* Effect.failCause(started.cause)
      }
    }
    const idempotencyKey = options?.idempotencyKey
    const execute = run(tool, call, index, input, options?.onProgress)
    const limit = tool.timeout ??
      (options?.timeout === undefined ? defaultTimeout : Duration.fromInputUnsafe(options.timeout))
    // Timed out or interrupted, the call ends at once: a tool that cannot stop is left to finish on its own.
    const running = idempotencyKey === undefined
      ? execute
      : Effect.flatMap(idempotencyKey(index), (key) => Effect.provideService(execute, Tool.IdempotencyKey, key))
    const exit = yield* Effect.exit(detached(running, limit))
    if (Exit.isFailure(exit)) return yield* failed(tool, call, exit.cause)
    if (Option.isNone(exit.value)) {
      return mistake(
        call,
        "timeout",
        `Tool "${tool.name}" did not finish within ${Duration.format(limit)} and was stopped.`
      )
    }
    const value = exit.value.value
    const encoded = yield* Effect.exit(codecsOf(tool).encodeOutput(value))
    if (Exit.isFailure(encoded)) {
      return mistake(
        call,
        "defect",
        `Tool "${tool.name}" returned an output that does not match its output schema: ${causeMessage(encoded.cause)}`
      )
    }
    const content = tool.content(value)
    const output = outputItem(call, "completed", encoded.value)
    const success: Success = {
      outcome: "success",
      call,
      output: content.length === 0 ? output : { ...output, content },
      value
    }
    return success
  }).pipe(
    // A throwing `needsApproval` is a bug of the tool, not a reason to fail the whole batch.
    Effect.catchCause((cause) =>
      notStarted !== undefined
        ? Effect.failCause(notStarted)
        : Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.succeed(mistake(call, "defect", `Tool "${call.name}" crashed: ${causeMessage(cause)}`))
    ),
    Effect.map((result) => tool === undefined ? result : decorated(tool, result, args))
  )
  return withToolSpan(
    call,
    tool?.description,
    (captureContent) => Effect.tap(attempt, (result) => annotateResult(result, captureContent))
  )
}

/** A result with its item as the tool makes it (see `Tool.checkedResultItem`); a defect, with the plain item, when it cannot. */
const decorated = <R>(tool: Tool.Any<R>, result: Result, args: unknown): Result => {
  const made = Tool.checkedResultItem(tool, {
    baseItem: result.output,
    callItem: result.call,
    args,
    result: result.outcome === "success" ? result.value : undefined,
    output: result.output.output,
    error: result.outcome !== "success"
  })
  return Res.isSuccess(made) ? { ...result, output: made.success } : mistake(result.call, "defect", made.failure)
}

/** `body` in the call's span; it is given whether spans record content (read once a call). */
const withToolSpan = <A, E, R>(
  call: Item.FunctionCall,
  description: string | undefined,
  body: (captureContent: boolean) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.flatMap(
    Telemetry.CaptureContent,
    (captureContent) =>
      Effect.withSpan(body(captureContent), Telemetry.toolSpanName(call.name), {
        kind: "internal",
        // A captured stack costs a `new Error()` per call and would only name this module.
        captureStackTrace: false,
        attributes: Telemetry.toolAttributes({ call, description, captureContent })
      })
  )

const annotateResult = (result: Result, captureContent: boolean): Effect.Effect<void> =>
  Effect.annotateCurrentSpan({
    "agentloop.tool.outcome": result.outcome,
    ...(result.outcome === "success" ? {} : { "error.type": result.outcome }),
    ...(captureContent ? { "gen_ai.tool.call.result": result.output.output } : {})
  })

const run = <R>(
  tool: Tool.Any<R>,
  call: Item.FunctionCall,
  index: number,
  input: unknown,
  onProgress: Options["onProgress"]
): Effect.Effect<unknown, unknown, R> =>
  Effect.suspend(() => {
    const running = tool.execute(input)
    if (!Stream.isStream(running)) return running
    return running.pipe(
      Stream.tap((event) =>
        event._tag === "Progress" && onProgress !== undefined
          ? onProgress({ index, call, value: event.value })
          : Effect.void
      ),
      Stream.filter((event): event is Tool.Done<unknown> => event._tag === "Done"),
      Stream.runHead,
      Effect.flatMap(Option.match({
        onNone: () => Effect.die(new Error("its stream ended without a Done event")),
        onSome: (event) => Effect.succeed(event.value)
      }))
    )
  })

const failed = <R>(tool: Tool.Any<R>, call: Item.FunctionCall, cause: Cause.Cause<unknown>): Effect.Effect<Mistake> => {
  const error = Cause.findErrorOption(cause)
  if (Option.isNone(error)) {
    const reason = Cause.hasDies(cause)
      ? `Tool "${tool.name}" crashed: ${causeMessage(cause)}`
      : `Tool "${tool.name}" was interrupted before it finished.`
    return Effect.succeed(mistake(call, "defect", reason))
  }
  if (error.value instanceof Halt) {
    return Effect.succeed(mistake(call, "halted", `Tool "${tool.name}" halted the run: ${error.value.reason}`))
  }
  const reason = `Tool "${tool.name}" failed: ${describe(error.value)}`
  const failure = tool.failure
  if (failure === undefined) return Effect.succeed(mistake(call, "failure", reason))
  return Schema.encodeUnknownEffect(Schema.toCodecJson(failure))(error.value).pipe(
    Effect.match({
      onFailure: () => mistake(call, "failure", reason),
      onSuccess: (encoded): Mistake => ({
        outcome: "failure",
        call,
        reason,
        output: outputItem(call, "incomplete", { error: encoded })
      })
    })
  )
}

/**
 * The result of `call` when it did not produce an output, for `reason`: the
 * model reads `{"error": reason}`. What every mistake of {@link executeAllSafe}
 * is, for an engine that answers a call without running it.
 *
 * @example
 * ```ts
 * import { Item, Toolkit } from "@agentloop/core"
 *
 * const call: Item.FunctionCall = {
 *   type: "function_call",
 *   id: "fc_1",
 *   status: "completed",
 *   call_id: "c1",
 *   name: "charge",
 *   arguments: "{}"
 * }
 * const result = Toolkit.mistake(call, "failure", "The card service is down.")
 * console.log(result.output.output) // {"error":"The card service is down."}
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const mistake = (call: Item.FunctionCall, outcome: Mistake["outcome"], reason: string): Mistake => ({
  outcome,
  call,
  reason,
  output: outputItem(call, "incomplete", { error: reason })
})

/**
 * The result of a call of a tool that is not `idempotent` whose run was cut
 * off (a crash, an interruption) after the call started and before it ended:
 * it is not run again, and the model reads that whether it took effect is
 * unknown, to check before it acts on it. Recorded runs (an `AgentLoop` run
 * with a `Checkpointer`, a durable run) answer such a call with it when they
 * resume.
 *
 * @since 0.2.0
 * @category constructors
 */
export const outcomeUnknown = (call: Item.FunctionCall): Mistake =>
  mistake(
    call,
    "failure",
    `Tool "${call.name}" was cut short by a crash and, as it is not idempotent, was not run again: whether it took effect is unknown.`
  )

const outputItem = (call: Item.FunctionCall, status: Item.Status, json: unknown): Item.FunctionCallOutput => ({
  type: "function_call_output",
  id: `fco_${call.call_id}`,
  status,
  call_id: call.call_id,
  output: JSON.stringify(json) ?? "null"
})

const unknownToolReason = (toolkit: Toolkit<unknown>, name: string): string =>
  toolkit.tools.length === 0
    ? `Unknown tool "${name}": no tools are available.`
    : `Unknown tool "${name}". Available tools: ${toolkit.tools.map((tool) => `"${tool.name}"`).join(", ")}.`

type Parsed = { readonly _tag: "Valid"; readonly value: unknown } | {
  readonly _tag: "Invalid"
  readonly message: string
}

// Some providers send an empty string for a call without arguments.
const parseJson = (text: string): Parsed => {
  if (text.trim() === "") return { _tag: "Valid", value: {} }
  try {
    return { _tag: "Valid", value: JSON.parse(text) }
  } catch (error) {
    return { _tag: "Invalid", message: describe(error) }
  }
}

const causeMessage = (cause: Cause.Cause<unknown>): string => describe(Cause.squash(cause))

/** A readable message for an unknown error or defect: its `message`, prefixed by its `_tag` when it has one. */
const describe = (error: unknown): string => {
  if (typeof error === "string") return error
  if (typeof error !== "object" || error === null) return String(error)
  const tag = "_tag" in error && typeof error._tag === "string" ? error._tag : undefined
  const message = "message" in error && typeof error.message === "string" && error.message !== ""
    ? error.message
    : undefined
  if (tag !== undefined && message !== undefined) return tag === "SchemaError" ? message : `${tag}: ${message}`
  if (message !== undefined) return message
  if (tag !== undefined) return tag
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}
