/**
 * Turns the Server-Sent Events of a streaming Responses API call into
 * `TurnDelta`s, assembling the `Turn` on the way (a `ProviderStream.Decoder`).
 *
 * The turn completes with exactly one `turn_complete` (after a `usage` delta
 * when the API reported usage) as soon as `response.completed` or
 * `response.incomplete` arrives. `response.failed` and `error` fail it with
 * the matching `AiError` (see `ResponsesError`); an event that does not decode
 * fails it with `AiError.MalformedEvent` naming the event and the field; a body
 * that ends before a terminal event fails with `AiError.IncompleteTurn`. Events
 * of unknown types are skipped; output items of unknown types are kept as
 * extension items (see {@link extensionPrefix}). A text's annotations that are citations (see
 * `ResponsesCitation`) go out as `citation` deltas as they come (by
 * `response.output_text.annotation.added`, or on a done part or item) and stay
 * on the text's `output_text` part; the others are skipped.
 *
 * @since 0.1.0
 */
import {
  AiError,
  Cost,
  EventHandlers,
  type Item,
  ProviderStream,
  TokenUsage,
  type Turn,
  type TurnDelta
} from "@agentloop/core"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as ResponsesCitation from "./ResponsesCitation.ts"
import * as ResponsesError from "./ResponsesError.ts"
import * as ResponsesEvent from "./ResponsesEvent.ts"

const provider = ResponsesError.provider

/**
 * The `type` prefix of the extension items that keep output items this layer
 * does not model (`x-openai.custom_tool_call`, `x-openai.web_search_call`, ...):
 * their `data` is the item as the API sent it, and `ResponsesRequest` sends it back.
 *
 * @since 0.1.0
 * @category constants
 */
export const extensionPrefix = "x-openai."

/**
 * Whether an item is an output item kept as an extension by this layer.
 *
 * @since 0.1.0
 * @category guards
 */
export const isOutputExtension = (item: Item.Item): item is Item.Extension => item.type.startsWith(extensionPrefix)

const stopReasonOf = (reason: string): Turn.StopReason =>
  reason === "max_output_tokens" ? "max_tokens" : reason === "content_filter" ? "content_filter" : "other"

const usageOf = (usage: ResponsesEvent.Usage): TokenUsage.TokenUsage => {
  const made = TokenUsage.make(usage.input_tokens, usage.output_tokens, {
    cachedInput: usage.input_tokens_details?.cached_tokens,
    reasoning: usage.output_tokens_details?.reasoning_tokens
  })
  return usage.total_tokens === undefined ? made : { ...made, total: usage.total_tokens }
}

/** What the request cost in USD, when the server says: OpenRouter's `cost`, else xAI's ticks. */
const costOf = (usage: ResponsesEvent.Usage): number | undefined =>
  usage.cost ?? (usage.cost_in_usd_ticks == null ? undefined : Cost.fromTicks(usage.cost_in_usd_ticks))

const statusOf = (status: unknown, otherwise: Item.Status): Item.Status =>
  status === "in_progress" || status === "completed" || status === "incomplete" || status === "failed"
    ? status
    : otherwise

const phaseOf = (phase: string | null | undefined): Item.Phase | undefined =>
  phase === "commentary" || phase === "final_answer" ? phase : undefined

/**
 * A content part being assembled: its text is the pieces its deltas brought,
 * joined when the item is settled (an array of pieces holds a long answer in
 * far less memory than a string grown a delta at a time); a text's citations
 * by their `annotation_index`.
 */
type Part = {
  readonly type: "output_text" | "refusal"
  readonly pieces: Array<string>
  readonly annotations: Map<number, Item.Citation>
}

const textPart = (type: Part["type"], text: string): Part => ({ type, pieces: [text], annotations: new Map() })

const partOf = (part: Part): Item.ContentPart =>
  part.type === "output_text"
    ? {
      type: "output_text",
      text: part.pieces.join(""),
      ...(part.annotations.size === 0 ? {} : { annotations: inOrder(part.annotations) })
    }
    : { type: "refusal", refusal: part.pieces.join("") }

