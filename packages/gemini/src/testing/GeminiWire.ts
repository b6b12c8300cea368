/**
 * Gemini's `streamGenerateContent?alt=sse` wire format written out (a
 * `ProviderWire`): the frames Gemini streams for a `Turn`, and the answer with
 * which it reports each `AiError`, so a loopback server in a test answers with
 * a turn or an error and the Gemini layer decodes them back.
 *
 * A turn streams as `GenerateContentResponse` chunks of candidate 0, one part
 * per chunk, each sent as a bare `data:` frame (Gemini names no events):
 * reasoning as `thought: true` text parts, answer text as text parts, each cut
 * into pieces of `chunkSize` characters, and each function call whole in one
 * `functionCall` part (the Gemini API does not stream arguments). A thought
 * signature (`encrypted_content`) rides on the last piece of its thought; a
 * reasoning item that is only a signature (what `GeminiDecoder` makes of a
 * signature on a text or call part) rides on the `functionCall` part of the call
 * that follows it, else on a part of its own. Every chunk carries `modelVersion`
 * and `responseId` and a running `usageMetadata` (the prompt's counts); the last
 * one carries the `finishReason` and the turn's whole usage.
 *
 * What the decoder gives back differs from the turn written only where Gemini's
 * wire has no room: item ids and statuses are the decoder's own; a message's or
 * a reasoning item's content parts come back joined into one `output_text`
 * part (and an empty `summary` as none); arguments come back as
 * `JSON.stringify` writes them (empty arguments as `{}`); a call id the decoder
 * once made up (`gemini_call_…`) is left out, as Gemini left it out, so the
 * decoder makes one up again (the same one when the turn keeps its
 * `responseId`); a turn with no `model`, `responseId` or `providerStopReason`
 * comes back with Gemini's.
 * Anything else the wire cannot carry is a defect: {@link wire}'s `turn` throws
 * an `Error` saying which item and why.
 *
 * @since 0.1.0
 */
import { ProviderHttp } from "@agentloop/core"
import type { AiError, Item, TokenUsage, Turn } from "@agentloop/core"
import * as ProviderWire from "@agentloop/core/provider/ProviderWire"
import * as Duration from "effect/Duration"
import * as Gemini from "../Gemini.ts"
import * as GeminiDecoder from "../GeminiDecoder.ts"
import * as GeminiError from "../GeminiError.ts"
import type * as GeminiEvent from "../GeminiEvent.ts"

/**
 * The `responseId` of the chunks of a turn that has none.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultResponseId = "gemini-wire-response"

/**
 * The `chunkSize` of {@link wire}'s `turn` when none is given.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultChunkSize = 16

type UsageMetadata = { -readonly [K in keyof GeminiEvent.UsageMetadata]: GeminiEvent.UsageMetadata[K] }

interface Part {
  readonly text?: string
  readonly thought?: true
  readonly thoughtSignature?: string
  readonly functionCall?: { readonly id?: string; readonly name: string; readonly args?: unknown }
}

/** The error `turn` and `error` throw for what the wire cannot carry. */
const defect = (message: string): Error => new Error(`GeminiWire: ${message}`)

/**
 * `usage` as Gemini's `usageMetadata`, the inverse of `GeminiDecoder.usage`:
 * `promptTokenCount` is the input (cached tokens included),
 * `candidatesTokenCount` the output without its reasoning, which is
 * `thoughtsTokenCount`. Optional counts are written only when `usage` has them.
 * Throws when `total` is not `input + output` (the layer reports their sum) or
 * when `reasoning` exceeds `output`.
 *
 * @since 0.1.0
 * @category wire
 */
