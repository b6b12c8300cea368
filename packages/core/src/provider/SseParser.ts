/**
 * A Server-Sent Events parser for model streams: text in, `(event, data)` pairs
 * out, one callback per event, with no object per event or per line.
 *
 * It follows the WHATWG event-stream rules a model stream uses (LF, CRLF and CR
 * line ends, a leading BOM, comments, multi-line `data`, `event` names), keeps
 * the last event id (`id`) for a client that resumes a stream, and ignores
 * `retry`.
 * Unlike `effect/encoding`'s `Sse` it finds line ends with `indexOf`, which is
 * what keeps a provider's decode loop near the speed of a bare `JSON.parse` loop.
 * A {@link Dialect} reads the few ways some servers bend these rules.
 *
 * @since 0.1.0
 */

/**
 * What {@link Parser.feed} did with its text.
 *
 * @since 0.1.0
 * @category models
 */
export type Feed = "more" | "stopped" | "too-large"

/**
 * A parser of one stream; see {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Parser {
  /**
   * Parses `text`, the next piece of the stream, calling the event handler for
   * every event it completes. Returns `"stopped"` when the handler asked to stop
   * (the rest of `text` is dropped) and `"too-large"` when an event grew past
   * the limit (the parser is then spent).
   */
  readonly feed: (text: string) => Feed
  /**
   * The stream ended. The event it ended inside of, its last line included, is
   * dispatched as a blank line would when the dialect's `dispatchAtEnd` says
   * so (see {@link Dialect}); otherwise it is dropped, as the SSE rules say.
   */
  readonly end: () => void
}

/**
 * How a server bends the event-stream rules, for the parser to read it anyway.
 *
 * @since 0.2.0
 * @category models
 */
export interface Dialect {
  /**
   * Field names besides `data` and `event` whose lines are events of their
   * own, named after the field, with the line's value as data: llama.cpp
   * reported errors on an `error: {...}` line, which the SSE rules ignore.
   */
  readonly fieldEvents?: ReadonlyArray<string> | undefined
  /**
   * Whether {@link Parser.end} dispatches the event the stream ended inside
   * of, given its data: some servers end the body with `data: [DONE]` and no
   * blank line, while an event cut in the middle is better dropped.
   */
  readonly dispatchAtEnd?: ((data: string) => boolean) | undefined
}

/**
 * A parser that calls `onEvent(event, data, lastId)` for each event, `event`
 * being the `event:` field or `"message"` and `lastId` the last `id:` the
 * stream set (before any, `options.lastId`: the id a resumed stream was asked
 * from, as a browser's `EventSource` keeps it; `""` by default). The handler
 * returns `false` to stop parsing.
 *
 * `maxEventSize` bounds, in UTF-16 code units, an event's data plus the line
 * being read, so a peer that never ends a line or an event cannot make the
 * parser buffer without bound. `dialect` reads a server that bends the rules.
 *
 * @example
 * ```ts
 * import { SseParser } from "@agentloop/core"
 *
 * const events: Array<string> = []
 * const parser = SseParser.make({
 *   maxEventSize: 1 << 20,
 *   onEvent: (event, data) => (events.push(`${event}: ${data}`), true)
 * })
 * // Chunks split anywhere, even inside a line.
 * parser.feed("event: ping\ndata: {\"n\"")
 * parser.feed(":1}\n\ndata: hello\n\n")
 * parser.end()
 * console.log(events) // [ 'ping: {"n":1}', 'message: hello' ]
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: {
  readonly maxEventSize: number
  readonly onEvent: (event: string, data: string, lastId: string) => boolean
  readonly dialect?: Dialect | undefined
  readonly lastId?: string | undefined
}): Parser => {
  const { maxEventSize, onEvent } = options
  const fieldEvents = options.dialect?.fieldEvents ?? []
  const dispatchAtEnd = options.dialect?.dispatchAtEnd
  let first = true
  let spent = false
  // The handler asked to stop: nothing more is dispatched, not even at the end.
  let stopped = false
  // The unterminated end of the previous text, and whether that text ended in a CR (whose LF may follow).
  let partial = ""
  let afterCr = false
  let event: string | undefined
  let lastEvent = ""
  let data: string | undefined
  let lastId = options.lastId ?? ""

  /** Handles the line `text[start, end)`; returns false when the handler asked to stop. */
  const line = (text: string, start: number, end: number): boolean => {
    if (start === end) {
      const name = event ?? "message"
      const payload = data
      event = undefined
      data = undefined
      return payload === undefined ? true : onEvent(name, payload, lastId)
    }
    let colon = text.indexOf(":", start)
    if (colon === start) return true
    if (colon < 0 || colon > end) colon = end
    const valueStart = colon + 1 < end && text.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1
    const length = colon - start
    if (length === 4 && text.startsWith("data", start)) {
      const value = valueStart >= end ? "" : text.slice(valueStart, end)
      data = data === undefined ? value : `${data}\n${value}`
    } else if (length === 5 && text.startsWith("event", start)) {
      // Streams repeat a few names: reusing the last one's string spares an allocation and a hash per event.
      const size = end - valueStart
      event = size <= 0
        ? ""
        : size === lastEvent.length && text.startsWith(lastEvent, valueStart)
        ? lastEvent
        : text.slice(valueStart, end)
      lastEvent = event
    } else if (length === 2 && text.startsWith("id", start)) {
      const value = valueStart >= end ? "" : text.slice(valueStart, end)
      // An id with a NUL is ignored, as a browser's EventSource ignores it.
      if (!value.includes("\0")) lastId = value
    } else {
      for (const field of fieldEvents) {
        if (length === field.length && text.startsWith(field, start)) {
          return onEvent(field, valueStart >= end ? "" : text.slice(valueStart, end), lastId)
        }
      }
    }
    return true
  }

  const stop = (): Feed => {
    stopped = true
    return "stopped"
  }

  const feed = (text: string): Feed => {
    if (spent) return "too-large"
    if (first && text.length > 0) {
      first = false
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    }
    let position = 0
    if (afterCr) {
      afterCr = false
      if (text.charCodeAt(0) === 10) position = 1
    }
    // Most streams end lines with LF alone: look for CRs only when the text has one.
    let nextCr = text.indexOf("\r", position)
    while (position < text.length) {
      let end = text.indexOf("\n", position)
      let width = 1
      if (nextCr >= 0 && (end < 0 || nextCr < end)) {
        end = nextCr
        if (text.charCodeAt(end + 1) === 10) width = 2
        else if (end + 1 === text.length) afterCr = true
        nextCr = text.indexOf("\r", end + width)
      }
      if (end < 0) {
        partial = partial.length === 0 ? text.slice(position) : partial + text.slice(position)
        break
      }
      const start = position
      position = end + width
      if (partial.length === 0) {
        if (!line(text, start, end)) return stop()
      } else {
        const joined = partial + text.slice(start, end)
        partial = ""
        if (!line(joined, 0, joined.length)) return stop()
      }
    }
    if (partial.length + (data?.length ?? 0) > maxEventSize) {
      spent = true
      return "too-large"
    }
    return "more"
  }

  const end = (): void => {
    if (spent || stopped || dispatchAtEnd === undefined) return
    const last = partial
    partial = ""
    if (last.length > 0 && !line(last, 0, last.length)) return
    if (data !== undefined && dispatchAtEnd(data)) line("", 0, 0)
  }

  return { feed, end }
}
