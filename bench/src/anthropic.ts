/**
 * The Anthropic provider's decode path: a 100,000-delta Messages stream of
 * documented `content_block_delta` / `text_delta` events served on loopback,
 * read by
 *
 * - baseline: `fetch`, splitting the body into SSE lines and `JSON.parse`-ing
 *   each `data:` line (the floor for any client of this wire format);
 * - `Anthropic.layer` `streamTurn`: the provider as users run it (HTTP client,
 *   SSE parser, Schema decoding of every event, turn assembly);
 * - the decoder alone (`ProviderStream.decode` with `AnthropicDecoder` over the
 *   body's bytes in 64 KiB chunks, no HTTP), to tell decoding cost from transport cost.
 */
import { Anthropic, AnthropicDecoder } from "@agentloop/anthropic"
import { Item, LanguageModel, ProviderStream } from "@agentloop/core"
import { Effect, Redacted, Stream } from "effect"
import { compare } from "./measure.ts"
import { baseline, countTextDeltas, serve } from "./sseLoopback.ts"

const deltas = 100_000

const event = (type: string, fields: Record<string, unknown> = {}) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...fields })}\n\n`

const events = [
  event("message_start", {
    message: {
      id: "msg_bench",
      type: "message",
      role: "assistant",
      content: [],
      model: "claude-haiku-4-5-20251001",
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 }
    }
  }),
  event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
  event("ping")
]
for (let i = 0; i < deltas; i++) {
  events.push(event("content_block_delta", { index: 0, delta: { type: "text_delta", text: `tok${i % 10} ` } }))
}
events.push(
  event("content_block_stop", { index: 0 }),
  event("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: deltas } }),
  event("message_stop")
)
const body = Buffer.from(events.join(""))
const server = await serve(body)
const chunks = Array.from(
  { length: Math.ceil(body.length / 65536) },
  (_, i) => body.subarray(i * 65536, (i + 1) * 65536)
)

const anthropicLayer = Anthropic.layer({ apiKey: Redacted.make("bench"), baseUrl: server.url })
const providerCase = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const model = yield* LanguageModel.LanguageModel
      yield* countTextDeltas(model.streamTurn([Item.userMessage("go")], {}), deltas)
    }).pipe(Effect.provide(anthropicLayer))
  )

const decoderCase = () =>
  Effect.runPromise(countTextDeltas(
    Stream.fromIterable(chunks).pipe(
      ProviderStream.decode(AnthropicDecoder.make({ fallbackKey: "bench" }), { provider: "anthropic" })
    ),
    deltas
  ))

await compare({
  title: `Anthropic decode path: ${deltas.toLocaleString("en-US")} deltas over loopback HTTP`,
  units: deltas,
  unit: "delta",
  // A shared 2-core machine is noisy: more rounds steady the medians.
  rounds: 9,
  baseline: {
    name: "fetch + split SSE lines + JSON.parse (floor)",
    run: baseline(`${server.url}/v1/messages`, events.length)
  },
  cases: [
    { name: "Anthropic.layer streamTurn", run: providerCase },
    { name: "AnthropicDecoder alone (no HTTP)", run: decoderCase }
  ]
})

server.close()