export const usageMetadata = (usage: TokenUsage.TokenUsage): GeminiEvent.UsageMetadata => {
  if (usage.total !== usage.input + usage.output) {
    throw defect(
      `usage.total (${usage.total}) is not input + output (${usage.input + usage.output}); ` +
        "the Gemini layer reports their sum"
    )
  }
  const reasoning = usage.reasoning ?? 0
  if (reasoning > usage.output) {
    throw defect(
      `usage.reasoning (${reasoning}) exceeds usage.output (${usage.output}): reasoning is part of the output`
    )
  }
  const metadata: UsageMetadata = { promptTokenCount: usage.input }
  if (usage.cachedInput !== undefined) metadata.cachedContentTokenCount = usage.cachedInput
  metadata.candidatesTokenCount = usage.output - reasoning
  if (usage.reasoning !== undefined) metadata.thoughtsTokenCount = usage.reasoning
  metadata.totalTokenCount = usage.total
  return metadata
}

/** The running usage of the chunks before the last: what the prompt cost, as Gemini repeats it on every chunk. */
const runningUsage = (usage: GeminiEvent.UsageMetadata): GeminiEvent.UsageMetadata => ({
  promptTokenCount: usage.promptTokenCount ?? 0,
  ...(usage.cachedContentTokenCount === undefined ? {} : { cachedContentTokenCount: usage.cachedContentTokenCount }),
  totalTokenCount: usage.promptTokenCount ?? 0
})

/** `text` in pieces of `size` code points; empty text is one empty part, as Gemini sends an empty message. */
const pieces = (text: string, size: number): Array<string> => {
  const out = ProviderWire.pieces(text, size)
  return out.length === 0 ? [""] : out
}

const where = (index: number, item: Item.Item): string => `items[${index}] (${item.type})`

/** The text of model-written content: its `output_text` parts joined, as the decoder gives them back in one part. */
const outputText = (content: ReadonlyArray<Item.ContentPart>, at: string): string =>
  content.map((part) => {
    if (part.type === "refusal") {
      throw defect(`${at} has a refusal part: Gemini has no refusals (it refuses with a SAFETY finishReason)`)
    }
    if (part.type !== "output_text") {
      throw defect(`${at} has an ${part.type} part: Gemini streams only the model's output_text`)
    }
    return part.text
  }).join("")

/** The JSON value of a call's arguments, or `undefined` for empty arguments (Gemini then sends no `args`). */
const callArgs = (text: string, at: string): unknown => {
  if (text.trim() === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    throw defect(
      `${at} has arguments that are not JSON (${JSON.stringify(text.slice(0, 40))}); Gemini sends args as JSON`
    )
  }
}

/**
 * The parts of a turn's items, in order. Gemini's parts have no item
 * boundaries: the decoder starts a new item when the kind of part changes or a
 * signature ends a thought, so two items it would join are refused.
 */
