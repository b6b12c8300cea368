/**
 * Turns the Server-Sent Events of a streaming Responses API call into
 * `TurnDelta`s, assembling the `Turn` on the way (a `ProviderStream.Decoder`).
 *
 * The turn completes with exactly one `turn_complete` (after a `usage` delta
 * when the API reported usage) as soon as `response.completed` or
 * `response.incomplete` arrives. `response.failed` and `error` fail it with
 * the matching `AiError`; an event that does not decode fails it with
 * `AiError.MalformedEvent` naming the event and the field; a body that ends
 * before a terminal event fails with `AiError.IncompleteTurn`. Events of
 * unknown types are skipped; output items of unknown types are kept as
 * extension items (see {@link extensionPrefix}).
 *
 * @since 0.1.0
 */
import { AiError, type Item, type ProviderHttp, ProviderStream, TokenUsage, type Turn, type TurnDelta } from "@agentloop/core"
import { Result, Schema } from "effect"
import * as ResponsesEvent from "./ResponsesEvent.ts"

/**
 * The `type` prefix of the extension items that keep output items this layer
 * does not model (`x-openai.custom_tool_call`, `x-openai.web_search_call`, ...):
 * their `data` is the item as the API sent it, and `ResponsesRequest` sends it back.
 */
export const extensionPrefix = "x-openai."

/** Whether an item is an output item kept as an extension by this layer. */
export const isOutputExtension = (item: Item.Item): item is Item.Extension => item.type.startsWith(extensionPrefix)

/**
 * Maps the `code` (else the `type`) of an error object (of a failed response,
 * an `error` event or an HTTP error body) to its error; one that names neither
 * is taken as the server's.
 */
export const errorOf = (provider: string, error: ResponsesEvent.ErrorObject, status?: number): AiError.AiError => {
  const code = error.code ?? error.type ?? undefined
  const message = code === undefined ? error.message : `${error.message} (${code})`
  const withStatus = status === undefined ? {} : { status }
  switch (code) {
    case "insufficient_quota":
      return new AiError.QuotaExceeded({ provider, message, ...withStatus })
    case "rate_limit_exceeded":
    case "too_many_requests":
      return new AiError.RateLimited({ provider, message })
    case "context_length_exceeded":
      return new AiError.ContextLengthExceeded({ provider, message })
    case "invalid_api_key":
      return new AiError.AuthFailed({ provider, status: status ?? 401, message })
    case undefined:
    case "server_error":
    case "service_unavailable_error":
    case "vector_store_timeout":
      return new AiError.Unavailable({ provider, message, ...withStatus })
    default:
      return new AiError.InvalidRequest({ provider, message, ...withStatus })
  }
}

const decodeErrorBody = Schema.decodeUnknownResult(Schema.fromJsonString(ResponsesEvent.ErrorBody))

/**
 * Reads an HTTP error response by its `error.code` where the status alone says
 * too little: `insufficient_quota` (a 429 no retry can help) and
 * `context_length_exceeded` (a 400). Everything else is read by its status.
 */
export const classifyError = (failure: ProviderHttp.ErrorResponse): AiError.AiError | undefined => {
  const body = decodeErrorBody(failure.body)
  if (Result.isFailure(body)) return undefined
  const code = body.success.error.code
  return code === "insufficient_quota" || code === "context_length_exceeded"
    ? errorOf(failure.provider, body.success.error, failure.status)
    : undefined
}

const stopReasonOf = (reason: string): Turn.StopReason => {
  switch (reason) {
    case "max_output_tokens":
      return "max_tokens"
    case "content_filter":
      return "content_filter"
    default:
      return "other"
  }
}

const usageOf = (usage: ResponsesEvent.Usage): TokenUsage.TokenUsage => {
  const made = TokenUsage.make(usage.input_tokens, usage.output_tokens, {
    cachedInput: usage.input_tokens_details?.cached_tokens,
    reasoning: usage.output_tokens_details?.reasoning_tokens
  })
  return usage.total_tokens === undefined ? made : { ...made, total: usage.total_tokens }
}

const statusOf = (status: string | null | undefined, otherwise: Item.Status): Item.Status =>
  status === "in_progress" || status === "completed" || status === "incomplete" || status === "failed"
    ? status
    : otherwise

const phaseOf = (phase: string | null | undefined): Item.Phase | undefined =>
  phase === "commentary" || phase === "final_answer" ? phase : undefined

/** A content part being assembled: its text grows with each delta. */
type Part = { readonly type: "output_text"; text: string } | { readonly type: "refusal"; refusal: string }

