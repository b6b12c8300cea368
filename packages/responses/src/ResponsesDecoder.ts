/**
 * Turns the Server-Sent Events of a streaming Responses API call into
 * `TurnDelta`s, assembling the `Turn` on the way.
 *
 * The stream ends with exactly one `turn_complete` (after a `usage` delta when
 * the API reported usage) as soon as `response.completed` or
 * `response.incomplete` arrives. `response.failed` and `error` fail it with
 * the matching `AiError`; an event that does not decode fails it with
 * `AiError.MalformedEvent`; a stream that ends before a terminal event fails
 * with `AiError.IncompleteTurn`. Events of unknown types are skipped.
 *
 * @since 0.1.0
 */
import { AiError, type Item, ProviderHttp, TokenUsage, type Turn, type TurnDelta } from "@agentloop/core"
import { Cause, Effect, Pull, Result, Stream } from "effect"
import * as Arr from "effect/Array"
import type { Sse } from "effect/encoding"
import * as ResponsesEvent from "./ResponsesEvent.ts"

type Part = { type: "output_text"; text: string } | { type: "refusal"; refusal: string }

type Draft =
  | { readonly type: "message"; readonly id: string; readonly parts: Array<Part | undefined> }
  | { readonly type: "function_call"; readonly id: string; readonly call_id: string; readonly name: string; arguments: string }
  | { readonly type: "reasoning"; readonly id: string; readonly summary: Array<string>; readonly content: Array<string> }

/**
 * Maps the `code` (else the `type`) of a failed response or an `error` event
 * to its error; an error that names neither is taken as the server's.
 */
export const errorFromCode = (provider: string, error: ResponsesEvent.ErrorObject): AiError.AiError => {
  const code = error.code ?? error.type ?? undefined
  const message = code === undefined ? error.message : `${error.message} (${code})`
  switch (code) {
    case "rate_limit_exceeded":
    case "too_many_requests":
      return new AiError.RateLimited({ provider, message })
    case "context_length_exceeded":
      return new AiError.ContextLengthExceeded({ provider, message })
    case "invalid_api_key":
      return new AiError.AuthFailed({ provider, status: 401, message })
    case undefined:
    case "server_error":
    case "service_unavailable_error":
    case "vector_store_timeout":
      return new AiError.Unavailable({ provider, message })
    default:
      return new AiError.InvalidRequest({ provider, message })
  }
}

