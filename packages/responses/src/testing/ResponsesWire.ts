/**
 * The OpenAI Responses API's wire format written out (a `ProviderWire`): the
 * streaming events in which the API sends a `Turn`, and the HTTP answers with
 * which it reports each `AiError`. A loopback server answers with them, and
 * the `Responses` layer decodes them back to the same turn and the same error.
 *
 * ```ts
 * const frames = ResponsesWire.wire.turn(turn, { chunkSize: 4 })   // SSE frames, `event:` + `data:` each
 * const answer = ResponsesWire.wire.error(new AiError.RateLimited({ provider: "openai", message: "slow down" }))
 * ```
 *
 * What the wire has no room for is left out, so it does not come back: a
 * turn's `cost`, and its `providerStopReason` unless the turn ended
 * incomplete. A turn without a model is streamed as `Responses.defaultModel`,
 * one without a response id with {@link defaultResponseId}.
 *
 * @since 0.1.0
 */
import { type AiError, type Item, ProviderHttp, type TokenUsage, type Turn } from "@agentloop/core"
import * as ProviderWire from "@agentloop/core/provider/ProviderWire"
import * as Duration from "effect/Duration"
import { defaultModel } from "../Responses.ts"
import * as ResponsesCitation from "../ResponsesCitation.ts"
import * as ResponsesDecoder from "../ResponsesDecoder.ts"
import * as ResponsesError from "../ResponsesError.ts"

/**
 * The response id a turn that has none is streamed with.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultResponseId = "resp_loopback"

const fail = (message: string): never => {
  throw new Error(`ResponsesWire: ${message}`)
}

/** The events of one response, each with its `type` and the next `sequence_number`, as the API numbers them. */
class Writer {
  readonly frames: Array<string> = []
  sequence = 0

  event(type: string, fields: Readonly<Record<string, unknown>>): void {
    const data = JSON.stringify({ type, sequence_number: this.sequence++, ...fields })
    this.frames.push(`event: ${type}\ndata: ${data}\n\n`)
  }
}

const usageOf = (usage: TokenUsage.TokenUsage) => ({
  input_tokens: usage.input,
  // Details only when the turn has them: a `0` the turn never had would decode as a count it does not carry.
  ...(usage.cachedInput === undefined ? {} : { input_tokens_details: { cached_tokens: usage.cachedInput } }),
  output_tokens: usage.output,
  ...(usage.reasoning === undefined ? {} : { output_tokens_details: { reasoning_tokens: usage.reasoning } }),
  total_tokens: usage.total
})

const responseObject = (
  id: string,
  model: string,
  status: "in_progress" | "completed" | "incomplete",
  rest: Readonly<Record<string, unknown>> = {}
) => ({
  id,
  object: "response",
  status,
  error: null,
  incomplete_details: null,
  model,
  output: [],
  usage: null,
  ...rest
})

/** How the response ends: `response.completed`, or `response.incomplete` with the reason that maps to the stop reason. */
const endOf = (turn: Turn.Turn): { readonly incomplete: string | undefined } => {
  const calls = turn.items.some((item) => item.type === "function_call")
  switch (turn.stopReason) {
    case "stop":
      return calls
        ? fail(
          "a completed response with function calls stops for tool_calls; stopReason \"stop\" cannot be sent with them"
        )
        : { incomplete: undefined }
    case "tool_calls":
      return calls
        ? { incomplete: undefined }
        : fail("stopReason \"tool_calls\" needs a function call: a completed response without one stops for \"stop\"")
    case "max_tokens":
      return { incomplete: "max_output_tokens" }
    case "content_filter":
      return { incomplete: "content_filter" }
    case "other": {
      const reason = turn.providerStopReason
      const mapsElsewhere = reason === undefined || reason === "max_output_tokens" || reason === "content_filter"
      return { incomplete: mapsElsewhere ? "other" : reason }
    }
    case "malformed_tool_call":
      return fail("the Responses API has no stop reason for a malformed tool call (stopReason \"malformed_tool_call\")")
  }
}

type WirePart =
  | {
    readonly type: "output_text"
    readonly annotations: ReadonlyArray<{ readonly [key: string]: unknown }>
    readonly logprobs: ReadonlyArray<never>
    readonly text: string
  }
  | { readonly type: "refusal"; readonly refusal: string }