/**
 * `next` in the place of `previous`, keeping the citations it does not
 * repeat; a citation not seen before goes out as a delta.
 */
const mergePart = (previous: Part | undefined, next: Part, out: Array<TurnDelta.TurnDelta>): Part => {
  for (const [index, citation] of next.annotations) {
    if (!previous?.annotations.has(index)) out.push({ type: "citation", citation })
  }
  if (previous === undefined || previous.annotations.size === 0) return next
  return { ...next, annotations: new Map([...previous.annotations, ...next.annotations]) }
}

/** An item still streaming. Positions (`content_index`, `summary_index`) key maps: they come from the wire. */
type Draft =
  | {
    readonly type: "message"
    readonly id: string
    readonly phase: Item.Phase | undefined
    readonly parts: Map<number, Part>
  }
  | {
    readonly type: "function_call"
    readonly id: string
    readonly call_id: string
    readonly name: string
    arguments: string
    /** The arguments already sent as deltas. */
    streamed: string
    /** The tool's normalizer (see `StrictSchema`): its argument deltas are held back until the call is done. */
    readonly normalize: ((text: string) => string) | undefined
  }
  | {
    readonly type: "reasoning"
    readonly id: string
    readonly summary: Map<number, string>
    readonly content: Map<number, string>
  }

const isDraft = (entry: Item.Item | Draft): entry is Draft => !("status" in entry)

const inOrder = <A>(map: ReadonlyMap<number, A>): Array<A> =>
  [...map.entries()].sort(([a], [b]) => a - b).map(([, value]) => value)

/** A draft as the item it had become. */
const settle = (draft: Draft, status: Item.Status): Item.Item => {
  switch (draft.type) {
    case "message":
      return {
        type: "message",
        id: draft.id,
        status,
        role: "assistant",
        content: inOrder(draft.parts).map(partOf),
        ...(draft.phase === undefined ? {} : { phase: draft.phase })
      }
    case "function_call":
      return {
        type: "function_call",
        id: draft.id,
        status,
        call_id: draft.call_id,
        name: draft.name,
        arguments: draft.normalize === undefined ? draft.arguments : draft.normalize(draft.arguments)
      }
    case "reasoning":
      return {
        type: "reasoning",
        id: draft.id,
        status,
        content: inOrder(draft.content).map((text) => ({ type: "output_text" as const, text })),
        summary: inOrder(draft.summary).map((text) => ({ type: "output_text" as const, text }))
      }
  }
}

/** A structured output's message with the `null`s of optional keys taken out of its text. */
const normalizeMessage = (item: Item.Item, normalize: (text: string) => string): Item.Item =>
  item.type === "message" && item.phase !== "commentary"
    ? {
      ...item,
      content: item.content.map((part) => part.type === "output_text" ? { ...part, text: normalize(part.text) } : part)
    }
    : item

/**
 * What a decoder needs to know about the request it reads the answer of.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The requested model, reported when the stream names none. */
  readonly model?: string | undefined
  /** Per tool name, the normalizer of its arguments (see `StrictSchema.Strict.normalize`). */
  readonly tools?: ReadonlyMap<string, (text: string) => string> | undefined
  /** The normalizer of a structured output, applied to the assembled message text. */
  readonly output?: ((text: string) => string) | undefined
}