const stopReasonOf = (reason: string | undefined): Turn.StopReason => {
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

const partOf = (part: ResponsesEvent.ContentPart): Part | undefined =>
  "text" in part
    ? { type: "output_text", text: part.text }
    : "refusal" in part
    ? { type: "refusal", refusal: part.refusal }
    : undefined

/** The mutable state of one turn; `feed` one event at a time. */
class Assembler {
  readonly provider: string
  model: string | undefined
  finished = false
  /** Items by output index: finished items, or drafts still streaming. */
  readonly items = new Map<number, Item.Item | Draft>()
  /** Output index of each item id, for the events that name an item only by id. */
  readonly indexOf = new Map<string, number>()

  constructor(provider: string, model: string | undefined) {
    this.provider = provider
    this.model = model
  }

  /** Handles one event, pushing the deltas it produces; returns the error that ends the turn, if any. */
  feed(event: ResponsesEvent.KnownEvent, out: Array<TurnDelta.TurnDelta>): AiError.AiError | undefined {
    switch (event.type) {
      case "response.created":
      case "response.in_progress": {
        if (event.response.model !== undefined) this.model = event.response.model
        return undefined
      }
      case "response.output_item.added": {
        const { item, output_index } = event
        this.start(item, output_index, out)
        return undefined
      }
      case "response.output_item.done": {
        const { item, output_index } = event
        this.finish(item, output_index, out)
        return undefined
      }
      case "response.content_part.added":
      case "response.content_part.done": {
        const e = event
        const draft = this.draftOf(e.item_id)
        const part = partOf(e.part)
        if (draft?.type === "message" && part !== undefined) draft.parts[e.content_index] = part
        return undefined
      }
      case "response.output_text.delta": {
        const e = event
        this.appendPart(e.item_id, e.content_index, "output_text", e.delta)
        out.push({ type: "text_delta", delta: e.delta })
        return undefined
      }
      case "response.output_text.done": {
        const e = event
        const draft = this.draftOf(e.item_id)
        if (draft?.type === "message") draft.parts[e.content_index] = { type: "output_text", text: e.text }
        return undefined
      }
      case "response.refusal.delta": {
        const e = event
        this.appendPart(e.item_id, e.content_index, "refusal", e.delta)
        out.push({ type: "refusal_delta", delta: e.delta })
        return undefined
      }
      case "response.refusal.done": {
        const e = event
        const draft = this.draftOf(e.item_id)
        if (draft?.type === "message") draft.parts[e.content_index] = { type: "refusal", refusal: e.refusal }
        return undefined
      }
      case "response.function_call_arguments.delta": {
        const e = event
        const draft = this.draftOf(e.item_id)
        if (draft?.type !== "function_call") {
          return this.malformed(event.type, `no function call ${e.item_id} is streaming`)
        }
        draft.arguments += e.delta
        out.push({ type: "function_call_arguments_delta", call_id: draft.call_id, delta: e.delta })
        return undefined
      }
      case "response.function_call_arguments.done": {
        const e = event
        const draft = this.draftOf(e.item_id)
        if (draft?.type === "function_call") draft.arguments = e.arguments
        return undefined
      }
      case "response.reasoning_summary_text.delta": {
        const e = event
        const draft = this.draftOf(e.item_id)
        if (draft?.type === "reasoning") draft.summary[e.summary_index] = (draft.summary[e.summary_index] ?? "") + e.delta
        out.push({ type: "reasoning_delta", delta: e.delta })
        return undefined
      }
      case "response.reasoning_summary_text.done": {
        const e = event
        const draft = this.draftOf(e.item_id)
        if (draft?.type === "reasoning") draft.summary[e.summary_index] = e.text
        return undefined
      }
      case "response.reasoning_text.delta": {
        const e = event
        const draft = this.draftOf(e.item_id)
        if (draft?.type === "reasoning") draft.content[e.content_index] = (draft.content[e.content_index] ?? "") + e.delta
        out.push({ type: "reasoning_delta", delta: e.delta })
        return undefined
      }
      case "response.reasoning_text.done": {
        const e = event
        const draft = this.draftOf(e.item_id)
        if (draft?.type === "reasoning") draft.content[e.content_index] = e.text
        return undefined
      }
      case "response.completed": {
        this.complete(event.response, undefined, out)
        return undefined
      }
      case "response.incomplete": {
        const response = event.response
        this.complete(response, response.incomplete_details?.reason ?? "unknown", out)
        return undefined
      }
      case "response.failed": {
        const response = event.response
        return errorFromCode(this.provider, response.error ?? { message: "the response failed without an error" })
      }
      case "error":
        return errorFromCode(
          this.provider,
          event.error ?? { code: event.code ?? null, message: event.message ?? "the stream failed without a message" }
        )
    }
  }

  draftOf(itemId: string): Draft | undefined {
    const index = this.indexOf.get(itemId)
    if (index === undefined) return undefined
    const entry = this.items.get(index)
    return entry !== undefined && isDraft(entry) ? entry : undefined
  }

  malformed(event: string, message: string): AiError.MalformedEvent {
    return new AiError.MalformedEvent({ provider: this.provider, event, message })
  }

  appendPart(itemId: string, index: number, type: Part["type"], delta: string): void {
    const draft = this.draftOf(itemId)
    if (draft?.type !== "message") return
    const part = draft.parts[index]
    if (part === undefined || part.type !== type) {
      draft.parts[index] = type === "output_text" ? { type, text: delta } : { type, refusal: delta }
    } else if (part.type === "output_text") {
      part.text += delta
    } else {
      part.refusal += delta
    }
  }

  start(item: ResponsesEvent.OutputItem, index: number, out: Array<TurnDelta.TurnDelta>): void {
    if (ResponsesEvent.isMessageItem(item)) {
      this.open(index, item.id, { type: "message", id: item.id, parts: item.content.map(partOf) })
    } else if (ResponsesEvent.isFunctionCallItem(item)) {
      this.open(index, item.id, {
        type: "function_call",
        id: item.id,
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments
      })
      out.push({ type: "function_call_start", call_id: item.call_id, name: item.name })
    } else if (ResponsesEvent.isReasoningItem(item)) {
      this.open(index, item.id, {
        type: "reasoning",
        id: item.id,
        summary: (item.summary ?? []).map((part) => part.text),
        content: (item.content ?? []).map((part) => part.text)
      })
    }
  }

  open(index: number, id: string, draft: Draft): void {
    this.indexOf.set(id, index)
    this.items.set(index, draft)
  }

  finish(item: ResponsesEvent.OutputItem, index: number, out: Array<TurnDelta.TurnDelta>): void {
    if (ResponsesEvent.isMessageItem(item)) {
      this.items.set(index, {
        type: "message",
        id: item.id,
        status: item.status ?? "completed",
        role: "assistant",
        content: item.content.flatMap((part) => {
          const mapped = partOf(part)
          return mapped === undefined ? [] : [mapped]
        })
      })
    } else if (ResponsesEvent.isFunctionCallItem(item)) {
      // A call announced only by its done event still gets its start delta.
      if (!this.items.has(index)) out.push({ type: "function_call_start", call_id: item.call_id, name: item.name })
      this.items.set(index, {
        type: "function_call",
        id: item.id,
        status: item.status ?? "completed",
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments
      })
      out.push({ type: "function_call_done", call_id: item.call_id, name: item.name, arguments: item.arguments })
    } else if (ResponsesEvent.isReasoningItem(item)) {
      const encrypted = item.encrypted_content ?? undefined
      const reasoning: Item.Reasoning = {
        type: "reasoning",
        id: item.id,
        status: item.status ?? "completed",
        content: (item.content ?? []).map((part) => ({ type: "output_text", text: part.text })),
        summary: (item.summary ?? []).map((part) => ({ type: "output_text", text: part.text })),
        ...(encrypted === undefined ? {} : { encrypted_content: encrypted })
      }
      this.items.set(index, reasoning)
    }
  }

  /** Ends the turn; `incompleteReason` is set for `response.incomplete`. */
  complete(
    response: ResponsesEvent.Response,
    incompleteReason: string | undefined,
    out: Array<TurnDelta.TurnDelta>
  ): void {
    this.finished = true
    if (response.model !== undefined) this.model = response.model
    const items = [...this.items.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, entry]) => isDraft(entry) ? settle(entry, incompleteReason === undefined ? "completed" : "incomplete") : entry)
    const usage = response.usage == null ? TokenUsage.empty : usageOf(response.usage)
    if (response.usage != null) out.push({ type: "usage", usage })
    const hasCalls = items.some((item) => item.type === "function_call")
    const turn: Turn.Turn = {
      items,
      usage,
      stopReason: incompleteReason === undefined ? (hasCalls ? "tool_calls" : "stop") : stopReasonOf(incompleteReason),
      ...(this.model === undefined ? {} : { model: this.model }),
      responseId: response.id,
      ...(incompleteReason === undefined ? {} : { providerStopReason: incompleteReason })
    }
    out.push({ type: "turn_complete", turn })
  }
}

