import { AiError, Item, LanguageModel } from "@agentloop/core"
import type { ProviderServer } from "@agentloop/testing"
import { ProviderServer as Server } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { ChatCompletions } from "../src/index.ts"
import { delta, done, finish, role, usage } from "./fixtures.ts"
import { completed, failing, requestBody, run, turn } from "./harness.ts"

const pdf = new TextEncoder().encode("%PDF-1.7 minimal")
const png = new Uint8Array([137, 80, 78, 71])
const pdfData = `data:application/pdf;base64,${Buffer.from(pdf).toString("base64")}`

const call: Item.FunctionCall = {
  type: "function_call",
  id: "fc",
  status: "completed",
  call_id: "call_1",
  name: "capture",
  arguments: "{}"
}

const toolOutput = (content: ReadonlyArray<Item.ToolContentPart>): Item.FunctionCallOutput => ({
  type: "function_call_output",
  id: "fo",
  status: "completed",
  call_id: "call_1",
  output: "{\"ok\":true}",
  content
})

const asRole = (message: Item.Message, to: Item.Role): Item.Message => ({ ...message, role: to })

/** Sends `history` to a loopback server answering "Seen." and returns the `messages` it received. */
const sentMessages = (server: ProviderServer.ProviderServer["Service"], history: ReadonlyArray<Item.Item>) =>
  Effect.gen(function*() {
    yield* server.reply(Server.sse([role, delta({ content: "Seen." }), finish("stop"), usage(), done]))
    yield* turn(history)
    const requests = yield* server.requests
    return (requests.at(-1)?.body as { readonly messages: ReadonlyArray<unknown> }).messages
  })

/** Sends `history`, which must be refused before any request: the error, and how many requests the server saw. */
const refused = (server: ProviderServer.ProviderServer["Service"], history: ReadonlyArray<Item.Item>) =>
  Effect.gen(function*() {
    const { deltas, error } = yield* failing(history)
    expect(deltas).toStrictEqual([])
    return { error, requests: (yield* server.requests).length }
  })

