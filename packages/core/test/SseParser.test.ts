import { describe, expect, it } from "@effect/vitest"
import * as SseParser from "../src/provider/SseParser.ts"

/** Feeds `pieces` and returns the events, and what the last feed returned. */
const parse = (
  pieces: ReadonlyArray<string>,
  options?: { readonly maxEventSize?: number; readonly stopAfter?: number }
) => {
  const events: Array<[string, string]> = []
  const parser = SseParser.make({
    maxEventSize: options?.maxEventSize ?? 1024,
    onEvent: (event, data) => {
      events.push([event, data])
      return events.length !== options?.stopAfter
    }
  })
  let last: SseParser.Feed = "more"
  for (const piece of pieces) last = parser.feed(piece)
  return { events, last }
}

const stream =
  "\uFEFFevent: delta\ndata: {\"a\":1}\n\n: a comment\nid: 7\nretry: 10\ndata: line one\ndata:line two\n\nevent: named\ndata\n\nevent: ignored\n\n"
const expected = [["delta", "{\"a\":1}"], ["message", "line one\nline two"], ["named", ""]]

describe("SseParser", () => {
  it("parses events, comments, multi-line data and names, ignoring id, retry and events without data", () => {
    expect(parse([stream]).events).toStrictEqual(expected)
  })

  it("parses the same events whatever the line ends and wherever the text is split", () => {
    for (const ending of ["\n", "\r\n", "\r"]) {
      const text = stream.replaceAll("\n", ending)
      for (let at = 0; at <= text.length; at++) {
        expect(parse([text.slice(0, at), text.slice(at)]).events, `${JSON.stringify(ending)} split at ${at}`)
          .toStrictEqual(expected)
      }
      expect(parse([...text]).events).toStrictEqual(expected)
    }
  })

  it("keeps an event that is not finished until its blank line arrives", () => {
    const { events } = parse(["data: 1\n\ndata: 2\n"])
    expect(events).toStrictEqual([["message", "1"]])
  })

  it("stops when the handler asks, dropping the rest of the text", () => {
    const { events, last } = parse(["data: 1\n\ndata: 2\n\ndata: 3\n\n"], { stopAfter: 2 })
    expect(events).toStrictEqual([["message", "1"], ["message", "2"]])
    expect(last).toBe("stopped")
  })

  it("gives up on an event or a line longer than maxEventSize, however it arrives", () => {
    expect(parse(["data: short\n\n", "data: ", "x".repeat(50), "x".repeat(50)], { maxEventSize: 64 })).toStrictEqual({
      events: [["message", "short"]],
      last: "too-large"
    })
    const lines = Array.from({ length: 20 }, () => "data: xxxxxxxx\n")
    expect(parse(lines, { maxEventSize: 64 }).last).toBe("too-large")
    expect(parse(["data: ", "x".repeat(100)], { maxEventSize: 64 }).last).toBe("too-large")
  })
})