const partsOf = (items: ReadonlyArray<Item.Item>, chunkSize: number): Array<Part> => {
  const out: Array<Part> = []
  // The text item the decoder would still have open, which a part of the same kind would continue.
  let open: "message" | "reasoning" | undefined = undefined
  let signature: string | undefined = undefined
  for (const [index, item] of items.entries()) {
    const at = where(index, item)
    switch (item.type) {
      case "message": {
        if (item.role !== "assistant") {
          throw defect(`${at} is a ${item.role} message: Gemini streams only the model's parts`)
        }
        if (item.phase !== undefined) throw defect(`${at} has phase "${item.phase}", which Gemini's parts do not carry`)
        if (open === "message") {
          throw defect(
            `${at} is an assistant message right after another: Gemini's text parts have no item boundaries, ` +
              "so the decoder would join them; merge them into one message"
          )
        }
        for (const text of pieces(outputText(item.content, at), chunkSize)) out.push({ text })
        open = "message"
        continue
      }
      case "reasoning": {
        if (item.summary !== undefined && item.summary.length > 0) {
          throw defect(`${at} has a summary: Gemini's thoughts are the reasoning's content, so put the text there`)
        }
        const encrypted = item.encrypted_content
        if (item.content.length === 0 && encrypted !== undefined) {
          // Only a signature: the decoder makes this of a signature on the next call's part, or on a part of its own.
          if (items[index + 1]?.type === "function_call") signature = encrypted
          else out.push({ thoughtSignature: encrypted })
          open = undefined
          continue
        }
        if (open === "reasoning") {
          throw defect(
            `${at} is reasoning right after reasoning without a thought signature: Gemini's thought parts have ` +
              "no item boundaries, so the decoder would join them; merge them into one reasoning item"
          )
        }
        const texts = pieces(outputText(item.content, at), chunkSize)
        texts.forEach((text, i) =>
          out.push({
            text,
            thought: true,
            // A signature ends a thought: on its last piece, or the pieces after it would start another item.
            ...(i === texts.length - 1 && encrypted !== undefined ? { thoughtSignature: encrypted } : {})
          })
        )
        open = encrypted === undefined ? "reasoning" : undefined
        continue
      }
      case "function_call": {
        const args = callArgs(item.arguments, at)
        out.push({
          functionCall: {
            ...(GeminiDecoder.isSynthesizedCallId(item.call_id) ? {} : { id: item.call_id }),
            name: item.name,
            ...(args === undefined ? {} : { args })
          },
          ...(signature === undefined ? {} : { thoughtSignature: signature })
        })
        signature = undefined
        open = undefined
        continue
      }
      case "function_call_output":
        throw defect(`${at} is a tool's output: the model does not stream those, the request sends them`)
      default:
        throw defect(`${at} is an application's own item: providers never send those`)
    }
  }
  return out
}

/** The `finishReason` Gemini writes for each stop reason when the turn keeps no raw one. */
const finishReasons: Readonly<Record<Turn.StopReason, string>> = {
  stop: "STOP",
  tool_calls: "STOP",
  max_tokens: "MAX_TOKENS",
  content_filter: "SAFETY",
  malformed_tool_call: "MALFORMED_FUNCTION_CALL",
  other: "OTHER"
}

const blockPrefix = "blockReason:"

/**
 * What ends `turn`: a candidate's `finishReason`, or a blocked prompt's
 * `blockReason`, checked to decode as `turn.stopReason`.
 */
const ending = (turn: Turn.Turn): { readonly finishReason: string } | { readonly blockReason: string } => {
  const raw = turn.providerStopReason
  if (raw?.startsWith(blockPrefix) === true) {
    if (turn.stopReason !== "content_filter") {
      throw defect(
        `providerStopReason "${raw}" is a blocked prompt, which decodes as content_filter, not ${turn.stopReason}`
      )
    }
    return { blockReason: raw.slice(blockPrefix.length) }
  }
  const hasCalls = turn.items.some((item) => item.type === "function_call")
  const finishReason = raw ?? finishReasons[turn.stopReason]
  const decoded = GeminiDecoder.stopReason(finishReason, hasCalls)
  if (decoded !== turn.stopReason) {
    throw defect(
      raw !== undefined
        ? `providerStopReason "${raw}" decodes as ${decoded}, not the turn's stopReason ${turn.stopReason}`
        : `a turn ${hasCalls ? "with" : "without"} function calls cannot stop with ${turn.stopReason}: ` +
          "Gemini's STOP decodes as tool_calls exactly when the turn has calls"
    )
  }
  return { finishReason }
}