type Handler = (event: string, json: unknown, out: Array<TurnDelta.TurnDelta>) => AiError.AiError | undefined

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
    /** The tool's normalizer (see `ResponsesStrict`): its argument deltas are held back until the call is done. */
    readonly normalize: ((text: string) => string) | undefined
  }
  | {
    readonly type: "reasoning"
    readonly id: string
    readonly summary: Map<number, string>
    readonly content: Map<number, string>
  }

const inOrder = <A>(map: ReadonlyMap<number, A>): Array<A> =>
  [...map.entries()].sort(([a], [b]) => a - b).map(([, value]) => value)

/** What a decoder needs to know about the request it reads the answer of. */
export interface Options {
  readonly provider: string
  /** The requested model, reported when the stream names none. */
  readonly model?: string | undefined
  /** Per tool name, the normalizer of its arguments (see `ResponsesStrict.Strict.normalize`). */
  readonly tools?: ReadonlyMap<string, (text: string) => string> | undefined
  /** The normalizer of a structured output, applied to the assembled message text. */
  readonly output?: ((text: string) => string) | undefined
}

const Typed = ResponsesEvent.Typed

/** A decoder of one streaming response. */
export const make = (options: Options): ProviderStream.Decoder => new Decoder(options)

class Decoder implements ProviderStream.Decoder {
  complete = false
  private readonly provider: string
  private model: string | undefined
  private responseId: string | undefined
  /** Items by output index: finished items, or drafts still streaming. */
  private readonly items = new Map<number, Item.Item | Draft>()
  /** Output index of each item id, for the events that name an item only by id. */
  private readonly indexOf = new Map<string, number>()
  private readonly decoders: Decoders
  private readonly options: Options

  constructor(options: Options) {
    this.options = options
    this.provider = options.provider
    this.model = options.model
    this.decoders = decodersOf(options.provider)
  }

  event(name: string, data: string, out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    if (name !== "message") {
      // The API names every event: an unknown name is skipped without parsing its data.
      const handle = this.handlers.get(name)
      if (handle === undefined) return undefined
      const json = ProviderStream.parseJson(this.provider, name, data)
      return Result.isFailure(json) ? json.failure : handle(name, json.success, out)
    }
    const json = ProviderStream.parseJson(this.provider, name, data)
    if (Result.isFailure(json)) return json.failure
    const typed = this.decoders.typed(name, json.success)
    if (Result.isFailure(typed)) return typed.failure
    const type = typed.success.type
    const handle = this.handlers.get(type)
    return handle === undefined ? undefined : handle(type, json.success, out)
  }

  end(): AiError.AiError {
    return new AiError.IncompleteTurn({ message: `${this.provider}: the stream ended before response.completed` })
  }

