/**
 * The Chat Completions wire format written out (a `ProviderWire`): the chunks
 * in which a server streams a `Turn`, and the HTTP answers with which it
 * reports each `AiError`, as OpenAI writes them. A loopback server answers
 * with them, and the `ChatCompletions` layer decodes them back to the same
 * turn and the same error.
 *
 * ```ts
 * const frames = ChatCompletionsWire.wire.turn(turn, { chunkSize: 4 })   // `data:` chunks, then `data: [DONE]`
 * const answer = ChatCompletionsWire.wire.error(new AiError.RateLimited({ provider: "chat-completions", message: "slow down" }))
 * ```
 *
 * What the wire has no room for is left out, so it does not come back: item
 * ids and statuses (the decoder names items after the answer's id, and marks
 * the last one of a turn cut by the token limit `incomplete`). A turn without
 * a model is streamed as {@link defaultModel}, one without a response id with
 * {@link defaultResponseId}.
 *
 * @since 0.2.0
 */
import { type AiError, type Item, type TokenUsage, type Turn } from "@agentloop/core"
import * as ProviderWire from "@agentloop/core/provider/ProviderWire"
import * as Duration from "effect/Duration"
import * as ChatCompletionsDecoder from "../ChatCompletionsDecoder.ts"
import * as ChatCompletionsError from "../ChatCompletionsError.ts"
import * as ChatCompletionsReasoningDetails from "../ChatCompletionsReasoningDetails.ts"

/**
 * The id a turn that has none is streamed with.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultResponseId = "chatcmpl-loopback"

/**
 * The model a turn that names none is streamed as.
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultModel = "loopback-model"

const fail = (message: string): never => {
  throw new Error(`ChatCompletionsWire: ${message}`)
}

/** The chunks of one answer, each with the answer's `id` and `model`, as servers repeat them. */
class Writer {
  readonly frames: Array<string> = []
  readonly id: string
  readonly model: string

  constructor(id: string, model: string) {
    this.id = id
    this.model = model
  }

  chunk(fields: Readonly<Record<string, unknown>>): void {
    const chunk = { id: this.id, object: "chat.completion.chunk", created: 1_700_000_000, model: this.model, ...fields }
    this.frames.push(`data: ${JSON.stringify(chunk)}\n\n`)
  }

  delta(delta: Readonly<Record<string, unknown>>): void {
    this.chunk({ choices: [{ index: 0, delta, logprobs: null, finish_reason: null }] })
  }
}

/** What a turn's items say, in the order the wire carries them: reasoning, then the message, then the calls. */
interface Answer {
  readonly reasoning: string
  readonly details: ReadonlyArray<Readonly<Record<string, unknown>>> | undefined
  readonly text: string
  /** The text's citations as `annotations` of a delta (OpenAI's `url_citation`). */
  readonly annotations: ReadonlyArray<unknown>
  readonly refusal: string
  readonly calls: ReadonlyArray<Item.FunctionCall>
}

/** A citation as a delta's annotation; the wire has only URL citations (no cited text, no provider data). */
const annotationOf = (citation: Item.Citation, where: string): unknown => {
  if (citation.type !== "url_citation" || citation.cited_text !== undefined || citation.provider_data !== undefined) {
    return fail(
      `${where} cites ${JSON.stringify(citation)}; the wire's annotations are url_citations (url, title, span)`
    )
  }
  const { end_index, start_index, title, url } = citation
  return {
    type: "url_citation",
    url_citation: {
      url,
      ...(title === undefined ? {} : { title }),
      ...(start_index === undefined ? {} : { start_index }),
      ...(end_index === undefined ? {} : { end_index })
    }
  }
}

const describe = (item: Item.Item, position: number): string => `item ${position} (${item.type} "${item.id}")`