describe("ChatCompletions: images and files", () => {
  it.effect("sends a user message's images as image_url parts and its PDFs as file parts, a lone text as a string", () =>
    run((server) =>
      Effect.gen(function*() {
        const messages = yield* sentMessages(server, [
          Item.userMessage([
            { type: "input_text", text: "Compare these." },
            Item.imageFromBytes(png, "image/png", { detail: "high" }),
            Item.imageUrl("https://example.com/cat.webp"),
            Item.fileFromBytes(pdf, "application/pdf", { filename: "report.pdf" }),
            Item.fileFromBytes(pdf, "application/pdf")
          ]),
          Item.userMessage("Just text", "second")
        ])
        expect(messages).toStrictEqual([
          {
            role: "user",
            content: [
              { type: "text", text: "Compare these." },
              { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw==", detail: "high" } },
              { type: "image_url", image_url: { url: "https://example.com/cat.webp" } },
              { type: "file", file: { file_data: pdfData, filename: "report.pdf" } },
              // OpenAI refuses file_data without a filename: one is made up.
              { type: "file", file: { file_data: pdfData, filename: "document.pdf" } }
            ]
          },
          { role: "user", content: "Just text" }
        ])
        // A message of one image is an array of one part.
        const lone = yield* sentMessages(server, [Item.userMessage([Item.imageUrl("http://example.com/a.jpg")])])
        expect(lone).toStrictEqual([
          { role: "user", content: [{ type: "image_url", image_url: { url: "http://example.com/a.jpg" } }] }
        ])
      })
    ))

  it.effect("sends a tool's attached text after its output's JSON as text parts, and an output alone as a string", () =>
    run((server) =>
      Effect.gen(function*() {
        const messages = yield* sentMessages(server, [
          Item.userMessage("Take a screenshot"),
          call,
          toolOutput([{ type: "input_text", text: "The page says hello." }]),
          { ...toolOutput([]), id: "fo2", output: "plain" }
        ])
        expect(messages.slice(2)).toStrictEqual([
          {
            role: "tool",
            tool_call_id: "call_1",
            content: [{ type: "text", text: "{\"ok\":true}" }, { type: "text", text: "The page says hello." }]
          },
          { role: "tool", tool_call_id: "call_1", content: "plain" }
        ])
      })
    ))

  it.effect("refuses, before sending anything, a part the API does not take or cannot carry there, naming it", () =>
    run((server) =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [ReadonlyArray<Item.Item>, string]> = [
          [
            [Item.userMessage([Item.imageFromBytes(png, "image/heic")])],
            "history[0] (message \"user\") content[0] (input_image): chat-completions does not take images of type image/heic (it takes image/png, image/jpeg, image/webp, image/gif)"
          ],
          [
            [Item.userMessage([Item.imageFromBytes(pdf, "application/pdf")])],
            "chat-completions does not take images of type application/pdf"
          ],
          [
            [
              Item.userMessage([
                { type: "input_text", text: "x" },
                Item.fileFromBytes(pdf, "text/plain", { filename: "notes.txt" })
              ])
            ],
            "history[0] (message \"user\") content[1] (input_file \"notes.txt\"): chat-completions does not take files of type text/plain (it takes application/pdf)"
          ],
          [
            [Item.userMessage([Item.fileUrl("https://example.com/spec.pdf")])],
            "content[0] (input_file): chat-completions takes no file URLs (OpenAI's file part has no file_url): send the file's bytes"
          ],
          [
            [Item.userMessage([Item.imageUrl("ftp://example.com/cat.png")])],
            "chat-completions does not fetch ftp: URLs (it fetches https:, http:)"
          ],
          [
            [Item.userMessage([Item.imageUrl("file:///etc/cat.png")])],
            "chat-completions does not fetch file: URLs"
          ],
          [[Item.userMessage([Item.imageUrl("not a url")])], "its URL is neither an http(s) URL nor a data: URL"],
          [[Item.userMessage([Item.imageUrl("data:image/png;base64,***")])], "its data URL's content is not base64"],
          [[Item.userMessage([Item.imageUrl("data:image/png;base64,abc")])], "its data URL's content is not base64"],
          [
            [Item.userMessage([Item.imageUrl("data:image/png,iVBORw==")])],
            "a data URL must be data:<media type>;base64,<data>"
          ],
          [
            [{ ...Item.assistantMessage("see"), content: [Item.imageUrl("https://example.com/a.png")] }],
            "history[0] (message \"assistant\") content[0] (input_image): images and files go in user messages, not in an assistant message"
          ],
          [
            [asRole(Item.userMessage([Item.fileFromBytes(pdf, "application/pdf")], "sys"), "system")],
            "history[0] (message \"sys\") content[0] (input_file): images and files go in user messages, not in a system message"
          ],
          [
            [asRole(
              Item.userMessage([{ type: "input_text", text: "x" }, Item.imageUrl("https://a.b/c.png")]),
              "developer"
            )],
            "content[1] (input_image): images and files go in user messages, not in a developer message"
          ],
          [
            [Item.userMessage("Take a screenshot"), call, toolOutput([Item.imageFromBytes(png, "image/png")])],
            "history[2] (function_call_output \"fo\") content[0] (input_image): a tool message carries text only on chat-completions"
          ],
          [
            [
              Item.userMessage("Read it"),
              call,
              toolOutput([{ type: "input_text", text: "Page 1:" }, Item.fileFromBytes(pdf, "application/pdf")])
            ],
            "history[2] (function_call_output \"fo\") content[1] (input_file): a tool message carries text only"
          ]
        ]
        for (const [history, message] of cases) {
          const { error, requests } = yield* refused(server, history)
          expect(error).toBeInstanceOf(AiError.InvalidRequest)
          expect(error.message).toContain(message)
          expect(requests).toBe(0)
        }
      })
    ))

  // Real time: the 22 MB request goes out over loopback HTTP, and the test clock would stand still meanwhile.
  it.live(
    "refuses, before sending anything, images and files over OpenAI's documented limits",
    () =>
      run((server) =>
        Effect.gen(function*() {
          // 50,000,004 characters of base64: over the 50 MB of images and files one request may carry.
          const big = yield* refused(server, [
            Item.userMessage([Item.imageUrl(`data:image/png;base64,${"A".repeat(50_000_004)}`)])
          ])
          expect(big.error.message).toContain(
            "content[0] (input_image): the request's inline images and files come to 50 MB with this one, over chat-completions's limit of 50 MB of images and files in one request"
          )
          expect(big.requests).toBe(0)
          // Two PDFs of 16.5 MB each: under 50 MB of base64 together, but over the 32 MB of PDFs one request may carry.
          const half = `data:application/pdf;base64,${"A".repeat(22_000_000)}`
          const pdfs = yield* refused(server, [
            Item.userMessage([
              { type: "input_file", file_data: half, filename: "a.pdf" },
              { type: "input_file", file_data: half, filename: "b.pdf" }
            ])
          ])
          expect(pdfs.error.message).toContain(
            "content[1] (input_file \"b.pdf\"): the request's PDFs come to 33 MB with this one, over chat-completions's limit of 32 MB of PDFs in one request"
          )
          expect(pdfs.requests).toBe(0)
          // Either of them alone is sent.
          const messages = yield* sentMessages(server, [
            Item.userMessage([{ type: "input_file", file_data: half, filename: "a.pdf" }])
          ])
          expect(messages).toHaveLength(1)
          // Tens of megabytes of base64 are built and checked: a busy machine needs more than the default 5 s.
        })
      ),
    60_000
  )
})

describe("ChatCompletions: prompt caching", () => {
  it.effect("sends prompt_cache_key from the layer, or from RequestOptions for a request", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(...[1, 2].map(() => Server.sse([role, delta({ content: "ok" }), finish("stop"), done])))
        yield* turn([Item.userMessage("Hi")])
        expect((yield* requestBody(server, 0)).prompt_cache_key).toBe("tenant-7")
        yield* turn([Item.userMessage("Hi")]).pipe(
          Effect.provideService(ChatCompletions.RequestOptions, { promptCacheKey: "conversation-42" })
        )
        expect((yield* requestBody(server, 1)).prompt_cache_key).toBe("conversation-42")
      }), { promptCacheKey: "tenant-7" }))

  it.effect("sends no prompt_cache_key unless told, and reads cache hits as cachedInput, with no cache write", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(Server.sse([
          role,
          delta({ content: "ok" }),
          finish("stop"),
          usage({
            prompt_tokens: 3000,
            completion_tokens: 5,
            total_tokens: 3005,
            prompt_tokens_details: { cached_tokens: 2048 }
          }),
          done
        ]))
        const result = completed(yield* turn([Item.userMessage("Hi")]))
        expect("prompt_cache_key" in (yield* requestBody(server))).toBe(false)
        expect(result.usage).toStrictEqual({ input: 3000, output: 5, total: 3005, cachedInput: 2048 })
      })
    ))

  it.effect("a per-request key applies to the requests of a stream it is provided to", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(Server.sse([role, delta({ content: "ok" }), finish("stop"), done]))
        const model = yield* LanguageModel.LanguageModel
        yield* Stream.runDrain(
          model.streamTurn([Item.userMessage("Hi")], {}).pipe(
            Stream.provideService(ChatCompletions.RequestOptions, { promptCacheKey: "user-9" })
          )
        )
        expect((yield* requestBody(server)).prompt_cache_key).toBe("user-9")
      })
    ))
})
