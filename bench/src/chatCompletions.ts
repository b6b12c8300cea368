/**
 * The Chat Completions provider's decode path: a 100,000-delta stream of
 * documented `chat.completion.chunk`s (each with its id, model, fingerprint
 * and one choice's `delta.content`, as OpenAI sends them), a usage chunk and
 * `data: [DONE]`, served on loopback, read by
 *
 * - baseline: `fetch`, splitting the body into SSE lines and `JSON.parse`-ing
 *   each `data:` line but the `[DONE]` (the floor for any client of this wire format);
 * - `ChatCompletions.layer` `streamTurn`: the provider as users run it (HTTP
 *   client, SSE parser, Schema decoding of every chunk, turn assembly);
 * - the decoder alone (`ProviderStream.decode` with `ChatCompletionsDecoder`
 *   over the body's bytes in 64 KiB chunks, no HTTP), to tell decoding cost from transport cost.
 */
import { ChatCompletions, ChatCompletionsDecoder } from "@agentloop/chat-completions"
import { Item, LanguageModel, ProviderStream } from "@agentloop/core"
import { Effect, Stream } from "effect"
import { compare } from "./measure.ts"
import { baseline, countTextDeltas, serve } from "./sseLoopback.ts"

const deltas = 100_000

const chunk = (choices: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) =>
  `data: ${
    JSON.stringify({
      id: "chatcmpl-BcO1gPfCFAf86O5CyQ9CTeEyoc8KG",
      object: "chat.completion.chunk",
      created: 1_748_488_520,
      model: "gpt-4o-mini-2024-07-18",
      service_tier: "default",
      system_fingerprint: "fp_a288987b44",
      choices,
      ...extra
    })
  }\n\n`
const delta = (delta: Record<string, unknown>, finish_reason: string | null = null) =>
  chunk([{ index: 0, delta, logprobs: null, finish_reason }])

const events = [delta({ role: "assistant", content: "", refusal: null })]
for (let i = 0; i < deltas; i++) events.push(delta({ content: `tok${i % 10} ` }))
events.push(
  delta({}, "stop"),
  chunk([], {
    usage: {
      prompt_tokens: 12,
      completion_tokens: deltas,
      total_tokens: deltas + 12,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 }
    }
  }),
  "data: [DONE]\n\n"
)
const body = Buffer.from(events.join(""))
const server = await serve(body)
const chunks = Array.from(
  { length: Math.ceil(body.length / 65536) },
  (_, i) => body.subarray(i * 65536, (i + 1) * 65536)
)

// A local server: no key.
const chatLayer = ChatCompletions.layer({ baseUrl: server.url, model: "gpt-4o-mini" })
const providerCase = () =>
  Effect.runPromise(
    Effect.gen(function*() {
      const model = yield* LanguageModel.LanguageModel
      yield* countTextDeltas(model.streamTurn([Item.userMessage("go")], {}), deltas)
    }).pipe(Effect.provide(chatLayer))
  )

const decoderCase = () =>
  Effect.runPromise(countTextDeltas(
    Stream.fromIterable(chunks).pipe(
      ProviderStream.decode(ChatCompletionsDecoder.make({ fallbackKey: "bench" }), { provider: "chat-completions" })
    ),
    deltas
  ))

await compare({
  title: `Chat Completions decode path: ${deltas.toLocaleString("en-US")} deltas over loopback HTTP`,
  units: deltas,
  unit: "delta",
  // A shared 2-core machine is noisy: more rounds steady the medians.
  rounds: 9,
  baseline: {
    name: "fetch + split SSE lines + JSON.parse (floor)",
    run: baseline(`${server.url}/chat/completions`, events.length)
  },
  cases: [
    { name: "ChatCompletions.layer streamTurn", run: providerCase },
    { name: "ChatCompletionsDecoder alone (no HTTP)", run: decoderCase }
  ]
})

server.close()
