/**
 * A run's events as the AI SDK's UI message stream (protocol v1), the stream
 * `useChat` and the UI kits built on it read: an `AgentLoop` run's
 * `AgentEvent`s, a durable run's logged events, or a step program's
 * `StepEvent`s become `start`, `start-step`, `text-*`, `reasoning-*`,
 * `tool-input-*`, `tool-output-*`, `source-url`, `source-document`,
 * `finish-step` and `finish` chunks (a cited source once per stream, its id
 * `source-<step>-<n>`: its turn's step and its place among the turn's
 * sources, the same in a stream resumed at the turn), with
 * agentloop's own data (cost, verdicts, terminations, approvals) as
 * `data-agentloop-*` parts (see `UIMessageChunk`).
 *
 * A run that fails ends with one `error` chunk whose text names the
 * termination (a defect's text is never sent); the body always ends with
 * `data: [DONE]`. Cancelling the response body (the client aborted: `useChat`'s
 * stop) interrupts the run.
 *
 * @since 0.2.0
 */
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import { HttpServerResponse } from "effect/http"
import * as Predicate from "effect/Predicate"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../agent/AgentEvent.ts"
import * as CitationSource from "../internal/citationSource.ts"
import * as Item from "../Item.ts"
import type * as StepEvent from "../step/StepEvent.ts"
import * as Termination from "../Termination.ts"
import * as Turn from "../Turn.ts"
import * as UIMessageChunk from "./UIMessageChunk.ts"

/**
 * A call waits for a person's decision (a durable run logs one per call of a
 * tool that `needsApproval`); the stream shows it as a `data-agentloop-approval` part.
 *
 * @since 0.2.0
 * @category models
 */
export interface ApprovalRequested {
  readonly _tag: "ApprovalRequested"
  readonly step: number
  readonly call: Item.FunctionCall
  readonly token: string
}

/**
 * What {@link fromEvents} reads: an agent run's events (of any output type), a
 * step program's, and approval requests.
 *
 * @since 0.2.0
 * @category models
 */
export type Source = AgentEvent.AgentEvent<unknown, unknown> | StepEvent.Event<unknown> | ApprovalRequested

/**
 * The headers of a UI message stream response, `x-vercel-ai-ui-message-stream: v1` among them.
 *
 * @since 0.2.0
 * @category wire
 */
export const headers: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
  "x-vercel-ai-ui-message-stream": "v1"
}

/**
 * Options of the encoder.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /** How often to send a keepalive comment while no chunk is due (default 15 seconds; `Duration.infinity` for never). */
  readonly keepAlive?: Duration.Input | undefined
}

const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

// A tool's progress value travels as the tool emitted it: only a JSON value can cross the wire.
const jsonValue = (value: unknown): unknown => {
  try {
    const text = JSON.stringify(value)
    return text === undefined ? null : JSON.parse(text)
  } catch {
    return String(value)
  }
}

const isTermination = Schema.is(Termination.Error)

const terminationData = (termination: Termination.Termination): UIMessageChunk.TerminationData => ({
  tag: termination._tag,
  category: Termination.category(termination),
  message: termination._tag === "Stop"
    ? termination.reason
    : termination._tag === "Submitted"
    ? `submitted through ${termination.tool}`
    : termination.message,
  usage: termination.accounting.usage,
  cost: termination.accounting.cost,
  elapsedMs: termination.accounting.elapsedMs,
  steps: termination.accounting.steps
})

/** The text of an `error` chunk: a typed failure's tag and message; never a defect's details. */
const errorText = (error: unknown): string => {
  const tag = Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" ? error._tag : undefined
  const message = Predicate.hasProperty(error, "message") && typeof error.message === "string" ? error.message : ""
  const text = tag === undefined ? message : message === "" ? tag : `${tag}: ${message}`
  return text === "" ? "the run failed" : text
}