  private readonly handlers: ReadonlyMap<string, Handler> = new Map(Object.entries<Handler>({
    "response.created": (event, json) => this.lifecycle(event, json),
    "response.in_progress": (event, json) => this.lifecycle(event, json),
    "response.output_item.added": (event, json, out) =>
      this.with(this.decoders.item(event, json), (e) => this.item(event, e, false, out)),
    "response.output_item.done": (event, json, out) =>
      this.with(this.decoders.item(event, json), (e) => this.item(event, e, true, out)),
    "response.content_part.added": (event, json) => this.with(this.decoders.part(event, json), (e) => this.part(event, e)),
    "response.content_part.done": (event, json) => this.with(this.decoders.part(event, json), (e) => this.part(event, e)),
    // The event nearly every chunk is made of: no closure per event.
    "response.output_text.delta": (event, json, out) => {
      const decoded = this.decoders.delta(event, json)
      if (Result.isFailure(decoded)) return decoded.failure
      const e = decoded.success
      const draft = this.message(e.item_id, e.output_index)
      if (draft !== undefined) {
        const part = draft.parts.get(e.content_index)
        if (part?.type === "output_text") part.text += e.delta
        else draft.parts.set(e.content_index, { type: "output_text", text: e.delta })
      }
      const phase = draft?.phase
      out.push(phase === undefined ? { type: "text_delta", delta: e.delta } : { type: "text_delta", delta: e.delta, phase })
      return undefined
    },
    "response.output_text.done": (event, json) =>
      this.with(this.decoders.textDone(event, json), (e) => {
        this.message(e.item_id)?.parts.set(e.content_index, { type: "output_text", text: e.text })
      }),
    "response.refusal.delta": (event, json, out) =>
      this.with(this.decoders.delta(event, json), (e) => {
        const draft = this.message(e.item_id, e.output_index)
        const part = draft?.parts.get(e.content_index)
        if (part?.type === "refusal") part.refusal += e.delta
        else draft?.parts.set(e.content_index, { type: "refusal", refusal: e.delta })
        out.push({ type: "refusal_delta", delta: e.delta })
      }),
    "response.refusal.done": (event, json) =>
      this.with(this.decoders.refusalDone(event, json), (e) => {
        this.message(e.item_id)?.parts.set(e.content_index, { type: "refusal", refusal: e.refusal })
      }),
    "response.reasoning_text.delta": (event, json, out) =>
      this.with(this.decoders.delta(event, json), (e) => {
        const draft = this.reasoning(e.item_id)
        draft?.content.set(e.content_index, (draft.content.get(e.content_index) ?? "") + e.delta)
        out.push({ type: "reasoning_delta", delta: e.delta })
      }),
    "response.reasoning_text.done": (event, json) =>
      this.with(this.decoders.textDone(event, json), (e) => {
        this.reasoning(e.item_id)?.content.set(e.content_index, e.text)
      }),
    "response.reasoning_summary_text.delta": (event, json, out) =>
      this.with(this.decoders.summaryDelta(event, json), (e) => {
        const draft = this.reasoning(e.item_id)
        draft?.summary.set(e.summary_index, (draft.summary.get(e.summary_index) ?? "") + e.delta)
        out.push({ type: "reasoning_delta", delta: e.delta })
      }),
    "response.reasoning_summary_text.done": (event, json) =>
      this.with(this.decoders.summaryDone(event, json), (e) => {
        this.reasoning(e.item_id)?.summary.set(e.summary_index, e.text)
      }),
    "response.function_call_arguments.delta": (event, json, out) =>
      this.with(this.decoders.argumentsDelta(event, json), (e) => {
        const draft = this.draft(e.item_id)
        if (draft?.type !== "function_call") {
          return new AiError.MalformedEvent({
            provider: this.provider,
            event,
            message: `item_id: no function call ${e.item_id} is streaming`
          })
        }
        draft.arguments += e.delta
        if (draft.normalize === undefined) {
          draft.streamed += e.delta
          out.push({ type: "function_call_arguments_delta", call_id: draft.call_id, delta: e.delta })
        }
        return undefined
      }),
    "response.function_call_arguments.done": (event, json) =>
      this.with(this.decoders.argumentsDone(event, json), (e) => {
        const draft = this.draft(e.item_id)
        if (draft?.type === "function_call") draft.arguments = e.arguments
      }),
    "response.completed": (event, json, out) =>
      this.with(this.decoders.lifecycle(event, json), (e) => this.finish(e.response, undefined, out)),
    "response.incomplete": (event, json, out) =>
      this.with(this.decoders.lifecycle(event, json), (e) =>
        this.finish(e.response, e.response.incomplete_details?.reason ?? "unknown", out)),
    "response.failed": (event, json) =>
      this.with(this.decoders.lifecycle(event, json), (e) =>
        errorOf(this.provider, e.response.error ?? { message: "the response failed without an error" })),
    "error": (event, json) =>
      this.with(this.decoders.error(event, json), (e) =>
        errorOf(
          this.provider,
          e.error ?? { code: e.code ?? null, message: e.message ?? "the stream failed without a message" }
        ))
  }))

  /** Runs `f` on a decoded event, or returns the decoding error. */
  private with<A>(
    decoded: Result.Result<A, AiError.MalformedEvent>,
    f: (event: A) => AiError.AiError | void
  ): AiError.AiError | undefined {
    return Result.isFailure(decoded) ? decoded.failure : f(decoded.success) ?? undefined
  }

  private lifecycle(event: string, json: unknown): AiError.AiError | undefined {
    return this.with(this.decoders.lifecycle(event, json), ({ response }) => {
      if (response.id !== undefined) this.responseId = response.id
      if (response.model !== undefined) this.model = response.model
    })
  }

  private draft(itemId: string): Draft | undefined {
    const index = this.indexOf.get(itemId)
    const entry = index === undefined ? undefined : this.items.get(index)
    return entry !== undefined && isDraft(entry) ? entry : undefined
  }

