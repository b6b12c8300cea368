/**
 * The Responses provider's decode path: a 100,000-delta stream of documented
 * `response.output_text.delta` events served on loopback, read by
 *
 * - baseline: `fetch`, splitting the body into SSE lines and `JSON.parse`-ing
 *   each `data:` line (the floor for any client of this wire format);
 * - `Responses.layer` `streamTurn`: the provider as users run it (HTTP client,
 *   SSE parser, Schema decoding of every event, turn assembly);
 * - the decoder alone (`ProviderStream.decode` with `ResponsesDecoder` over the
 *   body's bytes in 64 KiB chunks, no HTTP), to tell decoding cost from transport cost.
 */
import { Item, LanguageModel, ProviderStream } from "@agentloop/core"
import { Responses, ResponsesDecoder } from "@agentloop/responses"
import { Effect, Redacted, Stream } from "effect"
import { compare } from "./measure.ts"
import * as ResponsesBody from "./responsesBody.ts"
import { baseline, countTextDeltas, serve } from "./sseLoopback.ts"

const deltas = 100_000
const { body, events } = ResponsesBody.make(deltas)
const server = await serve(body)
const chunks = Array.from(
  { length: Math.ceil(body.length / 65536) },
  (_, i) => body.subarray(i * 65536, (i + 1) * 65536)
)

const responsesLayer = Responses.layer({ apiKey: Redacted.make("bench"), baseUrl: server.url })
const providerCase = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const model = yield* LanguageModel.LanguageModel
      yield* countTextDeltas(model.streamTurn([Item.userMessage("go")], {}), deltas)
    }).pipe(Effect.provide(responsesLayer))
  )

const decoderCase = () =>
  Effect.runPromise(countTextDeltas(
    Stream.fromIterable(chunks).pipe(ProviderStream.decode(ResponsesDecoder.make(), { provider: "openai" })),
    deltas
  ))

await compare({
  title: `Responses decode path: ${deltas.toLocaleString("en-US")} deltas over loopback HTTP`,
  units: deltas,
  unit: "delta",
  // A shared 2-core machine is noisy: more rounds steady the medians.
  rounds: 9,
  baseline: {
    name: "fetch + split SSE lines + JSON.parse (floor)",
    run: baseline(`${server.url}/responses`, events)
  },
  cases: [
    { name: "Responses.layer streamTurn", run: providerCase },
    { name: "ResponsesDecoder alone (no HTTP)", run: decoderCase }
  ]
})

server.close()