const frame = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`

const utf8Length = (text: string): number => new TextEncoder().encode(text).length

/** Whether the decoder reads `citation` back from a grounding chunk as it is. */
const groundable = (citation: Item.Citation): boolean =>
  citation.provider_data === undefined && (citation.type === "url_citation"
    ? citation.cited_text === undefined
    : citation.file_id === undefined && citation.filename === undefined && citation.media_type === undefined)

/**
 * The `groundingMetadata` of the turn's citations, which must all be on its
 * last message (the decoder puts them there), those with a span first (it
 * reads the supports first): a `web` chunk per URL citation, a
 * `retrievedContext` chunk per file citation, a support per span, in bytes of
 * the whole answer.
 */
const grounding = (items: ReadonlyArray<Item.Item>): Record<string, unknown> | undefined => {
  const messages = items.flatMap((item, index) => item.type === "message" ? [{ item, index }] : [])
  const texts = messages.map(({ index, item }) => outputText(item.content, where(index, item)))
  const citations = messages.map(({ item }) =>
    item.content.flatMap((part) => part.type === "output_text" ? part.annotations ?? [] : [])
  )
  const last = citations.length - 1
  if (citations.some((list, i) => i !== last && list.length > 0)) {
    throw defect("only the last message of a turn has citations: Gemini grounds the whole answer")
  }
  const cited = citations[last] ?? []
  if (cited.length === 0) return undefined
  const before = texts.slice(0, -1).join("")
  const text = texts[last] ?? ""
  const groundingChunks: Array<unknown> = []
  const groundingSupports: Array<unknown> = []
  let spans = true
  for (const citation of cited) {
    const spanned = citation.start_index !== undefined && citation.end_index !== undefined
    if ((spanned && !spans) || !groundable(citation)) {
      throw defect(
        `a citation Gemini cannot ground: ${JSON.stringify(citation)} ` +
          "(spans first; web pages by uri and title, documents by title and text)"
      )
    }
    spans &&= spanned
    const title = citation.title === undefined ? {} : { title: citation.title }
    groundingChunks.push(
      citation.type === "url_citation"
        ? { web: { uri: citation.url, ...title } }
        : {
          retrievedContext: { ...title, ...(citation.cited_text === undefined ? {} : { text: citation.cited_text }) }
        }
    )
    if (citation.start_index !== undefined && citation.end_index !== undefined) {
      groundingSupports.push({
        segment: {
          startIndex: utf8Length(before + text.slice(0, citation.start_index)),
          endIndex: utf8Length(before + text.slice(0, citation.end_index)),
          text: text.slice(citation.start_index, citation.end_index)
        },
        groundingChunkIndices: [groundingChunks.length - 1]
      })
    }
  }
  return { groundingChunks, groundingSupports }
}

const turnFrames = (turn: Turn.Turn, options?: ProviderWire.TurnOptions): ReadonlyArray<string> => {
  const chunkSize = options?.chunkSize ?? defaultChunkSize
  if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) {
    throw defect(`chunkSize must be a positive integer, not ${chunkSize}`)
  }
  if (turn.cost !== undefined) throw defect("the turn has a cost, which Gemini never reports")
  const parts = partsOf(turn.items, chunkSize)
  const end = ending(turn)
  const usage = usageMetadata(turn.usage)
  const meta = { modelVersion: turn.model ?? Gemini.defaultModel, responseId: turn.responseId ?? defaultResponseId }
  const candidateChunk = (candidate: Record<string, unknown>, usageMetadata: GeminiEvent.UsageMetadata) => ({
    candidates: [{ ...candidate, index: 0 }],
    usageMetadata,
    ...meta
  })
  const content = (part: Part) => ({ content: { role: "model", parts: [part] } })
  const running = runningUsage(usage)
  const chunks: Array<unknown> = parts.map((part) => candidateChunk(content(part), running))
  const last = parts[parts.length - 1]
  const grounded = grounding(turn.items)
  const finish = (fields: Record<string, unknown>) =>
    grounded === undefined ? fields : { ...fields, groundingMetadata: grounded }
  if (options?.complete === false) {
    if (chunks.length === 0) chunks.push({ usageMetadata: running, ...meta })
  } else if ("blockReason" in end) {
    chunks.push({ promptFeedback: { blockReason: end.blockReason }, usageMetadata: usage, ...meta })
  } else if (last === undefined) {
    chunks.push(candidateChunk(finish({ finishReason: end.finishReason }), usage))
  } else {
    // Gemini sends the finish reason with the last part.
    // Gemini sends its grounding with it.
    chunks[chunks.length - 1] = candidateChunk(finish({ ...content(last), finishReason: end.finishReason }), usage)
  }
  return chunks.map(frame)
}

/** Google's canonical status name for each HTTP status the API answers with. */
const googleStatuses: Readonly<Record<number, string>> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "ABORTED",
  429: "RESOURCE_EXHAUSTED",
  499: "CANCELLED",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

const jsonHeaders = { "content-type": "application/json; charset=UTF-8" }

/** Google's error answer, `{ error: { code, message, status, details } }`. */
const googleError = (
  code: number,
  message: string,
  options: { readonly details?: ReadonlyArray<unknown> } = {}
): ProviderWire.HttpAnswer => ({
  status: code,
  headers: jsonHeaders,
  body: JSON.stringify({
    error: {
      code,
      message,
      status: googleStatuses[code] ?? "UNKNOWN",
      ...(options.details === undefined || options.details.length === 0 ? {} : { details: options.details })
    }
  })
})

/**
 * Google's `RetryInfo` detail of a wait, when there is one: its `retryDelay` in
 * seconds, to the millisecond (Google sends no `Retry-After` header). Throws for
 * a wait `GeminiError` would not read back: negative, or longer than `GeminiError.maxRetryDelay`.
 */
const retryInfo = (retryAfter: Duration.Duration | undefined) => {
  if (retryAfter === undefined) return { details: [] }
  const millis = Math.ceil(Duration.toMillis(retryAfter))
  if (!(millis >= 0 && millis <= Duration.toMillis(GeminiError.maxRetryDelay))) {
    throw defect(
      `retryAfter (${Duration.format(retryAfter)}) is not between 0 and GeminiError.maxRetryDelay, ` +
        "which the layer reads as no delay at all"
    )
  }
  return { details: [{ "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${millis / 1000}s` }] }
}