/** The encoder of one stream: a state machine from events to chunks, fed a chunk of events at a time. */
const encoder = () => {
  let out: Array<UIMessageChunk.Chunk> = []
  let step: string | undefined
  let streamed = false
  let text: string | undefined
  let reasoning: string | undefined
  let parts = 0
  let finished = false
  const announced = new Set<string>()
  /** The sources already sent, by `CitationSource` key. */
  const sources = new Set<string>()
  /** The sources the current step's turn cites, by key: their place among them, from 1. */
  let cited = new Map<string, number>()

  const closeText = () => {
    if (text !== undefined) out.push({ type: "text-end", id: text })
    text = undefined
  }
  const closeReasoning = () => {
    if (reasoning !== undefined) out.push({ type: "reasoning-end", id: reasoning })
    reasoning = undefined
  }
  const closeStep = () => {
    closeText()
    closeReasoning()
    if (step !== undefined) out.push({ type: "finish-step" })
    step = undefined
  }
  const enterStep = (key: string) => {
    if (step === key) return
    closeStep()
    out.push({ type: "start-step" })
    step = key
    streamed = false
    cited = new Map()
  }
  const writeText = (delta: string) => {
    closeReasoning()
    if (text === undefined) {
      text = `text-${++parts}`
      out.push({ type: "text-start", id: text })
    }
    out.push({ type: "text-delta", id: text, delta })
  }
  const writeReasoning = (delta: string) => {
    closeText()
    if (reasoning === undefined) {
      reasoning = `reasoning-${++parts}`
      out.push({ type: "reasoning-start", id: reasoning })
    }
    out.push({ type: "reasoning-delta", id: reasoning, delta })
  }
  /**
   * A source once per stream. Its id is its turn's step and its place among
   * the sources the turn cites, so it is the same in a stream that starts at
   * the turn (a client that reconnects gets the turn again from its start).
   */
  const cite = (citation: Item.Citation) => {
    const source = CitationSource.of(citation)
    const place = cited.get(source.key) ?? cited.size + 1
    cited.set(source.key, place)
    if (sources.has(source.key)) return
    sources.add(source.key)
    const sourceId = `source-${step ?? ""}-${place}`
    out.push(
      source.kind === "url"
        ? {
          type: "source-url",
          sourceId,
          url: source.url,
          ...(source.title === undefined ? {} : { title: source.title })
        }
        : {
          type: "source-document",
          sourceId,
          mediaType: source.mediaType,
          title: source.title,
          ...(source.filename === undefined ? {} : { filename: source.filename })
        }
    )
  }
  const announce = (toolCallId: string, toolName: string, args: string) => {
    closeText()
    closeReasoning()
    announced.add(toolCallId)
    const input = parseJson(args)
    out.push(
      input.ok
        ? { type: "tool-input-available", toolCallId, toolName, input: input.value }
        : {
          type: "tool-input-error",
          toolCallId,
          toolName,
          input: args,
          errorText: "the model wrote arguments that are not JSON"
        }
    )
  }
  const data = (name: keyof typeof UIMessageChunk.dataParts, payload: unknown, id?: string) =>
    out.push(
      id === undefined ? { type: `data-agentloop-${name}`, data: payload } : {
        type: `data-agentloop-${name}`,
        id,
        data: payload
      }
    )

  /** A turn that streamed no deltas (a durable log holds completed turns): its items, as parts. */
  const writeTurn = (scope: string, turn: Turn.Turn) => {
    for (const item of turn.items) {
      if (item.type === "message") {
        const said = item.content.map((part) => part.type === "refusal" ? part.refusal : Item.partText(part)).join("")
        if (said !== "") writeText(said)
        for (const part of item.content) {
          if (part.type === "output_text") { for (const citation of part.annotations ?? []) cite(citation) }
        }
      } else if (item.type === "reasoning") {
        const thought = (item.summary ?? item.content).map(Item.partText).join("")
        if (thought !== "") writeReasoning(thought)
      } else if (item.type === "function_call" && !announced.has(scope + item.call_id)) {
        announce(scope + item.call_id, item.name, item.arguments)
      }
    }
  }

  const turnEvent = (scope: string, event: AgentEvent.TurnEvent) => {
    enterStep(`${scope}${event.step}`)
    switch (event._tag) {
      case "Delta": {
        streamed = true
        const delta = event.delta
        switch (delta.type) {
          case "text_delta":
          case "refusal_delta":
            return writeText(delta.delta)
          case "reasoning_delta":
            return writeReasoning(delta.delta)
          case "citation":
            return cite(delta.citation)
          case "function_call_start":
            closeText()
            closeReasoning()
            announced.add(scope + delta.call_id)
            return out.push({ type: "tool-input-start", toolCallId: scope + delta.call_id, toolName: delta.name })
          case "function_call_arguments_delta":
            return announced.has(scope + delta.call_id)
              ? out.push({ type: "tool-input-delta", toolCallId: scope + delta.call_id, inputTextDelta: delta.delta })
              : undefined
          case "function_call_done":
            return announce(scope + delta.call_id, delta.name, delta.arguments)
          case "usage":
            return
        }
        return
      }
      case "AttemptDiscarded":
        closeText()
        closeReasoning()
        streamed = false
        return data("notice", {
          step: event.step,
          kind: "attempt-discarded",
          message: `the text above is void: ${event.cause.message}`
        })
      case "Compacted":
        return data("notice", {
          step: event.step,
          kind: "compacted",
          message: `the history was compacted from ${event.before} to ${event.after} items`
        })
      case "TurnCompleted": {
        if (!streamed) writeTurn(scope, event.turn)
        closeText()
        closeReasoning()
        const books = event.accounting
        return data("turn", {
          step: event.step,
          usage: event.turn.usage,
          cost: event.cost,
          total: { usage: books.usage, cost: books.cost, elapsedMs: books.elapsedMs, steps: books.steps }
        }, `turn-${scope}${event.step}`)
      }
      case "ToolProgress": {
        const toolCallId = scope + event.call.call_id
        if (!announced.has(toolCallId)) announce(toolCallId, event.call.name, event.call.arguments)
        return out.push({
          type: "tool-output-available",
          toolCallId,
          output: jsonValue(event.value),
          preliminary: true
        })
      }
      case "ToolResult": {
        const toolCallId = scope + event.call.call_id
        if (!announced.has(toolCallId)) announce(toolCallId, event.call.name, event.call.arguments)
        if (event.outcome === "success") {
          const output = parseJson(event.output.output)
          return out.push({
            type: "tool-output-available",
            toolCallId,
            output: output.ok ? output.value : event.output.output
          })
        }
        const reason = event.reason ?? ""
        return out.push({
          type: "tool-output-error",
          toolCallId,
          errorText: reason === "" ? event.outcome : `${event.outcome}: ${reason}`
        })
      }
    }
  }

  const finish = (reason: UIMessageChunk.FinishReason) => {
    closeStep()
    finished = true
    out.push({ type: "finish", finishReason: reason })
  }

  const stepEvent = (event: StepEvent.StepEvent) => {
    switch (event._tag) {
      case "Turn":
        return turnEvent(`${event.contextId}/`, event.event)
      case "Failed":
      case "Recorded":
        return data("step", {
          event: event._tag,
          stepId: event.stepId,
          kind: event.kind,
          contextId: event.contextId,
          message: event.error.tag === undefined ? event.error.message : `${event.error.tag}: ${event.error.message}`
        })
      case "Verdict":
        return data("step", {
          event: event._tag,
          stepId: event.stepId,
          kind: event.kind,
          contextId: event.contextId,
          message: event.verdict.reason ?? event.verdict.feedback ?? (event.verdict.stop ? "stop" : "go on")
        })
      case "Started":
      case "Completed":
        return data("step", { event: event._tag, stepId: event.stepId, kind: event.kind, contextId: event.contextId })
    }
  }

  const source = (event: Source) => {
    if ("stepId" in event) return stepEvent(event)
    switch (event._tag) {
      case "TurnStarted":
        return enterStep(`${event.step}`)
      case "Verdict":
        return data("verdict", { step: event.step, verdict: event.verdict })
      case "Feedback":
        return data("feedback", { step: event.step, text: event.text })
      case "ApprovalRequested": {
        const input = parseJson(event.call.arguments)
        if (!announced.has(event.call.call_id)) announce(event.call.call_id, event.call.name, event.call.arguments)
        return data("approval", {
          step: event.step,
          toolCallId: event.call.call_id,
          toolName: event.call.name,
          input: input.ok ? input.value : event.call.arguments,
          token: event.token
        }, `approval-${event.call.call_id}`)
      }
      case "Finished":
        closeStep()
        data("termination", terminationData(event.result.termination))
        return finish("stop")
      case "Output":
        return finish("stop")
      default:
        return turnEvent("", event)
    }
  }

  const take = (): ReadonlyArray<UIMessageChunk.Chunk> => {
    const taken = out
    out = []
    return taken
  }

  return {
    events: (events: Arr.NonEmptyReadonlyArray<Source>): ReadonlyArray<UIMessageChunk.Chunk> => {
      for (const event of events) if (!finished) source(event)
      return take()
    },
    end: (): ReadonlyArray<UIMessageChunk.Chunk> => {
      if (!finished) finish("stop")
      return take()
    },
    fail: (cause: Cause.Cause<unknown>): ReadonlyArray<UIMessageChunk.Chunk> => {
      if (Cause.hasInterruptsOnly(cause)) return []
      closeStep()
      const failure = Cause.findErrorOption(cause)
      if (failure._tag === "Some" && isTermination(failure.value)) {
        data("termination", terminationData(failure.value))
      }
      out.push({
        type: "error",
        errorText: failure._tag === "Some" ? errorText(failure.value) : "the server failed while running the request"
      })
      return take()
    }
  }
}