/** A citation as the API annotates a text with it; one the API has no room for cannot come back, and fails. */
const annotation = (item: Item.Message, citation: Item.Citation) => {
  const written = ResponsesCitation.toWire(citation)
  const exact = citation.cited_text === undefined && (citation.type === "file_citation" || citation.title !== undefined)
  return written !== undefined && exact ? written : fail(
    `message ${item.id} cites ${JSON.stringify(citation)}; the API annotates a text with a url_citation ` +
      "(title and span, no cited text) or with an annotation it sent (provider_data x-openai.*)"
  )
}

const messagePart = (item: Item.Message, part: Item.ContentPart): WirePart =>
  part.type === "output_text"
    ? {
      type: "output_text",
      annotations: (part.annotations ?? []).map((citation) => annotation(item, citation)),
      logprobs: [],
      text: part.text
    }
    : part.type === "refusal"
    ? part
    : fail(`assistant message ${item.id} has an ${part.type} part; the API streams only output_text and refusal parts`)

const reasoningText = (item: Item.Reasoning, part: Item.ContentPart, where: string): string =>
  part.type === "output_text"
    ? part.text
    : fail(`reasoning item ${item.id} has a ${part.type} part in its ${where}; the API streams only text there`)

/** The events of an assistant message; returns the item as `response.output_item.done` carries it. */
const message = (out: Writer, index: number, item: Item.Message, size: number): unknown => {
  if (item.role !== "assistant") {
    fail(`message ${item.id} is a ${item.role} message; a response streams only assistant messages`)
  }
  const parts = item.content.map((part) => messagePart(item, part))
  const phase = item.phase === undefined ? {} : { phase: item.phase }
  const added = { id: item.id, type: "message", status: "in_progress", content: [], role: "assistant", ...phase }
  out.event("response.output_item.added", { output_index: index, item: added })
  for (const [content_index, part] of parts.entries()) {
    const at = { item_id: item.id, output_index: index, content_index }
    if (part.type === "output_text") {
      out.event("response.content_part.added", { ...at, part: { ...part, text: "", annotations: [] } })
      for (const delta of ProviderWire.pieces(part.text, size)) {
        out.event("response.output_text.delta", { ...at, delta, logprobs: [] })
      }
      for (const [annotation_index, annotation] of part.annotations.entries()) {
        out.event("response.output_text.annotation.added", { ...at, annotation_index, annotation })
      }
      out.event("response.output_text.done", { ...at, text: part.text, logprobs: [] })
    } else {
      out.event("response.content_part.added", { ...at, part: { type: "refusal", refusal: "" } })
      for (const delta of ProviderWire.pieces(part.refusal, size)) out.event("response.refusal.delta", { ...at, delta })
      out.event("response.refusal.done", { ...at, refusal: part.refusal })
    }
    out.event("response.content_part.done", { ...at, part })
  }
  const done = { ...added, status: item.status, content: parts }
  out.event("response.output_item.done", { output_index: index, item: done })
  return done
}

/** The events of a reasoning item: its raw reasoning text (some models), then its summaries. */
const reasoning = (out: Writer, index: number, item: Item.Reasoning, size: number): unknown => {
  const content = item.content.map((part) => reasoningText(item, part, "content"))
  const summary = (item.summary ?? []).map((part) => reasoningText(item, part, "summary"))
  out.event("response.output_item.added", {
    output_index: index,
    item: { id: item.id, type: "reasoning", status: "in_progress", summary: [] }
  })
  for (const [content_index, text] of content.entries()) {
    const at = { item_id: item.id, output_index: index, content_index }
    out.event("response.content_part.added", { ...at, part: { type: "reasoning_text", text: "" } })
    for (const delta of ProviderWire.pieces(text, size)) out.event("response.reasoning_text.delta", { ...at, delta })
    out.event("response.reasoning_text.done", { ...at, text })
    out.event("response.content_part.done", { ...at, part: { type: "reasoning_text", text } })
  }
  for (const [summary_index, text] of summary.entries()) {
    const at = { item_id: item.id, output_index: index, summary_index }
    out.event("response.reasoning_summary_part.added", { ...at, part: { type: "summary_text", text: "" } })
    for (const delta of ProviderWire.pieces(text, size)) {
      out.event("response.reasoning_summary_text.delta", { ...at, delta })
    }
    out.event("response.reasoning_summary_text.done", { ...at, text })
    out.event("response.reasoning_summary_part.done", { ...at, part: { type: "summary_text", text } })
  }
  const done = {
    id: item.id,
    type: "reasoning",
    status: item.status,
    summary: summary.map((text) => ({ type: "summary_text", text })),
    ...(content.length === 0 ? {} : { content: content.map((text) => ({ type: "reasoning_text", text })) }),
    ...(item.encrypted_content === undefined ? {} : { encrypted_content: item.encrypted_content })
  }
  out.event("response.output_item.done", { output_index: index, item: done })
  return done
}

