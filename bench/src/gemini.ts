/**
 * The Gemini provider's decode path: a 100,000-delta `streamGenerateContent`
 * stream served on loopback, read by
 *
 * - baseline: `fetch`, splitting the body into SSE lines and `JSON.parse`-ing
 *   each `data:` line (the floor for any client of this wire format);
 * - `Gemini.layer` `streamTurn`: the provider as users run it (HTTP client,
 *   SSE parser, Schema decoding of every chunk, turn assembly);
 * - the decoder alone (`ProviderStream.decode` with `GeminiDecoder` over the
 *   body's bytes in 64 KiB chunks, no HTTP), to tell decoding cost from transport cost.
 */
import { Item, LanguageModel, ProviderStream } from "@agentloop/core"
import { Gemini, GeminiDecoder } from "@agentloop/gemini"
import { Effect, Redacted, Stream } from "effect"
import { compare } from "./measure.ts"
import { baseline, countTextDeltas, serve } from "./sseLoopback.ts"

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
const server = await serve(body)
const chunks = Array.from(
  { length: Math.ceil(body.length / 65536) },
  (_, i) => body.subarray(i * 65536, (i + 1) * 65536)
)

const geminiLayer = Gemini.layer({ apiKey: Redacted.make("bench"), baseUrl: server.url, model: "m" })
const geminiCase = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const lm = yield* LanguageModel.LanguageModel
      yield* countTextDeltas(lm.streamTurn([Item.userMessage("go")], {}), deltas)
    }).pipe(Effect.provide(geminiLayer))
  )

const decoderCase = () =>
  Effect.runPromise(countTextDeltas(
    Stream.fromIterable(chunks).pipe(
      ProviderStream.decode(GeminiDecoder.make({ model: "m", fallbackKey: "bench" }), { provider: "gemini" })
    ),
    deltas
  ))

await compare({
  title: `Gemini decode path: ${deltas.toLocaleString("en-US")} deltas over loopback HTTP`,
  units: deltas,
  unit: "delta",
  // A shared 2-core machine is noisy: more rounds steady the medians.
  rounds: 9,
  baseline: { name: "fetch + split SSE lines + JSON.parse (floor)", run: baseline(server.url, deltas) },
  cases: [
    { name: "Gemini.layer streamTurn", run: geminiCase },
    { name: "GeminiDecoder alone (no HTTP)", run: decoderCase }
  ]
})

server.close()