const isDraft = (entry: Item.Item | Draft): entry is Draft => !("status" in entry)

/** A draft the stream never finished, as the item it had become. */
const settle = (draft: Draft, status: Item.Status): Item.Item => {
  switch (draft.type) {
    case "message":
      return {
        type: "message",
        id: draft.id,
        status,
        role: "assistant",
        content: draft.parts.filter((part): part is Part => part !== undefined)
      }
    case "function_call":
      return {
        type: "function_call",
        id: draft.id,
        status,
        call_id: draft.call_id,
        name: draft.name,
        arguments: draft.arguments
      }
    case "reasoning":
      return {
        type: "reasoning",
        id: draft.id,
        status,
        content: draft.content.map((text) => ({ type: "output_text" as const, text })),
        summary: draft.summary.map((text) => ({ type: "output_text" as const, text }))
      }
  }
}

/**
 * Decodes the events of one streaming response into turn deltas.
 * `model` is the requested model, reported when the stream does not name one.
 */
export const decode = (provider: string, model?: string) => {
  const decodeAny = ProviderHttp.decodeEvent(provider, ResponsesEvent.Event)
  // The API names every event in its `event:` field; decoding with that one type's schema is
  // several times cheaper than trying the union, and an unknown name is skipped without parsing.
  const byName = new Map<string, (sse: Sse.Event) => Result.Result<ResponsesEvent.KnownEvent, AiError.MalformedEvent>>(
    ResponsesEvent.known.map((schema) => [
      schema.fields.type.literal,
      ProviderHttp.decodeEvent<ResponsesEvent.KnownEvent>(provider, schema)
    ])
  )
  const decodeEvent = (sse: Sse.Event): Result.Result<ResponsesEvent.Event, AiError.MalformedEvent> | undefined =>
    sse.event === "message" ? decodeAny(sse) : byName.get(sse.event)?.(sse)
  return <E, R>(events: Stream.Stream<Sse.Event, E, R>): Stream.Stream<TurnDelta.TurnDelta, E | AiError.AiError, R> =>
    Stream.transformPull(events, (upstream) =>
      Effect.sync(() => {
        const assembler = new Assembler(provider, model)
        let failure: AiError.AiError | undefined
        const ended = Pull.catchDone(upstream, () =>
          Effect.fail(
            new AiError.IncompleteTurn({ message: `${provider}: the stream ended before response.completed` })
          ))
        const pull: Pull.Pull<Arr.NonEmptyReadonlyArray<TurnDelta.TurnDelta>, E | AiError.AiError> = Effect.suspend(() => {
          if (failure !== undefined) return Effect.fail(failure)
          if (assembler.finished) return Cause.done()
          return Effect.flatMap(ended, (chunk) => {
            const out: Array<TurnDelta.TurnDelta> = []
            for (const sse of chunk) {
              const decoded = decodeEvent(sse)
              if (decoded === undefined) continue
              const error = Result.isFailure(decoded)
                ? decoded.failure
                : ResponsesEvent.isKnown(decoded.success)
                ? assembler.feed(decoded.success, out)
                : undefined
              if (error !== undefined) {
                failure = error
                break
              }
              if (assembler.finished) break
            }
            // Deltas decoded before a failure still reach the consumer; the failure follows on the next pull.
            return Arr.isArrayNonEmpty(out) ? Effect.succeed(out) : pull
          })
        })
        return pull
      }))
}
