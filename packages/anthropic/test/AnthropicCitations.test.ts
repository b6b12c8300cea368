import { AnthropicCitation } from "@agentloop/anthropic"
import { type Item, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { blockStart, blockStop, delta, messageDelta, messageStart, messageStop, textBlock } from "./fixtures.ts"
import { completed, requestBody, run, turn } from "./harness.ts"

const hello = [{
  type: "message",
  id: "u",
  status: "completed",
  role: "user",
  content: [{ type: "input_text", text: "Hi" }]
}] as const satisfies ReadonlyArray<Item.Item>

// Citations as the Messages API streams them (documents, PDFs, web search, search results).
const chars = {
  type: "char_location",
  cited_text: "The grass is green. ",
  document_index: 0,
  document_title: "Facts",
  file_id: null,
  start_char_index: 0,
  end_char_index: 20
}
const pages = {
  type: "page_location",
  cited_text: "Revenue grew 12%.",
  document_index: 1,
  document_title: null,
  file_id: "file_011",
  start_page_number: 3,
  end_page_number: 4
}
const web = {
  type: "web_search_result_location",
  cited_text: "Paris is the capital and largest city of France.",
  url: "https://en.wikipedia.org/wiki/Paris",
  title: "Paris - Wikipedia",
  encrypted_index: "Eo8BCioIAhgBIiQ0ZjM1"
}
const result = {
  type: "search_result_location",
  cited_text: "Use the refresh token.",
  source: "https://docs.example.com/auth",
  title: "Auth guide",
  search_result_index: 0,
  start_block_index: 0,
  end_block_index: 0
}

const expected: ReadonlyArray<Item.Citation> = [
  {
    type: "file_citation",
    title: "Facts",
    cited_text: chars.cited_text,
    provider_data: { type: "x-anthropic.char_location", data: chars }
  },
  {
    type: "url_citation",
    url: web.url,
    title: web.title,
    cited_text: web.cited_text,
    provider_data: { type: "x-anthropic.web_search_result_location", data: web }
  },
  {
    type: "file_citation",
    file_id: "file_011",
    cited_text: pages.cited_text,
    provider_data: { type: "x-anthropic.page_location", data: pages }
  },
  {
    type: "url_citation",
    url: result.source,
    title: "Auth guide",
    cited_text: result.cited_text,
    provider_data: { type: "x-anthropic.search_result_location", data: result }
  }
]

/** A plain text block, then a cited one whose citations come on its start and as deltas, with unknown and malformed ones. */
const stream = [
  messageStart("msg_cite"),
  ...textBlock(0, "According to the documents, "),
  blockStart(1, { type: "text", text: "", citations: [chars, { type: "audio_location", at: 3 }] }),
  delta(1, { type: "citations_delta", citation: web }),
  delta(1, { type: "citations_delta", citation: { type: "char_location", document_title: 5 } }),
  delta(1, { type: "citations_delta", citation: { type: "web_search_result_location", title: "no url" } }),
  delta(1, { type: "citations_delta", citation: "not an object" }),
  delta(1, { type: "citations_delta" }),
  delta(1, { type: "citations_delta", citation: pages }),
  delta(1, { type: "citations_delta", citation: result }),
  delta(1, { type: "text_delta", text: "the grass is green" }),
  blockStop(1),
  ...textBlock(2, "."),
  messageDelta("end_turn"),
  messageStop
]

const citationsOf = (turn: Turn.Turn) =>
  turn.items.flatMap((item) =>
    item.type === "message"
      ? item.content.map((part) => part.type === "output_text" ? part.annotations : undefined)
      : []
  )

describe("Anthropic citations", () => {
  it.effect("a text block's citations are citation deltas and its part's annotations; unknown and malformed ones are skipped", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse(stream, { chunkSize: 7 }))
        const deltas = yield* turn(hello)
        expect(deltas.filter((d) => d.type === "citation")).toStrictEqual(
          expected.map((citation) => ({ type: "citation", citation }))
        )
        const answer = completed(deltas)
        expect(Turn.text(answer)).toBe("According to the documents, the grass is green.")
        expect(citationsOf(answer)).toStrictEqual([undefined, expected, undefined])
      })
    ))

  it.effect("a citation nesting deeper than a citation's provider data may is skipped: the turn completes and encodes", () =>
    run((server) =>
      Effect.gen(function*() {
        let deep: unknown = "bottom"
        for (let i = 0; i < 300; i++) deep = { deeper: deep }
        yield* server.reply(ProviderServer.sse([
          messageStart("msg_deep"),
          blockStart(0, { type: "text", text: "", citations: [{ ...chars, detail: deep }] }),
          delta(0, { type: "citations_delta", citation: { ...web, detail: deep } }),
          delta(0, { type: "citations_delta", citation: pages }),
          delta(0, { type: "text_delta", text: "the grass is green" }),
          blockStop(0),
          messageDelta("end_turn"),
          messageStop
        ]))
        const deltas = yield* turn(hello)
        const answer = completed(deltas)
        expect(citationsOf(answer)).toStrictEqual([[expected[2]]])
        expect(deltas.filter((d) => d.type === "citation")).toHaveLength(1)
        expect(() => Schema.encodeUnknownSync(Turn.Turn)(answer)).not.toThrow()
      })
    ))

  it.effect("the next request sends the citations back on their text block, with the fields the API takes; others are dropped", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(
          ProviderServer.sse(stream),
          ProviderServer.sse([messageStart("msg_2"), ...textBlock(0, "ok"), messageDelta("end_turn"), messageStop])
        )
        const first = completed(yield* turn(hello))
        const [message] = first.items
        if (message?.type !== "message") throw new Error("no message")
        const elsewhere: Item.Citation = {
          type: "url_citation",
          url: "https://example.com",
          start_index: 0,
          end_index: 3
        }
        const content = message.content.map((part) =>
          part.type === "output_text" && part.annotations !== undefined
            ? { ...part, annotations: [...part.annotations, elsewhere] }
            : part
        )
        yield* turn([...hello, { ...message, content }, { ...hello[0], id: "u2" }])
        const body = yield* requestBody(server, 1)
        expect(body.messages).toMatchObject([
          { role: "user" },
          {
            role: "assistant",
            content: [
              { type: "text", text: "According to the documents, " },
              { type: "text", text: "the grass is green" },
              { type: "text", text: "." }
            ]
          },
          { role: "user" }
        ])
        const blocks = (body.messages as ReadonlyArray<{ readonly content: ReadonlyArray<object> }>)[1]?.content ?? []
        expect(blocks.map((block) => "citations" in block)).toStrictEqual([false, true, false])
        // A document's citations come with a `file_id` (null for an inline document) that the API refuses in a request.
        const { file_id: _chars, ...charsParam } = chars
        const { file_id: _pages, ...pagesParam } = pages
        expect(blocks[1]).toStrictEqual({
          type: "text",
          text: "the grass is green",
          citations: [charsParam, web, pagesParam, result]
        })
      })
    ))

  it("a document's citation goes back without the fields the API sends but refuses, and not at all without one it needs", () => {
    const blocks = {
      type: "content_block_location",
      cited_text: "Step two.",
      document_index: 2,
      document_title: "Guide",
      file_id: null,
      start_block_index: 1,
      end_block_index: 2
    }
    const { file_id: _, ...param } = blocks
    const back = (data: { readonly [key: string]: unknown }) =>
      AnthropicCitation.toWire({
        type: "file_citation",
        provider_data: { type: `x-anthropic.${String(data.type)}`, data }
      })
    expect(back(blocks)).toStrictEqual(param)
    expect(back({ ...blocks, document_index: undefined })).toBeUndefined()
    expect(AnthropicCitation.toWire({ type: "url_citation", url: "https://example.com" })).toBeUndefined()
  })
})