/**
 * The UI message stream chunks of a run's events: `start`, then per turn a
 * step of text, reasoning and tool parts, agentloop's data parts, and
 * `finish`; a failure ends it with one `error` chunk instead (the stream
 * itself never fails). Maps whole chunks of events at a time.
 *
 * @example
 * ```ts
 * import { AgentLoop, EventStream } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Stream } from "effect"
 *
 * const chunks = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   return yield* Stream.runCollect(EventStream.toUIMessageStream(agent.stream({ input: "Hi" })))
 * }).pipe(
 *   Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Hello")]))))
 * )
 * Effect.runPromise(chunks).then((all) => console.log(all.map((chunk) => chunk.type).join(" ")))
 * // start start-step text-start text-delta text-end data-agentloop-turn data-agentloop-verdict finish-step …
 * ```
 *
 * @since 0.2.0
 * @category encoding
 */
export const fromEvents = <E, R>(stream: Stream.Stream<Source, E, R>): Stream.Stream<UIMessageChunk.Chunk, never, R> =>
  Stream.suspend(() => {
    const encode = encoder()
    return Stream.succeed<UIMessageChunk.Chunk>({ type: "start" }).pipe(
      Stream.concat(
        stream.pipe(Stream.mapAccumArray(() => encode, (state, events) => [state, encode.events(events)]))
      ),
      // Only a stream that ended well finishes: a failure goes on to `catchCause`.
      Stream.concat(Stream.suspend(() => Stream.fromIterable(encode.end()))),
      Stream.catchCause((cause) => Stream.fromIterable(encode.fail(cause)))
    )
  })

