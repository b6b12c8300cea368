/**
 * The small client of an event stream, for a page that only reads a run's
 * events: `for await (const event of EventStreamClient.events(codec, url))`.
 * It reads what `EventStream`'s server side writes, decodes every event with
 * the codec's `Schema`, and throws the server's typed failure (a
 * `Termination.Error`, say) or an `EventStreamError`, like `EventStream.fetch`,
 * but with `fetch` and a reader instead of Effect's `Stream`: a browser bundle
 * of a page that imports it stays under 40 KB gzipped.
 *
 * Leaving the loop (or aborting `init.signal`) cancels the response, which the
 * server sees as the client going away.
 *
 * @since 0.2.0
 */
// Subpath imports only, here and in every module a browser decodes with: the `effect` barrel defeats tree shaking.
import * as Schema from "effect/Schema"
import * as SseParser from "../provider/SseParser.ts"
import type { Codec, DecodeOptions } from "./EventStream.ts"
import { EventStreamError } from "./EventStream.ts"

const ServerError = Schema.fromJsonString(Schema.Struct({ message: Schema.String }))

const decoder = <T>(schema: Schema.Codec<T, unknown>) => {
  const decode = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.toCodecJson(schema)))
  return (data: string, what: string): T => {
    const decoded = decode(data)
    if (decoded._tag === "Success") return decoded.success
    throw new EventStreamError({ reason: "malformed", message: `${what} did not decode: ${String(decoded.failure)}` })
  }
}

const httpError = (response: Response): EventStreamError => {
  const type = response.headers.get("content-type") ?? ""
  return new EventStreamError({
    reason: "http",
    status: response.status,
    message: `expected an event stream, got HTTP ${response.status} ${type === "" ? "without a content type" : type}`
  })
}

/** Sets `Last-Event-ID`; an id a header cannot carry (a NUL, a character past U+00FF: a server wrote it) fails as `http`. */
const setLastEventId = (headers: Headers, id: string): void => {
  try {
    headers.set("last-event-id", id)
  } catch {
    throw new EventStreamError({
      reason: "http",
      message: `the last event id ${JSON.stringify(id.slice(0, 80))} cannot be sent as a header`
    })
  }
}

/**
 * Requests an event stream with `fetch` and yields its events, decoded. The
 * loop throws the server's failure (decoded with `codec.failure`) after a
 * `failure` event, and an `EventStreamError` when the response is not a
 * successful event stream or `lastEventId` cannot be sent as a header
 * (`http`), ends before its `end` event (`truncated`), holds an event that
 * does not decode or is too large (`malformed`), or the server broke
 * (`server`).
 *
 * @example
 * ```ts
 * import { EventStream, EventStreamClient } from "@agentloop/core/stream"
 *
 * const read = async (url: string) => {
 *   for await (const event of EventStreamClient.events(EventStream.agent, url)) {
 *     if (event._tag === "Delta" && event.delta.type === "text_delta") console.log(event.delta.delta)
 *   }
 * }
 * void read
 * ```
 *
 * @since 0.2.0
 * @category client
 */
export async function* events<A, E>(
  codec: Codec<A, E>,
  input: string | URL,
  init?: RequestInit,
  options?: Options
): AsyncGenerator<A, void, undefined> {
  for await (const entry of entries(codec, input, init, options)) yield entry.event
}

/**
 * Options of the client: {@link DecodeOptions}, and the id of the last event
 * seen, to resume a stream whose server gives its events ids (a run served by
 * `ResumableStream`, or a durable run's).
 *
 * @since 0.2.0
 * @category client
 */
export interface Options extends DecodeOptions {
  /** Sent as `Last-Event-ID`: the server sends the events after it, once. */
  readonly lastEventId?: string | undefined
}

/**
 * An event and its id: the last id the stream gave, as the SSE rules keep it
 * (an event without an `id:` line has the one before it; the connection's
 * `lastEventId` until the server gives one; `""` when there is none).
 *
 * @since 0.2.0
 * @category client
 */
export interface Entry<A> {
  readonly id: string
  readonly event: A
}

/**
 * Like {@link events}, with each event's id: keep the last one, and pass it as
 * `lastEventId` to resume where the connection broke, with no event lost or
 * repeated.
 *
 * @since 0.2.0
 * @category client
 */
export async function* entries<A, E>(
  codec: Codec<A, E>,
  input: string | URL,
  init?: RequestInit,
  options: Options = {}
): AsyncGenerator<Entry<A>, void, undefined> {
  const decodeEvent = decoder(codec.events)
  const decodeFailure = decoder(codec.failure)
  const headers = new Headers(init?.headers)
  if (options.lastEventId !== undefined) setLastEventId(headers, options.lastEventId)
  let response: Response
  try {
    response = await globalThis.fetch(input, { ...init, headers })
  } catch (error) {
    throw new EventStreamError({ reason: "http", message: `the request failed: ${String(error)}` })
  }
  const type = response.headers.get("content-type") ?? ""
  if (!response.ok || !type.startsWith("text/event-stream") || response.body === null) {
    await response.body?.cancel()
    throw httpError(response)
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let pending: Array<{ readonly event: string; readonly data: string; readonly id: string }> = []
  const parser = SseParser.make({
    maxEventSize: options.maxEventSize ?? 16 * 1024 * 1024,
    lastId: options.lastEventId,
    onEvent: (event, data, id) => {
      pending.push({ event, data, id })
      return true
    }
  })
  let finished = false
  try {
    while (true) {
      let read: Awaited<ReturnType<typeof reader.read>>
      try {
        read = await reader.read()
      } catch (error) {
        throw new EventStreamError({ reason: "truncated", message: `the connection broke: ${String(error)}` })
      }
      if (read.done) {
        finished = true
        throw new EventStreamError({ reason: "truncated", message: "the event stream ended before its end event" })
      }
      if (parser.feed(read.value) === "too-large") {
        throw new EventStreamError({ reason: "malformed", message: "an event is larger than the limit" })
      }
      const batch = pending
      pending = []
      for (const { data, event, id } of batch) {
        switch (event) {
          case "message":
            yield { id, event: decodeEvent(data, "an event") }
            break
          case "failure":
            throw decodeFailure(data, "the failure")
          case "error": {
            const decoded = Schema.decodeUnknownResult(ServerError)(data)
            throw new EventStreamError({
              reason: "server",
              message: decoded._tag === "Success" ? decoded.success.message : data
            })
          }
          case "end":
            return
          default:
            break
        }
      }
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined)
  }
}