/**
 * A decoder of one streaming response.
 *
 * @example
 * ```ts
 * import { ResponsesDecoder } from "@agentloop/responses"
 * import { ResponsesWire } from "@agentloop/responses/testing"
 * import { ProviderStream, Turn } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Stream } from "effect"
 *
 * // The frames the API would stream for a turn (written by the wire of the package's testing entry)...
 * const frames = ResponsesWire.wire.turn(MockLanguageModel.textTurn("Hello, world"), { chunkSize: 4 })
 * const body = Stream.fromIterable(frames).pipe(Stream.encodeText)
 *
 * // ...decoded back into deltas, the last one carrying the whole turn.
 * const decoder = ResponsesDecoder.make({ model: "gpt-5-mini" })
 * const program = body.pipe(ProviderStream.decode(decoder, { provider: "openai" }), Stream.runLast)
 *
 * Effect.runPromise(program).then((last) => {
 *   if (last._tag === "Some" && last.value.type === "turn_complete") console.log(Turn.text(last.value.turn)) // Hello, world
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options = {}): ProviderStream.Decoder => new Decoder(options)

class Decoder implements ProviderStream.Decoder {
  complete = false
  model: string | undefined
  responseId: string | undefined
  /** Items by output index: finished items, or drafts still streaming. */
  readonly items = new Map<number, Item.Item | Draft>()
  /** Output index of each item id, for the events that name an item only by id. */
  readonly indexOf = new Map<string, number>()
  /** Output indices whose item is done: its `output_item.done` came, whatever status it says the item has. */
  readonly settled = new Set<number>()
  readonly options: Options

  constructor(options: Options) {
    this.options = options
    this.model = options.model
  }

  event(name: string, data: string, out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    return dispatch(this, name, data, out)
  }

  end(): AiError.AiError {
    return new AiError.IncompleteTurn({ message: `${provider}: the stream ended before response.completed` })
  }

  /**
   * The draft an event names: by its item id, else by its output index
   * (GitHub Copilot gives every event of an item another id).
   */
  draft(itemId: string, outputIndex: number | undefined): Draft | undefined {
    const index = this.indexOf.get(itemId) ?? outputIndex
    const entry = index === undefined ? undefined : this.items.get(index)
    return entry !== undefined && isDraft(entry) ? entry : undefined
  }

  /** The message draft of `itemId`; a delta of a message never announced opens one at `outputIndex`. */
  message(itemId: string, outputIndex: number | undefined): Extract<Draft, { type: "message" }> | undefined {
    const draft = this.draft(itemId, outputIndex)
    if (draft?.type === "message") return draft
    if (draft !== undefined || outputIndex === undefined || this.items.has(outputIndex)) return undefined
    const opened: Draft = { type: "message", id: itemId, phase: undefined, parts: new Map() }
    this.open(outputIndex, opened)
    return opened
  }

  reasoning(itemId: string, outputIndex: number | undefined): Extract<Draft, { type: "reasoning" }> | undefined {
    const draft = this.draft(itemId, outputIndex)
    return draft?.type === "reasoning" ? draft : undefined
  }

  open(index: number, draft: Draft): void {
    this.indexOf.set(draft.id, index)
    this.items.set(index, draft)
  }

  /** An item added (`done` false) or finished. */
  item(event: string, index: number, raw: ResponsesEvent.JsonObject, done: boolean, out: Array<TurnDelta.TurnDelta>) {
    const typed = decodeTyped(event, raw, "item")
    if (Result.isFailure(typed)) return typed.failure
    if (done) this.settled.add(index)
    const type = typed.success.type
    if (type === "message") {
      const item = decodeMessageItem(event, raw, "item")
      if (Result.isFailure(item)) return item.failure
      const previous = this.items.get(index)
      const before = previous !== undefined && isDraft(previous) && previous.type === "message"
        ? previous.parts
        : undefined
      const parts = new Map<number, Part>()
      for (const [i, part] of item.success.content.entries()) {
        const decoded = decodePart(event, part, `item.content[${i}]`)
        if (Result.isFailure(decoded)) return decoded.failure
        if (decoded.success !== undefined) parts.set(i, mergePart(before?.get(i), decoded.success, out))
      }
      // A part the item's event leaves out keeps what its own events brought.
      for (const [i, part] of before ?? []) if (!parts.has(i)) parts.set(i, part)
      const draft: Draft = { type: "message", id: item.success.id, phase: phaseOf(item.success.phase), parts }
      if (done) this.items.set(index, settle(draft, statusOf(item.success.status, "completed")))
      else this.open(index, draft)
    } else if (type === "function_call") {
      const item = decodeFunctionCallItem(event, raw, "item")
      if (Result.isFailure(item)) return item.failure
      const { arguments: args, call_id, id, name, status } = item.success
      const previous = this.items.get(index)
      const streamed = previous !== undefined && isDraft(previous) && previous.type === "function_call"
        ? previous.streamed
        : ""
      const normalize = this.options.tools?.get(name)
      const draft: Draft = { type: "function_call", id, call_id, name, arguments: args, streamed, normalize }
      // A call announced only by its done event still gets its start delta.
      if (previous === undefined) out.push({ type: "function_call_start", call_id, name })
      if (!done) return this.open(index, draft)
      const call = settle(draft, statusOf(status, "completed"))
      this.items.set(index, call)
      if (call.type !== "function_call") return
      // The deltas concatenate to the arguments: what was held back or never streamed goes out now.
      const rest = call.arguments.startsWith(streamed) ? call.arguments.slice(streamed.length) : ""
      if (rest.length > 0) out.push({ type: "function_call_arguments_delta", call_id, delta: rest })
      out.push({ type: "function_call_done", call_id, name, arguments: call.arguments })
    } else if (type === "reasoning") {
      const item = decodeReasoningItem(event, raw, "item")
      if (Result.isFailure(item)) return item.failure
      const { content, encrypted_content, id, status, summary } = item.success
      const draft: Draft = {
        type: "reasoning",
        id,
        summary: new Map((summary ?? []).map((part, i) => [i, part.text])),
        content: new Map((content ?? []).map((part, i) => [i, part.text]))
      }
      if (!done) return this.open(index, draft)
      const settled = settle(draft, statusOf(status, "completed"))
      this.items.set(
        index,
        encrypted_content == null || settled.type !== "reasoning" ? settled : { ...settled, encrypted_content }
      )
    } else {
      if (typeof raw.id === "string") this.indexOf.set(raw.id, index)
      this.items.set(index, {
        type: `${extensionPrefix}${type}`,
        id: typeof raw.id === "string" ? raw.id : `${this.responseId ?? "response"}_output_${index}`,
        status: statusOf(raw.status, done ? "completed" : "in_progress"),
        data: raw
      })
    }
  }

  /**
   * Ends the turn; `incompleteReason` is set for `response.incomplete`. The
   * response's `output` is the final word on every item it lists whose events
   * left it open (announced, never done): the item is taken as it lists it. An
   * item that was done stays as its done event had it, even when its status is
   * still `in_progress` (a call a program made with programmatic tool calling
   * waits for its output so): its deltas, a call's `function_call_done` among
   * them, went out once.
   */
  finish(
    event: string,
    response: ResponsesEvent.Response,
    incompleteReason: string | undefined,
    out: Array<TurnDelta.TurnDelta>
  ): AiError.AiError | undefined {
    for (const [position, raw] of (response.output ?? []).entries()) {
      const index = (typeof raw.id === "string" ? this.indexOf.get(raw.id) : undefined) ?? position
      if (this.settled.has(index)) continue
      const error = this.item(event, index, raw, true, out)
      if (error !== undefined) return error
    }
    this.complete = true
    if (response.model !== undefined) this.model = response.model
    const responseId = response.id ?? this.responseId
    const status = incompleteReason === undefined ? "completed" : "incomplete"
    const items = inOrder(this.items).map((entry) => isDraft(entry) ? settle(entry, status) : entry)
    const output = this.options.output
    const hasCalls = items.some((item) => item.type === "function_call")
    ProviderStream.complete(out, {
      items: output === undefined ? items : items.map((item) => normalizeMessage(item, output)),
      usage: response.usage == null ? undefined : usageOf(response.usage),
      stopReason: incompleteReason === undefined
        ? (hasCalls ? "tool_calls" : "stop")
        : stopReasonOf(incompleteReason),
      model: this.model,
      responseId,
      providerStopReason: incompleteReason,
      cost: response.usage == null ? undefined : costOf(response.usage)
    })
    return undefined
  }
}