  /** The message draft of `itemId`; a delta of a message never announced opens one at `outputIndex`. */
  private message(itemId: string, outputIndex?: number): Extract<Draft, { type: "message" }> | undefined {
    const draft = this.draft(itemId)
    if (draft?.type === "message") return draft
    if (draft !== undefined || outputIndex === undefined || this.items.has(outputIndex)) return undefined
    const opened: Draft = { type: "message", id: itemId, phase: undefined, parts: new Map() }
    this.open(outputIndex, opened)
    return opened
  }

  private reasoning(itemId: string): Extract<Draft, { type: "reasoning" }> | undefined {
    const draft = this.draft(itemId)
    return draft?.type === "reasoning" ? draft : undefined
  }

  private open(index: number, draft: Draft): void {
    this.indexOf.set(draft.id, index)
    this.items.set(index, draft)
  }

  private part(event: string, e: typeof ResponsesEvent.ContentPartEvent.Type): AiError.AiError | undefined {
    const draft = this.message(e.item_id)
    const part = this.decoders.contentPart(event, e.part)
    if (Result.isFailure(part)) return part.failure
    if (draft !== undefined && part.success !== undefined) draft.parts.set(e.content_index, part.success)
    return undefined
  }

  /** An item added (`done` false) or finished. */
  private item(
    event: string,
    e: typeof ResponsesEvent.OutputItemEvent.Type,
    done: boolean,
    out: Array<TurnDelta.TurnDelta>
  ): AiError.AiError | undefined {
    const index = e.output_index
    const typed = this.decoders.typed(event, e.item, "item")
    if (Result.isFailure(typed)) return typed.failure
    switch (typed.success.type) {
      case "message": {
        const decoded = this.decoders.messageItem(event, e.item, "item")
        if (Result.isFailure(decoded)) return decoded.failure
        const item = decoded.success
        const parts = new Map<number, Part>()
        for (const [i, raw] of item.content.entries()) {
          const part = this.decoders.contentPart(event, raw, `item.content[${i}]`)
          if (Result.isFailure(part)) return part.failure
          if (part.success !== undefined) parts.set(i, part.success)
        }
        const draft: Draft = { type: "message", id: item.id, phase: phaseOf(item.phase), parts }
        if (done) this.items.set(index, settle(draft, statusOf(item.status, "completed")))
        else this.open(index, draft)
        return undefined
      }
      case "function_call": {
        const decoded = this.decoders.functionCallItem(event, e.item, "item")
        if (Result.isFailure(decoded)) return decoded.failure
        const item = decoded.success
        const previous = this.items.get(index)
        const draft: Draft = {
          type: "function_call",
          id: item.id,
          call_id: item.call_id,
          name: item.name,
          arguments: item.arguments,
          streamed: previous !== undefined && isDraft(previous) && previous.type === "function_call" ? previous.streamed : "",
          normalize: this.options.tools?.get(item.name)
        }
        // A call announced only by its done event still gets its start delta.
        if (previous === undefined) out.push({ type: "function_call_start", call_id: item.call_id, name: item.name })
        if (!done) {
          this.open(index, draft)
          return undefined
        }
        const call = settle(draft, statusOf(item.status, "completed"))
        this.items.set(index, call)
        if (call.type === "function_call") {
          // The deltas concatenate to the arguments: what was held back or never streamed goes out now.
          const rest = call.arguments.startsWith(draft.streamed) ? call.arguments.slice(draft.streamed.length) : ""
          if (rest.length > 0) out.push({ type: "function_call_arguments_delta", call_id: call.call_id, delta: rest })
          out.push({ type: "function_call_done", call_id: call.call_id, name: call.name, arguments: call.arguments })
        }
        return undefined
      }
      case "reasoning": {
        const decoded = this.decoders.reasoningItem(event, e.item, "item")
        if (Result.isFailure(decoded)) return decoded.failure
        const item = decoded.success
        const draft: Draft = {
          type: "reasoning",
          id: item.id,
          summary: new Map((item.summary ?? []).map((part, i) => [i, part.text])),
          content: new Map((item.content ?? []).map((part, i) => [i, part.text]))
        }
        if (!done) {
          this.open(index, draft)
          return undefined
        }
        const encrypted = item.encrypted_content ?? undefined
        const settled = settle(draft, statusOf(item.status, "completed"))
        this.items.set(
          index,
          encrypted === undefined || settled.type !== "reasoning" ? settled : { ...settled, encrypted_content: encrypted }
        )
        return undefined
      }
      default: {
        const id = typeof e.item.id === "string" ? e.item.id : `${this.responseId ?? "response"}_output_${index}`
        const status = typeof e.item.status === "string" ? e.item.status : undefined
        this.items.set(index, {
          type: `${extensionPrefix}${typed.success.type}`,
          id,
          status: statusOf(status, done ? "completed" : "in_progress"),
          data: e.item
        })
        return undefined
      }
    }
  }

