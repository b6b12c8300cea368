/**
 * The Gemini provider's decode path: a 100,000-delta `streamGenerateContent`
 * stream served on loopback, read by
 *
 * - baseline: `fetch`, splitting the body into SSE lines and `JSON.parse`-ing
 *   each `data:` line (the floor for any client of this wire format);
 * - `Gemini.layer` `streamTurn`: the provider as users run it (HTTP client,
 *   SSE parser, Schema decoding of every chunk, turn assembly).
 */
import { Item, LanguageModel } from "@agentloop/core"
import { Gemini } from "@agentloop/gemini"
import { Effect, Redacted, Stream } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { compare } from "./measure.ts"

const deltas = 100_000

const frame = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`
const chunk = (text: string, finishReason?: string) =>
  frame({
    candidates: [{
      content: { parts: [{ text }], role: "model" },
      ...(finishReason === undefined ? {} : { finishReason }),
      index: 0
    }],
    usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 1, totalTokenCount: 13 },
    modelVersion: "gemini-2.5-flash",
    responseId: "bench"
  })

const frames: Array<string> = []
for (let i = 0; i < deltas - 1; i++) frames.push(chunk(`tok${i % 10} `))
frames.push(chunk("end", "STOP"))
const body = Buffer.from(frames.join(""))
const writeSize = 64 * 1024

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
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

const baseline = async () => {
  const response = await fetch(`${url}/models/m:streamGenerateContent?alt=sse`, { method: "POST", body: "{}" })
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
        JSON.parse(line.slice(6))
        count++
      }
      newline = buffer.indexOf("\n")
    }
  }
  if (count !== deltas) throw new Error(`baseline saw ${count} events`)
}

const geminiLayer = Gemini.layer({ apiKey: Redacted.make("bench"), baseUrl: url, model: "m" })
const geminiCase = () =>
  Effect.runPromise(Effect.gen(function*() {
    const lm = yield* LanguageModel.LanguageModel
    let count = 0
    yield* Stream.runForEach(lm.streamTurn([Item.userMessage("go")], {}), (delta) =>
      Effect.sync(() => {
        if (delta.type === "text_delta") count++
      }))
    if (count !== deltas) throw new Error(`Gemini emitted ${count} text deltas`)
  }).pipe(Effect.provide(geminiLayer)))

await compare({
  title: `Gemini decode path: ${deltas.toLocaleString("en-US")} deltas over loopback HTTP`,
  units: deltas,
  unit: "delta",
  baseline: { name: "fetch + split SSE lines + JSON.parse (floor)", run: baseline },
  cases: [{ name: "Gemini.layer streamTurn", run: geminiCase }]
})

server.close()
