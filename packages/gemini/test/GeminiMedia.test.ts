import { AiError, Item, LanguageModel, ProviderRetry } from "@agentloop/core"
import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { Gemini } from "../src/index.ts"
import { GeminiWire } from "../src/testing/index.ts"

const WireLayer = Layer.mergeAll(ProviderServer.layerWire(GeminiWire.wire), FetchHttpClient.layer)

const pdf = new TextEncoder().encode("%PDF-1.7 minimal")
const png = new Uint8Array([137, 80, 78, 71])
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const model = (name: string) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    return yield* Gemini.make({
      apiKey: Redacted.make("gemini-test-key"),
      baseUrl: server.url,
      model: name,
      retryPolicy: ProviderRetry.none
    })
  })

/** Sends `history` to `name` over loopback HTTP: the body the server received, and the turn's usage. */
const sent = (
  history: ReadonlyArray<Item.Item>,
  name = "gemini-3-pro-preview",
  reply = MockLanguageModel.textTurn("Seen.")
) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(reply)
    const lm: LanguageModel.LanguageModel["Service"] = yield* model(name)
    const deltas = yield* Stream.runCollect(lm.streamTurn(history, {}))
    const last = deltas.at(-1)
    const body = (yield* server.requests).at(-1)?.body as {
      readonly contents: ReadonlyArray<{ readonly role: string; readonly parts: ReadonlyArray<unknown> }>
    }
    return { body, usage: last?.type === "turn_complete" ? last.turn.usage : undefined }
  })

const refused = (history: ReadonlyArray<Item.Item>, name = "gemini-3-pro-preview") =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const lm = yield* model(name)
    const error = yield* Effect.flip(Stream.runDrain(lm.streamTurn(history, {})))
    return { error, requests: (yield* server.requests).length }
  })

const call: Item.FunctionCall = {
  type: "function_call",
  id: "fc",
  status: "completed",
  call_id: "call_1",
  name: "capture",
  arguments: "{}"
}
const screenshotOutput: Item.FunctionCallOutput = {
  type: "function_call_output",
  id: "fo",
  status: "completed",
  call_id: "call_1",
  output: "{\"ok\":true}",
  content: [{ type: "input_text", text: "The page:" }, Item.imageFromBytes(png, "image/png")]
}

describe("Gemini: images and files", () => {
  it.effect("sends inline bytes as inlineData and URLs as fileData with the media type their name tells", () =>
    Effect.gen(function*() {
      const { body } = yield* sent([
        Item.userMessage([
          { type: "input_text", text: "Compare these." },
          Item.imageFromBytes(png, "image/png", { detail: "low" }),
          Item.fileFromBytes(pdf, "application/pdf", { filename: "report.pdf" }),
          Item.fileUrl("https://example.com/download?id=3", { filename: "talk.mp3" }),
          Item.imageUrl("gs://bucket/cat.jpg")
        ])
      ])
      expect(body.contents).toStrictEqual([{
        role: "user",
        parts: [
          { text: "Compare these." },
          { inlineData: { mimeType: "image/png", data: b64(png) } },
          { inlineData: { mimeType: "application/pdf", data: b64(pdf) } },
          { fileData: { mimeType: "audio/mp3", fileUri: "https://example.com/download?id=3" } },
          { fileData: { mimeType: "image/jpeg", fileUri: "gs://bucket/cat.jpg" } }
        ]
      }])
    }).pipe(Effect.provide(WireLayer)))

  it.effect("sends a tool's images in its functionResponse's parts (Gemini 3), its text after the response", () =>
    Effect.gen(function*() {
      const { body } = yield* sent([Item.userMessage("Take a screenshot"), call, screenshotOutput])
      expect(body.contents.at(-1)).toStrictEqual({
        role: "user",
        parts: [
          {
            functionResponse: {
              id: "call_1",
              name: "capture",
              response: { ok: true },
              parts: [{ inlineData: { mimeType: "image/png", data: b64(png) } }]
            }
          },
          { text: "The page:" }
        ]
      })
    }).pipe(Effect.provide(WireLayer)))

  it.effect("refuses, before sending anything, a part Gemini does not take, naming it", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [ReadonlyArray<Item.Item>, string, string?]> = [
        [
          [Item.userMessage([Item.imageFromBytes(png, "image/gif")])],
          "history[0] (message \"user\") content[0] (input_image): gemini does not take images of type image/gif"
        ],
        [
          [Item.userMessage([Item.fileFromBytes(pdf, "application/zip", { filename: "a.zip" })])],
          "(input_file \"a.zip\"): gemini does not take files of type application/zip"
        ],
        [
          [Item.userMessage([Item.imageUrl("https://example.com/image?id=1")])],
          "gemini needs the media type of an image URL"
        ],
        [[Item.userMessage([Item.imageUrl("ftp://example.com/a.png")])], "gemini does not fetch ftp: URLs"],
        [
          [{ ...Item.assistantMessage("x"), content: [Item.imageFromBytes(png, "image/png")] }],
          "not in an assistant message"
        ],
        // Before Gemini 3, a function response has no parts.
        [
          [Item.userMessage("Take a screenshot"), call, screenshotOutput],
          "history[2] (function_call_output \"fo\") content[1] (input_image): gemini-2.5-flash takes no images or files in a function response (Gemini 3 models do)",
          "gemini-2.5-flash"
        ],
        // A function response takes inline PNG, JPEG, WebP, PDF and text only: no URL, no audio.
        [
          [Item.userMessage("Listen"), call, {
            ...screenshotOutput,
            content: [Item.imageUrl("https://example.com/a.png")]
          }],
          "gemini fetches no URLs here: send the image's bytes"
        ],
        [
          [Item.userMessage("Listen"), call, { ...screenshotOutput, content: [Item.fileFromBytes(png, "audio/wav")] }],
          "gemini does not take files of type audio/wav (it takes application/pdf, text/plain)"
        ],
        [
          // 50,000,001 bytes of PDF: over Gemini's 50 MB per PDF.
          [Item.userMessage([{
            type: "input_file",
            file_data: `data:application/pdf;base64,${"QUJD".repeat(16_666_667)}`
          }])],
          "is over gemini's limit of 50 MB for a PDF"
        ]
      ]
      for (const [history, message, name] of cases) {
        const { error, requests } = yield* refused(history, name)
        expect(error).toBeInstanceOf(AiError.InvalidRequest)
        expect(error.message).toContain(message)
        expect(requests).toBe(0)
      }
      // Tens of megabytes of base64 are built and checked: a busy machine needs more than the default 5 s.
    }).pipe(Effect.provide(WireLayer)), 30_000)
})

describe("Gemini: implicit prompt caching", () => {
  it.effect("counts the tokens Gemini's implicit cache served as cached input", () =>
    Effect.gen(function*() {
      const { usage } = yield* sent(
        [Item.userMessage("Again")],
        "gemini-2.5-flash",
        MockLanguageModel.textTurn("Seen.", { usage: { input: 5000, output: 10, total: 5010, cachedInput: 4096 } })
      )
      expect(usage).toMatchObject({ input: 5000, output: 10, cachedInput: 4096 })
    }).pipe(Effect.provide(WireLayer)))
})
