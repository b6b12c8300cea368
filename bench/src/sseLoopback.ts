/**
 * What the provider benchmarks share: a loopback HTTP server that answers every
 * request with one recorded SSE body, the baseline client every provider is
 * measured against, and a counter of the text deltas a provider streams.
 */
import type { TurnDelta } from "@agentloop/core"
import { Effect, Stream } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/** Bytes per write, about what one network read of a real stream carries. */
const writeSize = 64 * 1024

/** Serves `body` as `text/event-stream` to every request; `close` stops the server. */
export const serve = async (body: Buffer): Promise<{ readonly url: string; readonly close: () => void }> => {
  const server = Http.createServer((request, response) => {
    request.resume()
    request.on("end", () => {
      response.writeHead(200, { "content-type": "text/event-stream" })
      for (let offset = 0; offset < body.length; offset += writeSize) {
        response.write(body.subarray(offset, offset + writeSize))
      }
      response.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() }
}

/**
 * The floor for any client of an SSE wire format: `fetch`, split the body into
 * lines, `JSON.parse` each `data:` line (but a `[DONE]`, Chat Completions'
 * end marker). Checks it saw `events` of them.
 */
export const baseline = (url: string, events: number) => async (): Promise<void> => {
  const count = await readEvents(url)
  if (count !== events) throw new Error(`baseline saw ${count} events, expected ${events}`)
}

/** Requests `url` (a POST), splits the body into lines and `JSON.parse`s each `data:` line; returns how many. */
export const readEvents = async (url: string): Promise<number> => {
  const response = await fetch(url, { method: "POST", body: "{}" })
  const decoder = new TextDecoder()
  let buffer = ""
  let count = 0
  for await (const bytes of response.body!) {
    buffer += decoder.decode(bytes, { stream: true })
    let newline = buffer.indexOf("\n")
    while (newline !== -1) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      if (line.startsWith("data: ")) {
        const data = line.slice(6)
        if (data !== "[DONE]") JSON.parse(data)
        count++
      }
      newline = buffer.indexOf("\n")
    }
  }
  return count
}

/**
 * Runs a provider's stream, checking it delivered exactly `expected` text
 * deltas. It counts a chunk of deltas at a time, as the baseline counts lines:
 * an `Effect` per delta would measure the consumer, not the provider.
 */
export const countTextDeltas = <E>(stream: Stream.Stream<TurnDelta.TurnDelta, E>, expected: number) =>
  Effect.gen(function*() {
    let count = 0
    yield* Stream.runForEachArray(stream, (deltas) =>
      Effect.sync(() => {
        for (const delta of deltas) {
          if (delta.type === "text_delta") count++
        }
      }))
    if (count !== expected) throw new Error(`saw ${count} text deltas, expected ${expected}`)
  })