const eventStream = (frames: ReadonlyArray<string>): ProviderWire.HttpAnswer => ({
  status: 200,
  headers: { "content-type": "text/event-stream" },
  body: frames.join("")
})

const emptyTurn: Turn.Turn = { items: [], usage: { input: 0, output: 0, total: 0 }, stopReason: "stop" }

/** Statuses the layer reads as something other than `InvalidRequest`, whatever the body says. */
const notInvalidRequest: ReadonlyArray<number> = [401, 403, 408, 413, 429]

const errorAnswer = (error: AiError.AiError): ProviderWire.HttpAnswer => {
  switch (error._tag) {
    case "AuthFailed":
      // Google refuses a bad or expired API key with a 400 and an ErrorInfo saying so, which the layer reads.
      return error.status === 400
        ? googleError(400, error.message, {
          details: [{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            reason: "API_KEY_INVALID",
            domain: "googleapis.com",
            metadata: { service: "generativelanguage.googleapis.com" }
          }]
        })
        : googleError(error.status === 403 ? 403 : 401, error.message)
    case "RateLimited":
      return googleError(429, error.message, retryInfo(error.retryAfter))
    case "QuotaExceeded":
      // What Google sends for an exhausted daily quota, which the layer reads as QuotaExceeded.
      return googleError(429, error.message, {
        details: [{
          "@type": "type.googleapis.com/google.rpc.QuotaFailure",
          violations: [{
            quotaMetric: "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            quotaId: "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
          }]
        }]
      })
    case "Timeout":
      return googleError(504, error.message)
    case "ContextLengthExceeded":
      // The layer reads a 400 as a context overflow by its wording; a message without it gets Google's in a detail.
      return googleError(400, error.message, {
        details: ProviderHttp.isContextLengthMessage(error.message) ? [] : [{
          "@type": "type.googleapis.com/google.rpc.BadRequest",
          fieldViolations: [{
            field: "contents",
            description: "The input token count exceeds the maximum number of tokens allowed."
          }]
        }]
      })
    case "InvalidRequest": {
      const status = error.status !== undefined && error.status >= 400 && error.status < 500 &&
          !notInvalidRequest.includes(error.status)
        ? error.status
        : 400
      if (status === 400 && ProviderHttp.isContextLengthMessage(error.message)) {
        throw defect(
          `an InvalidRequest whose message reads as a context overflow (${JSON.stringify(error.message)}) ` +
            "comes back from a 400 as ContextLengthExceeded: give it another 4xx status or another message"
        )
      }
      return googleError(status, error.message)
    }
    case "Unavailable": {
      const status = error.status !== undefined && error.status >= 500 && error.status !== 504 ? error.status : 503
      return googleError(status, error.message, retryInfo(error.retryAfter))
    }
    case "MalformedEvent":
      // `candidates` must be an array: the chunk fails to decode whatever the message says.
      return eventStream([frame({ candidates: error.message, modelVersion: Gemini.defaultModel })])
    case "IncompleteTurn":
      return eventStream(turnFrames(emptyTurn, { complete: false }))
  }
}