const reasoningOf = (item: Item.Reasoning, where: string) => {
  if (item.summary !== undefined) fail(`${where} has a summary; the wire streams reasoning text only`)
  const [part, ...more] = item.content
  if (more.length > 0) fail(`${where} has ${item.content.length} parts; the wire streams one reasoning text`)
  if (part !== undefined && (part.type !== "output_text" || part.text === "")) {
    fail(`${where} has a ${part.type} part that is not non-empty output_text`)
  }
  const text = part?.type === "output_text" ? part.text : ""
  const encrypted = item.encrypted_content
  if (encrypted === undefined) {
    return text === ""
      ? fail(`${where} has neither text nor reasoning_details to stream`)
      : { text, details: undefined }
  }
  const details = ChatCompletionsReasoningDetails.fromEncrypted(encrypted)
  if (details === undefined || details.length === 0) {
    return fail(`${where} has encrypted_content that is not OpenRouter's reasoning_details (a JSON array of objects)`)
  }
  const merger = ChatCompletionsReasoningDetails.merger()
  merger.add(details)
  if (ChatCompletionsReasoningDetails.toEncrypted(merger.details()) !== encrypted) {
    fail(`${where} has reasoning_details that would not come back as they are (pieces sharing an index merge)`)
  }
  if (text === "" && details.some((detail) => (detail.text ?? detail.summary ?? "") !== "")) {
    fail(`${where} has no text, but its reasoning_details' text would come back as its text`)
  }
  return { text, details }
}

const messageOf = (item: Item.Message, where: string) => {
  if (item.role !== "assistant") fail(`${where} is a ${item.role} message; an answer streams only the assistant's`)
  if (item.phase !== undefined) fail(`${where} has a phase ("${item.phase}"); the wire has none`)
  let text = ""
  let annotations: ReadonlyArray<unknown> = []
  let refusal = ""
  for (const part of item.content) {
    if (part.type === "output_text" && part.text !== "" && text === "" && refusal === "") {
      text = part.text
      annotations = (part.annotations ?? []).map((citation) => annotationOf(citation, where))
    } else if (part.type === "refusal" && part.refusal !== "" && refusal === "") refusal = part.refusal
    else fail(`${where} streams as one non-empty output_text part then one non-empty refusal part; it has others`)
  }
  if (text === "" && refusal === "") fail(`${where} has no part`)
  return { text, annotations, refusal }
}

/** The answer a turn's items make, or a throw naming the item the wire cannot carry where it stands. */
const answerOf = (items: ReadonlyArray<Item.Item>): Answer => {
  let stage = 0
  let answer: Answer = { reasoning: "", details: undefined, text: "", annotations: [], refusal: "", calls: [] }
  for (const [position, item] of items.entries()) {
    const where = describe(item, position)
    switch (item.type) {
      case "reasoning": {
        if (stage > 0) {
          fail(`${where} follows the answer's reasoning, message or calls; the wire has one reasoning, first`)
        }
        const { details, text } = reasoningOf(item, where)
        answer = { ...answer, reasoning: text, details }
        stage = 1
        break
      }
      case "message": {
        if (stage > 1) fail(`${where} follows a message or calls; the wire has one message, before the calls`)
        answer = { ...answer, ...messageOf(item, where) }
        stage = 2
        break
      }
      case "function_call":
        if (item.call_id === "" || item.name === "") fail(`${where} has an empty call_id or name`)
        answer = { ...answer, calls: [...answer.calls, item] }
        stage = 3
        break
      default:
        fail(`${where} is not in an answer: the wire streams reasoning, an assistant message and function calls`)
    }
  }
  return answer
}

/** The `finish_reason` that maps back to the turn's stop reason: the turn's own raw reason when it does. */
const finishReasonOf = (turn: Turn.Turn, hasCalls: boolean): string => {
  const raw = turn.providerStopReason
  if (
    raw !== undefined && raw.toLowerCase() !== "error" &&
    ChatCompletionsDecoder.stopReason(raw, hasCalls) === turn.stopReason
  ) {
    return raw
  }
  switch (turn.stopReason) {
    case "stop":
      return hasCalls
        ? fail("a turn with function calls stops for tool_calls; stopReason \"stop\" cannot be sent with them")
        : "stop"
    case "tool_calls":
      return hasCalls
        ? "tool_calls"
        : fail("stopReason \"tool_calls\" needs a function call: a turn without one stops for \"stop\"")
    case "max_tokens":
      return "length"
    case "content_filter":
      return "content_filter"
    case "other":
      return "other"
    case "malformed_tool_call":
      return fail("the wire has no finish_reason for a malformed tool call (stopReason \"malformed_tool_call\")")
  }
}

