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
import { baseline, countTextDeltas, serve } from "./sseLoopback.ts"

const deltas = 100_000
const itemId = "msg_bench"

let sequence = 0
const event = (type: string, fields: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`
const response = (status: string, extra: Record<string, unknown> = {}) => ({
  id: "resp_bench",
  object: "response",
  status,
  model: "gpt-5-mini",
  output: [],
  ...extra
})

const events = [
  event("response.created", { response: response("in_progress") }),
  event("response.output_item.added", {
    output_index: 0,
    item: { id: itemId, type: "message", status: "in_progress", role: "assistant", content: [] }
  }),
  event("response.content_part.added", {
    item_id: itemId,
    output_index: 0,
    content_index: 0,
    part: { type: "output_text", text: "", annotations: [] }
  })
]
for (let i = 0; i < deltas; i++) {
  events.push(event("response.output_text.delta", {
    item_id: itemId,
    output_index: 0,
    content_index: 0,
    delta: `tok${i % 10} `,
    logprobs: []
  }))
}
events.push(event("response.completed", {
  response: response("completed", {
    usage: {
      input_tokens: 12,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: deltas,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: deltas + 12
    }
  })
}))
const body = Buffer.from(events.join(""))
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
    run: baseline(`${server.url}/responses`, events.length)
  },
  cases: [
    { name: "Responses.layer streamTurn", run: providerCase },
    { name: "ResponsesDecoder alone (no HTTP)", run: decoderCase }
  ]
})

server.close()