/** The events of a function call: its arguments in pieces. */
const functionCall = (out: Writer, index: number, item: Item.FunctionCall, size: number): unknown => {
  const { call_id, id, name } = item
  const added = { id, type: "function_call", status: "in_progress", arguments: "", call_id, name }
  out.event("response.output_item.added", { output_index: index, item: added })
  const at = { item_id: item.id, output_index: index }
  for (const delta of ProviderWire.pieces(item.arguments, size)) {
    out.event("response.function_call_arguments.delta", { ...at, delta })
  }
  out.event("response.function_call_arguments.done", { ...at, arguments: item.arguments })
  const done = { ...added, status: item.status, arguments: item.arguments }
  out.event("response.output_item.done", { output_index: index, item: done })
  return done
}

const isStatus = (status: unknown): status is Item.Status =>
  status === "in_progress" || status === "completed" || status === "incomplete" || status === "failed"

/**
 * An output item the layer keeps as an extension (`x-openai.web_search_call`,
 * ...): its `data` is the item as the API sent it, and is sent again. It must
 * say what the decoder reads from it, or the item would come back another.
 */
const extension = (out: Writer, index: number, item: Item.Extension, responseId: string): unknown => {
  const { data } = item
  const type = item.type.slice(ResponsesDecoder.extensionPrefix.length)
  if (data.type !== type) {
    fail(`extension item ${item.id} (${item.type}) has data of type ${JSON.stringify(data.type)}, not "${type}"`)
  }
  const id = typeof data.id === "string" ? data.id : `${responseId}_output_${index}`
  if (id !== item.id) fail(`extension item ${item.id} (${item.type}) has data with id ${JSON.stringify(data.id)}`)
  const status = isStatus(data.status) ? data.status : "completed"
  if (status !== item.status) {
    fail(`extension item ${item.id} (${item.type}) is ${item.status} but its data says ${status}`)
  }
  out.event("response.output_item.added", { output_index: index, item: data })
  out.event("response.output_item.done", { output_index: index, item: data })
  return data
}

const outputItem = (out: Writer, index: number, item: Item.Item, size: number, responseId: string): unknown => {
  switch (item.type) {
    case "message":
      return message(out, index, item, size)
    case "reasoning":
      return reasoning(out, index, item, size)
    case "function_call":
      return functionCall(out, index, item, size)
    case "function_call_output":
      return fail(`function_call_output ${item.id} is input for the model; a response never streams one`)
    default:
      return item.type.startsWith(ResponsesDecoder.extensionPrefix)
        ? extension(out, index, item, responseId)
        : fail(
          `extension item ${item.id} (${item.type}) is not an OpenAI output item (${ResponsesDecoder.extensionPrefix}*)`
        )
  }
}

const started = (out: Writer, id: string, model: string): void => {
  out.event("response.created", { response: responseObject(id, model, "in_progress") })
  out.event("response.in_progress", { response: responseObject(id, model, "in_progress") })
}

const turn = (turn: Turn.Turn, options: ProviderWire.TurnOptions = {}): ReadonlyArray<string> => {
  const size = options.chunkSize ?? 16
  if (!(size >= 1)) fail(`chunkSize must be at least 1, got ${size}`)
  const end = endOf(turn)
  const id = turn.responseId ?? defaultResponseId
  const model = turn.model ?? defaultModel
  const out = new Writer()
  started(out, id, model)
  const output = turn.items.map((item, index) => outputItem(out, index, item, Math.floor(size), id))
  if (options.complete === false) return out.frames
  const usage = usageOf(turn.usage)
  if (end.incomplete === undefined) {
    out.event("response.completed", { response: responseObject(id, model, "completed", { output, usage }) })
  } else {
    out.event("response.incomplete", {
      response: responseObject(id, model, "incomplete", {
        incomplete_details: { reason: end.incomplete },
        output,
        usage
      })
    })
  }
  return out.frames
}

const json = (
  status: number,
  error: Readonly<Record<string, unknown>>,
  headers: Readonly<Record<string, string>> = {}
) => ({
  status,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify({ error })
})