/**
 * The usage as a server reports it, details only where the turn has them (a `0`
 * the turn never had would come back as a count it does not carry); cache
 * writes as OpenRouter reports them.
 */
const usageOf = (usage: TokenUsage.TokenUsage, cost: number | undefined) => ({
  prompt_tokens: usage.input,
  completion_tokens: usage.output,
  total_tokens: usage.total,
  ...(usage.cachedInput === undefined && usage.cacheWrite === undefined ? {} : {
    prompt_tokens_details: {
      ...(usage.cachedInput === undefined ? {} : { cached_tokens: usage.cachedInput }),
      ...(usage.cacheWrite === undefined ? {} : { cache_write_tokens: usage.cacheWrite })
    }
  }),
  ...(usage.reasoning === undefined ? {} : { completion_tokens_details: { reasoning_tokens: usage.reasoning } }),
  ...(cost === undefined ? {} : { cost })
})

const turn = (turn: Turn.Turn, options: ProviderWire.TurnOptions = {}): ReadonlyArray<string> => {
  const size = options.chunkSize ?? 16
  if (!(size >= 1) || !Number.isInteger(size)) fail(`chunkSize must be a positive integer, got ${size}`)
  const answer = answerOf(turn.items)
  const finishReason = finishReasonOf(turn, answer.calls.length > 0)
  const out = new Writer(turn.responseId ?? defaultResponseId, turn.model ?? defaultModel)
  out.delta({ role: "assistant", content: "" })
  const reasoning = ProviderWire.pieces(answer.reasoning, size)
  if (answer.details === undefined) { for (const piece of reasoning) out.delta({ reasoning_content: piece }) }
  else {
    // OpenRouter sends the text as `reasoning` and the details beside it, which the decoder reads once.
    const last = reasoning.pop()
    for (const piece of reasoning) out.delta({ reasoning: piece })
    out.delta({ ...(last === undefined ? {} : { reasoning: last }), reasoning_details: answer.details })
  }
  for (const piece of ProviderWire.pieces(answer.text, size)) out.delta({ content: piece })
  // OpenAI's search models send the text's annotations after it, in a delta of their own.
  if (answer.annotations.length > 0) out.delta({ annotations: answer.annotations })
  for (const piece of ProviderWire.pieces(answer.refusal, size)) out.delta({ refusal: piece })
  for (const [index, call] of answer.calls.entries()) {
    out.delta({
      tool_calls: [{ index, id: call.call_id, type: "function", function: { name: call.name, arguments: "" } }]
    })
    for (const piece of ProviderWire.pieces(call.arguments, size)) {
      out.delta({ tool_calls: [{ index, function: { arguments: piece } }] })
    }
  }
  if (options.complete === false) return out.frames
  out.chunk({ choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason }] })
  out.chunk({ choices: [], usage: usageOf(turn.usage, turn.cost) })
  out.frames.push("data: [DONE]\n\n")
  return out.frames
}

const json = (
  status: number,
  error: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>> = {}
): ProviderWire.HttpAnswer => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify({ error })
})

const errorObject = (message: string, type: string, code: string | null) => ({ message, type, param: null, code })

/** The message the server sent: the layer adds the code to an error it reads by its code, so that suffix is taken off. */
const serverMessage = (message: string, code: string): string =>
  message.endsWith(` (${code})`) ? message.slice(0, -(code.length + 3)) : message

/** `Retry-After` in whole seconds, rounded up; a wait that is not whole seconds also goes, exact, in `retry-after-ms`. */
const retryHeaders = (retryAfter: Duration.Duration | undefined): Record<string, string> => {
  const millis = retryAfter === undefined ? Number.NaN : Duration.toMillis(retryAfter)
  if (!Number.isFinite(millis)) return {}
  const seconds = Math.ceil(millis / 1000)
  return seconds * 1000 === millis
    ? { "retry-after": String(seconds) }
    : { "retry-after": String(seconds), "retry-after-ms": String(millis) }
}

const between = (status: number | undefined, low: number, high: number): status is number =>
  status !== undefined && Number.isInteger(status) && status >= low && status <= high

