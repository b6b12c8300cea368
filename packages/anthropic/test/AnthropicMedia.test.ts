import { AiError, Item, LanguageModel, ProviderRetry } from "@agentloop/core"
import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { Anthropic } from "../src/index.ts"
import { AnthropicWire } from "../src/testing/index.ts"

const WireLayer = Layer.mergeAll(ProviderServer.layerWire(AnthropicWire.wire), FetchHttpClient.layer)

const pdf = new TextEncoder().encode("%PDF-1.7 minimal")
const png = new Uint8Array([137, 80, 78, 71])
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const model = (config: Partial<Anthropic.Config> = {}) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    return yield* Anthropic.make({
      apiKey: Redacted.make("sk-ant-test"),
      baseUrl: server.url,
      retryPolicy: ProviderRetry.none,
      promptCache: false,
      ...config
    })
  })

/** Sends `history` over loopback HTTP and returns the body the server received. */
const sent = (history: ReadonlyArray<Item.Item>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(MockLanguageModel.textTurn("Seen."))
    const lm: LanguageModel.LanguageModel["Service"] = yield* model()
    yield* Stream.runDrain(lm.streamTurn(history, {}))
    return (yield* server.requests).at(-1)?.body as {
      readonly messages: ReadonlyArray<{ readonly role: string; readonly content: ReadonlyArray<unknown> }>
    }
  })

const refused = (history: ReadonlyArray<Item.Item>) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const lm = yield* model()
    const error = yield* Effect.flip(Stream.runDrain(lm.streamTurn(history, {})))
    return { error, requests: (yield* server.requests).length }
  })

const call: Item.FunctionCall = {
  type: "function_call",
  id: "fc",
  status: "completed",
  call_id: "toolu_1",
  name: "capture",
  arguments: "{}"
}

describe("Anthropic: images and files", () => {
  it.effect("sends images as image blocks and files as document blocks: PDFs as base64 or URL, text as text", () =>
    Effect.gen(function*() {
      const body = yield* sent([
        Item.userMessage([
          { type: "input_text", text: "Compare these." },
          Item.imageFromBytes(png, "image/png", { detail: "high" }),
          Item.imageUrl("https://example.com/cat.webp"),
          Item.fileFromBytes(pdf, "application/pdf", { filename: "report.pdf" }),
          Item.fileUrl("https://example.com/spec.pdf"),
          Item.fileFromBytes(new TextEncoder().encode("Grüße, 東京"), "text/plain", { filename: "notes.txt" })
        ])
      ])
      expect(body.messages).toStrictEqual([{
        role: "user",
        content: [
          { type: "text", text: "Compare these." },
          { type: "image", source: { type: "base64", media_type: "image/png", data: b64(png) } },
          { type: "image", source: { type: "url", url: "https://example.com/cat.webp" } },
          {
            type: "document",
            source: { type: "base64", media_type: "application/pdf", data: b64(pdf) },
            title: "report.pdf"
          },
          { type: "document", source: { type: "url", url: "https://example.com/spec.pdf" } },
          {
            type: "document",
            source: { type: "text", media_type: "text/plain", data: "Grüße, 東京" },
            title: "notes.txt"
          }
        ]
      }])
    }).pipe(Effect.provide(WireLayer)))

  it.effect("sends a tool's images and files in its tool_result, after the output's text", () =>
    Effect.gen(function*() {
      const body = yield* sent([
        Item.userMessage("Take a screenshot"),
        call,
        {
          type: "function_call_output",
          id: "fo",
          status: "completed",
          call_id: "toolu_1",
          output: "{\"ok\":true}",
          content: [
            { type: "input_text", text: "The page:" },
            Item.imageFromBytes(png, "image/png"),
            Item.fileFromBytes(pdf, "application/pdf")
          ]
        }
      ])
      expect(body.messages.at(-1)).toStrictEqual({
        role: "user",
        content: [{
          type: "tool_result",
          tool_use_id: "toolu_1",
          content: [
            { type: "text", text: "{\"ok\":true}" },
            { type: "text", text: "The page:" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: b64(png) } },
            { type: "document", source: { type: "base64", media_type: "application/pdf", data: b64(pdf) } }
          ]
        }]
      })
    }).pipe(Effect.provide(WireLayer)))

  it.effect("refuses, before sending anything, a part the API does not take, naming it", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [ReadonlyArray<Item.Item>, string]> = [
        [
          [Item.userMessage([Item.imageFromBytes(png, "image/heic")])],
          "history[0] (message \"user\") content[0] (input_image): anthropic does not take images of type image/heic (it takes image/jpeg, image/png, image/gif, image/webp)"
        ],
        // A PDF where only images go.
        [
          [Item.userMessage([Item.imageFromBytes(pdf, "application/pdf")])],
          "anthropic does not take images of type application/pdf"
        ],
        [
          [Item.userMessage([
            Item.fileFromBytes(pdf, "application/vnd.openxmlformats-officedocument.wordprocessingml.document", {
              filename: "a.docx"
            })
          ])],
          "(input_file \"a.docx\"): anthropic does not take files of type application/vnd.openxmlformats-officedocument.wordprocessingml.document (it takes application/pdf, text/plain)"
        ],
        [
          [Item.userMessage([Item.fileUrl("https://example.com/notes.txt")])],
          "anthropic does not fetch files of type text/plain (it fetches application/pdf)"
        ],
        [
          [Item.userMessage([Item.fileFromBytes(new Uint8Array([0xff, 0xfe, 0xfd]), "text/plain")])],
          "its bytes are not UTF-8 text"
        ],
        [
          [{ ...Item.assistantMessage("x"), content: [Item.imageFromBytes(png, "image/png")] }],
          "history[0] (message \"assistant\") content[0] (input_image): images and files go in user messages and tool outputs, not in an assistant message"
        ],
        [
          [{ ...Item.userMessage("x", "dev"), role: "developer", content: [Item.imageFromBytes(png, "image/png")] }],
          "not in a developer message"
        ],
        [
          // 5,242,884 characters of base64: over the API's 5 MB per image.
          [Item.userMessage([Item.imageUrl(`data:image/jpeg;base64,${"QUJD".repeat(1_310_721)}`)])],
          "5.24 MB is over anthropic's limit of 5.24 MB for an image"
        ],
        [
          // Two PDFs of 16 MB of base64 and 4 characters: over the API's 32 MB request.
          [Item.userMessage([
            { type: "input_file", file_data: `data:application/pdf;base64,${"QUJD".repeat(4_000_000)}` },
            { type: "input_file", file_data: `data:application/pdf;base64,${"QUJD".repeat(4_000_001)}` }
          ])],
          "content[1] (input_file): the request's inline images and files come to 32 MB with this one, over anthropic's limit of 32 MB for a whole request"
        ]
      ]
      for (const [history, message] of cases) {
        const { error, requests } = yield* refused(history)
        expect(error).toBeInstanceOf(AiError.InvalidRequest)
        expect(error.message).toContain(message)
        expect(requests).toBe(0)
      }
      // Tens of megabytes of base64 are built and checked: a busy machine needs more than the default 5 s.
    }).pipe(Effect.provide(WireLayer)), 30_000)
})