const defaultKeepAlive = Duration.seconds(15)

/**
 * The SSE text of a run's UI message stream: one `data:` line per chunk, and
 * `data: [DONE]` at the end, after a failure too. Keepalive comments keep an
 * idle connection open.
 *
 * @since 0.2.0
 * @category encoding
 */
export const encode: {
  (options?: Options): <E, R>(stream: Stream.Stream<Source, E, R>) => Stream.Stream<string, never, R>
  <E, R>(stream: Stream.Stream<Source, E, R>, options?: Options): Stream.Stream<string, never, R>
} = /* @__PURE__ */ dual((args) => Stream.isStream(args[0]), <E, R>(
  stream: Stream.Stream<Source, E, R>,
  options: Options = {}
): Stream.Stream<string, never, R> => {
  const frames = fromEvents(stream).pipe(
    Stream.mapArray((chunks) => [chunks.map(UIMessageChunk.frame).join("")] as const),
    Stream.concat(Stream.succeed(UIMessageChunk.done))
  )
  const every = Duration.fromInputUnsafe(options.keepAlive ?? defaultKeepAlive)
  if (!Duration.isFinite(every) || Duration.isZero(every)) return frames
  const keepAlives = Stream.fromSchedule(Schedule.spaced(every)).pipe(Stream.map(() => ": keepalive\n\n"))
  return Stream.merge(frames, keepAlives, { haltStrategy: "left" })
})

/**
 * A web `Response` streaming a run as a UI message stream, for route handlers
 * that return one (Next.js, Hono, Bun, Deno): what `useChat`'s
 * `DefaultChatTransport` reads. Cancelling the body (the client aborted)
 * interrupts the run.
 *
 * @since 0.2.0
 * @category responses
 */
export const toResponse: {
  (options?: Options): <E, R>(stream: Stream.Stream<Source, E, R>) => Effect.Effect<Response, never, R>
  <E, R>(stream: Stream.Stream<Source, E, R>, options?: Options): Effect.Effect<Response, never, R>
} = /* @__PURE__ */ dual((args) => Stream.isStream(args[0]), <E, R>(
  stream: Stream.Stream<Source, E, R>,
  options?: Options
): Effect.Effect<Response, never, R> =>
  Effect.map(
    Stream.toReadableStreamEffect(Stream.encodeText(encode(stream, options))),
    (body) => new Response(body, { headers })
  ))

/**
 * An `effect/http` response streaming a run as a UI message stream. The run
 * gets the handler's services; when the client goes away, it is interrupted.
 *
 * @since 0.2.0
 * @category responses
 */
export const toHttpResponse: {
  (
    options?: Options
  ): <E, R>(stream: Stream.Stream<Source, E, R>) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
  <E, R>(
    stream: Stream.Stream<Source, E, R>,
    options?: Options
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>
} = /* @__PURE__ */ dual((args) => Stream.isStream(args[0]), <E, R>(
  stream: Stream.Stream<Source, E, R>,
  options?: Options
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.map(
    Effect.context<R>(),
    (context) =>
      HttpServerResponse.stream(Stream.provideContext(Stream.encodeText(encode(stream, options)), context), {
        headers
      })
  ))