  /** Ends the turn; `incompleteReason` is set for `response.incomplete`. */
  private finish(
    response: ResponsesEvent.Response,
    incompleteReason: string | undefined,
    out: Array<TurnDelta.TurnDelta>
  ): void {
    this.complete = true
    if (response.model !== undefined) this.model = response.model
    const responseId = response.id ?? this.responseId
    const status = incompleteReason === undefined ? "completed" : "incomplete"
    const items = inOrder(this.items).map((entry) => isDraft(entry) ? settle(entry, status) : entry)
    const output = this.options.output
    const normalized = output === undefined ? items : items.map((item) => normalizeMessage(item, output))
    const usage = response.usage == null ? TokenUsage.empty : usageOf(response.usage)
    if (response.usage != null) out.push({ type: "usage", usage })
    const hasCalls = items.some((item) => item.type === "function_call")
    out.push({
      type: "turn_complete",
      turn: {
        items: normalized,
        usage,
        stopReason: incompleteReason === undefined ? (hasCalls ? "tool_calls" : "stop") : stopReasonOf(incompleteReason),
        ...(this.model === undefined ? {} : { model: this.model }),
        ...(responseId === undefined ? {} : { responseId }),
        ...(incompleteReason === undefined ? {} : { providerStopReason: incompleteReason })
      }
    })
  }
}

const isDraft = (entry: Item.Item | Draft): entry is Draft => !("status" in entry)

/** A draft as the item it had become. */
const settle = (draft: Draft, status: Item.Status): Item.Item => {
  switch (draft.type) {
    case "message":
      return {
        type: "message",
        id: draft.id,
        status,
        role: "assistant",
        content: inOrder(draft.parts).map((part): Item.ContentPart => ({ ...part })),
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
    ? { ...item, content: item.content.map((part) => part.type === "output_text" ? { ...part, text: normalize(part.text) } : part) }
    : item

/** The schema decoders of a provider's events. */
const decoders = (provider: string) => {
  const decoder = <A>(schema: Schema.Decoder<A>) => ProviderStream.valueDecoder(provider, schema)
  const outputText = decoder(ResponsesEvent.OutputTextPart)
  const refusal = decoder(ResponsesEvent.RefusalPart)
  const typed = decoder(Typed)
  return {
    typed,
    lifecycle: decoder(ResponsesEvent.Lifecycle),
    item: decoder(ResponsesEvent.OutputItemEvent),
    messageItem: decoder(ResponsesEvent.MessageItem),
    functionCallItem: decoder(ResponsesEvent.FunctionCallItem),
    reasoningItem: decoder(ResponsesEvent.ReasoningItem),
    part: decoder(ResponsesEvent.ContentPartEvent),
    /** A content part as a `Part`, or `undefined` for a kind this layer does not map (audio, ...). */
    contentPart: (event: string, raw: unknown, at = "part"): Result.Result<Part | undefined, AiError.MalformedEvent> => {
      const kind = typed(event, raw, at)
      if (Result.isFailure(kind)) return Result.fail(kind.failure)
      switch (kind.success.type) {
        case "output_text":
          return Result.map(outputText(event, raw, at), ({ text }): Part => ({ type: "output_text", text }))
        case "refusal":
          return Result.map(refusal(event, raw, at), (part): Part => ({ type: "refusal", refusal: part.refusal }))
        default:
          return Result.succeed(undefined)
      }
    },
    delta: decoder(ResponsesEvent.ContentDelta),
    textDone: decoder(ResponsesEvent.ContentTextDone),
    refusalDone: decoder(ResponsesEvent.RefusalDone),
    summaryDelta: decoder(ResponsesEvent.SummaryDelta),
    summaryDone: decoder(ResponsesEvent.SummaryDone),
    argumentsDelta: decoder(ResponsesEvent.ArgumentsDelta),
    argumentsDone: decoder(ResponsesEvent.ArgumentsDone),
    error: decoder(ResponsesEvent.ErrorEvent)
  }
}

type Decoders = ReturnType<typeof decoders>

const made = new Map<string, Decoders>()

const decodersOf = (provider: string): Decoders => {
  const cached = made.get(provider)
  if (cached !== undefined) return cached
  const fresh = decoders(provider)
  made.set(provider, fresh)
  return fresh
}