const errorObject = (message: string, type: string, code: string | null) => ({ message, type, param: null, code })

/**
 * The message the server sent: the layer adds the code to an error it reads
 * by its code (`... (insufficient_quota)`), so that suffix is taken off again.
 */
const serverMessage = (message: string, code: string): string =>
  message.endsWith(` (${code})`) ? message.slice(0, -(code.length + 3)) : message

/**
 * `Retry-After` in whole seconds, rounded up, as the standard has it; a wait
 * that is not whole seconds also goes, exact, in OpenAI's `retry-after-ms`.
 */
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

/** A 4xx the layer reads as an invalid request: not one it reads as auth, timeout, size or rate limit. */
const invalidRequestStatus = (status: number | undefined): number =>
  between(status, 400, 499) && ![401, 403, 408, 413, 429].includes(status) ? status : 400

/** A `200` event stream: the response starts, `frames` follow, and the body ends. */
const stream = (frames: (out: Writer) => void): ProviderWire.HttpAnswer => {
  const out = new Writer()
  started(out, defaultResponseId, defaultModel)
  frames(out)
  const headers = { "content-type": "text/event-stream", "cache-control": "no-cache" }
  return { status: 200, headers, body: out.frames.join("") }
}

const error = (error: AiError.AiError): ProviderWire.HttpAnswer => {
  switch (error._tag) {
    case "AuthFailed": {
      const status = error.status === 403 ? 403 : 401
      return json(
        status,
        status === 401
          ? errorObject(error.message, "invalid_request_error", "invalid_api_key")
          : errorObject(error.message, "invalid_request_error", null)
      )
    }
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
      return json(400, { ...errorObject(message, "invalid_request_error", "context_length_exceeded"), param: "input" })
    }
    case "InvalidRequest": {
      const answer = json(invalidRequestStatus(error.status), errorObject(error.message, "invalid_request_error", null))
      // A 400 whose body reads as a context-length error is taken for one: another 4xx says only "invalid".
      return answer.status === 400 && ProviderHttp.isContextLengthMessage(answer.body)
        ? { ...answer, status: 422 }
        : answer
    }
    case "Unavailable":
      return json(
        between(error.status, 500, 599) && error.status !== 504 ? error.status : 503,
        errorObject(error.message, "server_error", null),
        retryHeaders(error.retryAfter)
      )
    case "MalformedEvent": {
      // Only the events the decoder reads can fail it; others it skips unparsed. An unnamed event is always read.
      const name = ResponsesDecoder.eventTypes.has(error.event) ? error.event : "message"
      return stream((out) => {
        const cut = JSON.stringify({ type: name, sequence_number: out.sequence }).slice(0, -1)
        out.frames.push(`${name === "message" ? "" : `event: ${name}\n`}data: ${cut},\n\n`)
      })
    }
    case "IncompleteTurn":
      return stream(() => {})
  }
}

/**
 * The Responses API's wire format.
 *
 * `turn` streams each item as the API does (`response.output_item.added`, its
 * parts and their deltas, `response.output_item.done`) and ends with
 * `response.completed`, or `response.incomplete` with `max_output_tokens`,
 * `content_filter` or, for `other`, the turn's `providerStopReason`. It
 * throws on what a response cannot hold: an item that is not an assistant
 * message, a reasoning item, a function call or an `x-openai.` output item;
 * and a stop reason the layer would read as another (`stop` with function
 * calls, `tool_calls` without, `malformed_tool_call`).
 *
 * `error` answers with OpenAI's error body (`{ error: { message, type, param,
 * code } }`) and the status the layer maps back to the same tag, or, for
 * `MalformedEvent` and `IncompleteTurn`, a `200` stream that breaks that way;
 * the layer writes the messages of those two itself.
 *
 * @example
 * ```ts
 * import { ResponsesWire } from "@agentloop/responses/testing"
 * import { AiError } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 *
 * // A turn as the API streams it, in pieces of 4 characters...
 * const frames = ResponsesWire.wire.turn(MockLanguageModel.textTurn("Hello, world"), { chunkSize: 4 })
 * console.log(frames.length) // 11
 * // ...and an error as the API answers it.
 * const answer = ResponsesWire.wire.error(new AiError.RateLimited({ provider: "openai", message: "slow down" }))
 * console.log(answer.status) // 429
 * ```
 *
 * @since 0.1.0
 * @category wire
 */
export const wire: ProviderWire.ProviderWire = {
  provider: ResponsesError.provider,
  turn,
  error
}