const decoder = <A>(schema: Schema.Decoder<A>) => ProviderStream.valueDecoder(provider, schema)
const decodeTyped = decoder(ResponsesEvent.Typed)
const decodeMessageItem = decoder(ResponsesEvent.MessageItem)
const decodeFunctionCallItem = decoder(ResponsesEvent.FunctionCallItem)
const decodeReasoningItem = decoder(ResponsesEvent.ReasoningItem)
const decodeOutputText = decoder(ResponsesEvent.OutputTextPart)
const decodeRefusal = decoder(ResponsesEvent.RefusalPart)

/** The citations among a part's annotations, by position; the others, and those past the bound, are skipped. */
const citations = (annotations: ReadonlyArray<unknown>): Map<number, Item.Citation> => {
  const out = new Map<number, Item.Citation>()
  for (const [index, annotation] of annotations.slice(0, ResponsesEvent.maxAnnotations).entries()) {
    const citation = ResponsesCitation.fromWire(annotation)
    if (citation !== undefined) out.set(index, citation)
  }
  return out
}

/** A content part as a `Part`, or `undefined` for a kind this layer does not map (audio, ...). */
const decodePart = (
  event: string,
  raw: unknown,
  at: string
): Result.Result<Part | undefined, AiError.MalformedEvent> => {
  const kind = decodeTyped(event, raw, at)
  if (Result.isFailure(kind)) return Result.fail(kind.failure)
  if (kind.success.type === "output_text") {
    return Result.map(decodeOutputText(event, raw, at), ({ annotations, text }): Part => ({
      type: "output_text",
      pieces: [text],
      annotations: citations(annotations ?? [])
    }))
  }
  if (kind.success.type === "refusal") {
    return Result.map(decodeRefusal(event, raw, at), ({ refusal }) => textPart("refusal", refusal))
  }
  return Result.succeed(undefined)
}