/**
 * A 4xx the layer reads as an invalid request: not one it reads as auth,
 * quota, timeout, size or rate limit, and not a 400 whose message reads as a
 * context-length error (which becomes a 422, another "invalid").
 */
const invalidRequestStatus = (status: number | undefined, message: string): number => {
  const invalid = between(status, 400, 499) && ![401, 402, 403, 408, 413, 429].includes(status) ? status : 400
  return invalid === 400 && ChatCompletionsError.isContextLengthMessage(message) ? 422 : invalid
}

/** A `200` event stream: the answer starts, `frames` follow, and the body ends without a `finish_reason`. */
const stream = (frames: (out: Writer) => void): ProviderWire.HttpAnswer => {
  const out = new Writer(defaultResponseId, defaultModel)
  out.delta({ role: "assistant", content: "" })
  frames(out)
  return { status: 200, headers: { "content-type": "text/event-stream" }, body: out.frames.join("") }
}

const error = (error: AiError.AiError): ProviderWire.HttpAnswer => {
  switch (error._tag) {
    case "AuthFailed":
      return error.status === 403
        ? json(403, errorObject(error.message, "invalid_request_error", null))
        : json(401, errorObject(error.message, "invalid_request_error", "invalid_api_key"))
    case "RateLimited":
      return json(429, errorObject(error.message, "requests", "rate_limit_exceeded"), retryHeaders(error.retryAfter))
    case "QuotaExceeded":
      return json(
        between(error.status, 400, 599) ? error.status : 429,
        errorObject(serverMessage(error.message, "insufficient_quota"), "insufficient_quota", "insufficient_quota")
      )
    case "Timeout":
      return json(408, errorObject(error.message, "timeout", null))
    case "ContextLengthExceeded": {
      const message = serverMessage(error.message, "context_length_exceeded")
      return json(400, {
        ...errorObject(message, "invalid_request_error", "context_length_exceeded"),
        param: "messages"
      })
    }
    case "InvalidRequest":
      return json(
        invalidRequestStatus(error.status, error.message),
        errorObject(error.message, "invalid_request_error", null)
      )
    case "Unavailable":
      return json(
        between(error.status, 500, 599) && error.status !== 504 ? error.status : 503,
        errorObject(error.message, "server_error", null),
        retryHeaders(error.retryAfter)
      )
    case "MalformedEvent":
      return stream((out) => out.frames.push(`data: {"id":"${defaultResponseId}","choices":[{"delta":\n\n`))
    case "IncompleteTurn":
      return stream(() => {})
  }
}

/**
 * The Chat Completions wire format.
 *
 * `turn` streams a role delta, the reasoning (`reasoning_content`, or
 * OpenRouter's `reasoning` with its `reasoning_details` when the reasoning
 * item keeps them), the text (`content`), the refusal, each call (its id and
 * name, then its arguments in pieces), a chunk with the `finish_reason`, a
 * usage chunk with empty `choices`, and `data: [DONE]`. It throws on what an
 * answer cannot hold: items other than one reasoning item, one assistant
 * message (one text part, then one refusal part) and function calls, in that
 * order; a stop reason the layer would read as another (`stop` with calls,
 * `tool_calls` without, `malformed_tool_call`).
 *
 * `error` answers with OpenAI's error body (`{ error: { message, type, param,
 * code } }`) and the status the layer maps back to the same tag, or, for
 * `MalformedEvent` and `IncompleteTurn`, a `200` stream that breaks that way;
 * the layer writes the messages of those two itself.
 *
 * @example
 * ```ts
 * import { ChatCompletionsWire } from "@agentloop/chat-completions/testing"
 * import { AiError } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 *
 * // A turn as the API streams it, in pieces of 4 characters...
 * const frames = ChatCompletionsWire.wire.turn(MockLanguageModel.textTurn("Hello, world"), { chunkSize: 4 })
 * console.log(frames.length) // 7
 * // ...and an error as the API answers it.
 * const answer = ChatCompletionsWire.wire.error(new AiError.RateLimited({ provider: "chat-completions", message: "slow down" }))
 * console.log(answer.status) // 429
 * ```
 *
 * @since 0.2.0
 * @category wire
 */
export const wire: ProviderWire.ProviderWire = {
  provider: ChatCompletionsError.provider,
  turn,
  error
}