/**
 * Gemini's wire format. `turn` writes a turn's frames as described above (and
 * throws on what the wire cannot carry); `error` answers each `AiError` as
 * Google does: `{ error: { code, message, status, details } }` as
 * `application/json; charset=UTF-8` with
 *
 * - `AuthFailed`: for a 400, 400 `INVALID_ARGUMENT` with an `ErrorInfo` detail
 *   of reason `API_KEY_INVALID`, as Google refuses a bad or expired key; else
 *   401 `UNAUTHENTICATED`, or 403 `PERMISSION_DENIED` for a 403;
 * - `RateLimited`: 429 `RESOURCE_EXHAUSTED`, its wait as a `RetryInfo` detail
 *   (and, as from Google, no `retry-after` header); throws for a wait longer
 *   than `GeminiError.maxRetryDelay`, which the layer would not read back;
 * - `QuotaExceeded`: 429 `RESOURCE_EXHAUSTED` with a `QuotaFailure` detail
 *   naming a daily quota, as Google reports an exhausted one; it comes back
 *   with status 429 whatever its own;
 * - `Timeout`: 504 `DEADLINE_EXCEEDED`;
 * - `ContextLengthExceeded`: 400 `INVALID_ARGUMENT` worded as Google words an
 *   overflow (in a `BadRequest` detail when the message is not);
 * - `InvalidRequest`: its 4xx status (400 `INVALID_ARGUMENT` by default);
 *   throws for a 400 whose message reads as a context overflow, which the
 *   layer cannot read as anything but `ContextLengthExceeded`;
 * - `Unavailable`: its 5xx status (503 `UNAVAILABLE` by default, never 504,
 *   which is a timeout) with its wait as for `RateLimited`;
 *
 * and a `200` `text/event-stream` for `MalformedEvent` (a chunk whose
 * `candidates` is the message, which does not decode) and `IncompleteTurn` (a
 * chunk, then the end of the body without a `finishReason`). The decoder
 * writes the message of those two itself: theirs is not carried.
 *
 * @example
 * ```ts
 * import { GeminiWire } from "@agentloop/gemini/testing"
 * import { AiError } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 *
 * // A turn as the API streams it, in pieces of 4 characters...
 * const frames = GeminiWire.wire.turn(MockLanguageModel.textTurn("Hello, world"), { chunkSize: 4 })
 * console.log(frames.length) // 3
 * // ...and an error as the API answers it.
 * const answer = GeminiWire.wire.error(new AiError.RateLimited({ provider: "gemini", message: "slow down" }))
 * console.log(answer.status) // 429
 * ```
 *
 * @since 0.1.0
 * @category wire
 */
export const wire: ProviderWire.ProviderWire = {
  provider: GeminiDecoder.provider,
  turn: turnFrames,
  error: errorAnswer
}