const on = EventHandlers.on<Decoder>(provider)

const started = on(ResponsesEvent.Lifecycle, (self, { response }) => {
  if (response.id !== undefined) self.responseId = response.id
  if (response.model !== undefined) self.model = response.model
})
const added = on(
  ResponsesEvent.OutputItemEvent,
  (self, e, out, event) => self.item(event, e.output_index, e.item, false, out)
)
const done = on(
  ResponsesEvent.OutputItemEvent,
  (self, e, out, event) => self.item(event, e.output_index, e.item, true, out)
)
const part = on(ResponsesEvent.ContentPartEvent, (self, e, out, event) => {
  const decoded = decodePart(event, e.part, "part")
  if (Result.isFailure(decoded)) return decoded.failure
  const draft = self.message(e.item_id, e.output_index)
  if (draft === undefined || decoded.success === undefined) return
  draft.parts.set(e.content_index, mergePart(draft.parts.get(e.content_index), decoded.success, out))
})

/** The events this layer reads, by type. */
const handlers: EventHandlers.Handlers<Decoder> = new Map([
  ["response.created", started],
  ["response.in_progress", started],
  ["response.output_item.added", added],
  ["response.output_item.done", done],
  ["response.content_part.added", part],
  ["response.content_part.done", part],
  [
    "response.output_text.delta",
    on(ResponsesEvent.ContentDelta, (self, e, out) => {
      const draft = self.message(e.item_id, e.output_index)
      const part = draft?.parts.get(e.content_index)
      if (part?.type === "output_text") part.pieces.push(e.delta)
      else draft?.parts.set(e.content_index, textPart("output_text", e.delta))
      const phase = draft?.phase
      out.push(
        phase === undefined ? { type: "text_delta", delta: e.delta } : { type: "text_delta", delta: e.delta, phase }
      )
    })
  ],
  [
    "response.output_text.done",
    on(ResponsesEvent.ContentTextDone, (self, e, out) => {
      const draft = self.message(e.item_id, e.output_index)
      draft?.parts.set(
        e.content_index,
        mergePart(draft.parts.get(e.content_index), textPart("output_text", e.text), out)
      )
    })
  ],
  [
    "response.output_text.annotation.added",
    on(ResponsesEvent.AnnotationAdded, (self, e, out) => {
      const citation = e.annotation_index < ResponsesEvent.maxAnnotations
        ? ResponsesCitation.fromWire(e.annotation)
        : undefined
      const draft = self.message(e.item_id, e.output_index)
      if (citation === undefined || draft === undefined) return
      const part = draft.parts.get(e.content_index) ?? textPart("output_text", "")
      if (part.annotations.has(e.annotation_index)) return
      part.annotations.set(e.annotation_index, citation)
      draft.parts.set(e.content_index, part)
      out.push({ type: "citation", citation })
    })
  ],
  [
    "response.refusal.delta",
    on(ResponsesEvent.ContentDelta, (self, e, out) => {
      const draft = self.message(e.item_id, e.output_index)
      const part = draft?.parts.get(e.content_index)
      if (part?.type === "refusal") part.pieces.push(e.delta)
      else draft?.parts.set(e.content_index, textPart("refusal", e.delta))
      out.push({ type: "refusal_delta", delta: e.delta })
    })
  ],
  [
    "response.refusal.done",
    on(ResponsesEvent.RefusalDone, (self, e) => {
      self.message(e.item_id, e.output_index)?.parts.set(e.content_index, textPart("refusal", e.refusal))
    })
  ],
  [
    "response.reasoning_text.delta",
    on(ResponsesEvent.ContentDelta, (self, e, out) => {
      const draft = self.reasoning(e.item_id, e.output_index)
      draft?.content.set(e.content_index, (draft.content.get(e.content_index) ?? "") + e.delta)
      out.push({ type: "reasoning_delta", delta: e.delta })
    })
  ],
  [
    "response.reasoning_text.done",
    on(ResponsesEvent.ContentTextDone, (self, e) => {
      self.reasoning(e.item_id, e.output_index)?.content.set(e.content_index, e.text)
    })
  ],
  [
    "response.reasoning_summary_text.delta",
    on(ResponsesEvent.SummaryDelta, (self, e, out) => {
      const draft = self.reasoning(e.item_id, e.output_index)
      draft?.summary.set(e.summary_index, (draft.summary.get(e.summary_index) ?? "") + e.delta)
      out.push({ type: "reasoning_delta", delta: e.delta })
    })
  ],
  [
    "response.reasoning_summary_text.done",
    on(ResponsesEvent.SummaryDone, (self, e) => {
      self.reasoning(e.item_id, e.output_index)?.summary.set(e.summary_index, e.text)
    })
  ],
  [
    "response.function_call_arguments.delta",
    on(ResponsesEvent.ArgumentsDelta, (self, e, out, event) => {
      const draft = self.draft(e.item_id, e.output_index)
      if (draft?.type !== "function_call") {
        return new AiError.MalformedEvent({
          provider,
          event,
          message: `item_id: no function call ${e.item_id} is streaming`
        })
      }
      draft.arguments += e.delta
      if (draft.normalize !== undefined) return
      draft.streamed += e.delta
      out.push({ type: "function_call_arguments_delta", call_id: draft.call_id, delta: e.delta })
    })
  ],
  [
    "response.function_call_arguments.done",
    on(ResponsesEvent.ArgumentsDone, (self, e) => {
      const draft = self.draft(e.item_id, e.output_index)
      if (draft?.type === "function_call") draft.arguments = e.arguments
    })
  ],
  [
    "response.completed",
    on(ResponsesEvent.Lifecycle, (self, e, out, event) => self.finish(event, e.response, undefined, out))
  ],
  [
    "response.incomplete",
    on(
      ResponsesEvent.Lifecycle,
      (self, e, out, event) => self.finish(event, e.response, e.response.incomplete_details?.reason ?? "unknown", out)
    )
  ],
  [
    "response.failed",
    on(
      ResponsesEvent.Lifecycle,
      (_, e) => ResponsesError.fromObject(e.response.error ?? { message: "the response failed without an error" })
    )
  ],
  [
    "error",
    on(ResponsesEvent.ErrorEvent, (_, e) =>
      ResponsesError.fromObject(
        e.error ?? { code: e.code ?? null, message: e.message ?? "the stream failed without a message" }
      ))
  ]
])

/**
 * The event types the decoder reads; it skips events of other types without
 * parsing their data (`response.reasoning_summary_part.added`, ...).
 *
 * @since 0.1.0
 * @category constants
 */
export const eventTypes: ReadonlySet<string> = new Set(handlers.keys())

// The API names every event: an unknown name is skipped without parsing its data.
const dispatch = EventHandlers.dispatch(provider, handlers, { byName: true })
