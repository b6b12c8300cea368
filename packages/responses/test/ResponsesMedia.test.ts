import { AiError, Item } from "@agentloop/core"
import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { Responses } from "../src/index.ts"
import { ResponsesWire } from "../src/testing/index.ts"
import { provider } from "./fixtures.ts"

const WireLayer = Layer.mergeAll(ProviderServer.layerWire(ResponsesWire.wire), FetchHttpClient.layer)

const pdf = new TextEncoder().encode("%PDF-1.7 minimal")
const png = new Uint8Array([137, 80, 78, 71])

/** Sends `history` over loopback HTTP and returns the body the server received. */
const sent = (history: ReadonlyArray<Item.Item>, config?: Partial<Responses.Config>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(MockLanguageModel.textTurn("Seen."))
    const model = yield* provider(config)
    yield* Stream.runDrain(model.streamTurn(history, {}))
    const requests = yield* server.requests
    return requests.at(-1)?.body as { readonly input: ReadonlyArray<unknown>; readonly [key: string]: unknown }
  })

/** Sends `history`, which must be refused before any request: the error, and how many requests the server saw. */
const refused = (history: ReadonlyArray<Item.Item>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const model = yield* provider()
    const error = yield* Effect.flip(Stream.runDrain(model.streamTurn(history, {})))
    return { error, requests: (yield* server.requests).length }
  })

describe("Responses: images and files", () => {
  it.effect("sends images and files in a user message as input_image and input_file, detail auto by default", () =>
    Effect.gen(function*() {
      const body = yield* sent([
        Item.userMessage([
          { type: "input_text", text: "Compare these." },
          Item.imageFromBytes(png, "image/png", { detail: "high" }),
          Item.imageUrl("https://example.com/cat.webp"),
          Item.fileFromBytes(pdf, "application/pdf", { filename: "report.pdf" }),
          Item.fileUrl("https://example.com/spec.docx")
        ])
      ])
      expect(body.input).toStrictEqual([{
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "Compare these." },
          { type: "input_image", image_url: "data:image/png;base64,iVBORw==", detail: "high" },
          { type: "input_image", image_url: "https://example.com/cat.webp", detail: "auto" },
          {
            type: "input_file",
            file_data: `data:application/pdf;base64,${Buffer.from(pdf).toString("base64")}`,
            filename: "report.pdf"
          },
          { type: "input_file", file_url: "https://example.com/spec.docx" }
        ]
      }])
    }).pipe(Effect.provide(WireLayer)))

  it.effect("sends a tool's images and files after its output's JSON, in one output list", () =>
    Effect.gen(function*() {
      const body = yield* sent([
        Item.userMessage("Take a screenshot"),
        { type: "function_call", id: "fc", status: "completed", call_id: "call_1", name: "capture", arguments: "{}" },
        {
          type: "function_call_output",
          id: "fo",
          status: "completed",
          call_id: "call_1",
          output: "{\"ok\":true}",
          content: [{ type: "input_text", text: "The page:" }, Item.imageFromBytes(png, "image/png")]
        },
        {
          type: "function_call_output",
          id: "fo2",
          status: "completed",
          call_id: "call_1",
          output: "plain",
          content: []
        }
      ])
      expect(body.input.slice(2)).toStrictEqual([
        {
          type: "function_call_output",
          call_id: "call_1",
          output: [
            { type: "input_text", text: "{\"ok\":true}" },
            { type: "input_text", text: "The page:" },
            { type: "input_image", image_url: "data:image/png;base64,iVBORw==", detail: "auto" }
          ]
        },
        { type: "function_call_output", call_id: "call_1", output: "plain" }
      ])
    }).pipe(Effect.provide(WireLayer)))

  it.effect("refuses, before sending anything, a part the API does not take, naming it", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [Item.Item, string]> = [
        [
          Item.userMessage([Item.imageFromBytes(png, "image/heic")]),
          "history[0] (message \"user\") content[0] (input_image): openai does not take images of type image/heic (it takes image/png, image/jpeg, image/webp, image/gif)"
        ],
        [
          Item.userMessage([
            { type: "input_text", text: "x" },
            Item.fileFromBytes(png, "application/zip", { filename: "a.zip" })
          ]),
          "history[0] (message \"user\") content[1] (input_file \"a.zip\"): openai does not take files of type application/zip"
        ],
        [
          Item.userMessage([Item.imageFromBytes(pdf, "application/pdf")]),
          "history[0] (message \"user\") content[0] (input_image): openai does not take images of type application/pdf"
        ],
        [
          { ...Item.assistantMessage("see"), content: [Item.imageUrl("https://example.com/a.png")] },
          "history[0] (message \"assistant\") content[0] (input_image): images and files go in user messages and tool outputs, not in an assistant message"
        ],
        [
          { ...Item.userMessage("x", "sys"), role: "system", content: [Item.fileUrl("https://example.com/a.pdf")] },
          "not in a system message"
        ],
        [Item.userMessage([Item.imageUrl("data:image/png;base64,***")]), "its data URL's content is not base64"],
        [
          // 50,000,004 characters of base64: over the API's 50 MB per request.
          Item.userMessage([Item.imageUrl(`data:image/png;base64,${"A".repeat(50_000_004)}`)]),
          "come to 50 MB with this one, over openai's limit of 50 MB of images and files in one request"
        ]
      ]
      for (const [item, message] of cases) {
        const { error, requests } = yield* refused([item])
        expect(error).toBeInstanceOf(AiError.InvalidRequest)
        expect(error.message).toContain(message)
        expect(requests).toBe(0)
      }
      // Tens of megabytes of base64 are built and checked: a busy machine needs more than the default 5 s.
    }).pipe(Effect.provide(WireLayer)), 30_000)
})

describe("Responses: prompt caching", () => {
  it.effect("sends prompt_cache_key from the layer, or from RequestOptions for a request, and reads cached tokens", () =>
    Effect.gen(function*() {
      const fromLayer = yield* sent([Item.userMessage("Hi")], { promptCacheKey: "tenant-7" })
      expect(fromLayer.prompt_cache_key).toBe("tenant-7")
      const none = yield* sent([Item.userMessage("Hi")])
      expect("prompt_cache_key" in none).toBe(false)
      const overridden = yield* sent([Item.userMessage("Hi")], { promptCacheKey: "tenant-7" }).pipe(
        Effect.provideService(Responses.RequestOptions, { promptCacheKey: "conversation-42" })
      )
      expect(overridden.prompt_cache_key).toBe("conversation-42")

      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(
        MockLanguageModel.textTurn("Hi", { usage: { input: 3000, output: 5, total: 3005, cachedInput: 2048 } })
      )
      const model = yield* provider()
      const deltas = yield* Stream.runCollect(model.streamTurn([Item.userMessage("Hi")], {}))
      const last = deltas.at(-1)
      expect(last?.type === "turn_complete" && last.turn.usage).toMatchObject({ input: 3000, cachedInput: 2048 })
    }).pipe(Effect.provide(WireLayer)))
})
