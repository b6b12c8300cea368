import { type Item, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { completeTurn, run, Script, TestLayer, usage } from "./fixtures.ts"

const text = "Paris is the capital of France."
const at = { item_id: "msg_1", output_index: 0, content_index: 0 }
const page = {
  type: "url_citation",
  url: "https://en.wikipedia.org/wiki/Paris?utm_source=openai",
  title: "Paris - Wikipedia",
  start_index: 0,
  end_index: 31
}
const file = { type: "file_citation", file_id: "file-7Yq", filename: "atlas.pdf", index: 31 }
const container = {
  type: "container_file_citation",
  container_id: "cntr_1",
  file_id: "cfile_1",
  filename: "chart.png",
  start_index: 5,
  end_index: 9
}

/** The message streamed with its annotations: some by `annotation.added`, all on the done part and item. */
const cited = (done: ReadonlyArray<unknown>, added: ReadonlyArray<unknown>) => {
  const script = new Script().created().messageStart("msg_1", 0).textDeltas("msg_1", 0, [
    "Paris is ",
    "the capital of France."
  ])
  for (const [annotation_index, annotation] of added.entries()) {
    script.event("response.output_text.annotation.added", { ...at, annotation_index, annotation })
  }
  const part = { type: "output_text", text, annotations: done }
  return script.event("response.output_text.done", { ...at, text, logprobs: [] })
    .event("response.content_part.done", { ...at, part })
    .event("response.output_item.done", {
      output_index: 0,
      item: { id: "msg_1", type: "message", status: "completed", role: "assistant", content: [part] }
    })
    .completed(usage(10, 8))
}

const citationsOf = (turn: Turn.Turn) =>
  turn.items.flatMap((item) =>
    item.type === "message"
      ? item.content.flatMap((part) => part.type === "output_text" ? part.annotations ?? [] : [])
      : []
  )

const expected: ReadonlyArray<Item.Citation> = [
  { type: "url_citation", url: page.url, title: page.title, start_index: 0, end_index: 31 },
  {
    type: "file_citation",
    file_id: "file-7Yq",
    filename: "atlas.pdf",
    start_index: 31,
    end_index: 31,
    provider_data: { type: "x-openai.file_citation", data: file }
  },
  {
    type: "file_citation",
    file_id: "cfile_1",
    filename: "chart.png",
    start_index: 5,
    end_index: 9,
    provider_data: { type: "x-openai.container_file_citation", data: container }
  }
]

describe("Responses citations", () => {
  it.live("annotations become citations on the text, each a delta once, whether added or only on the done item", () =>
    Effect.gen(function*() {
      const deltas = yield* run([ProviderServer.sse(cited([page, file, container], [page, file]).frames)])
      expect(deltas.filter((d) => d.type === "citation")).toStrictEqual(
        expected.map((citation) => ({ type: "citation", citation }))
      )
      // Each citation follows the text it cites.
      expect(deltas.findIndex((d) => d.type === "citation")).toBeGreaterThan(
        deltas.findIndex((d) => d.type === "text_delta")
      )
      const turn = completeTurn(deltas)
      expect(Turn.text(turn)).toBe(text)
      expect(citationsOf(turn)).toStrictEqual(expected)
    }).pipe(Effect.provide(TestLayer)))

  it.live("an annotation of an unknown type, or malformed, is skipped: the turn goes on", () =>
    Effect.gen(function*() {
      const unknown = { type: "page_number", page: 3 }
      const malformed = [{ ...page, url: 5 }, { ...page, start_index: -1 }, { ...file, file_id: null }, "url", null]
      const deltas = yield* run([
        ProviderServer.sse(cited([unknown, ...malformed, page], [unknown, ...malformed, page]).frames)
      ])
      const turn = completeTurn(deltas)
      expect(Turn.text(turn)).toBe(text)
      expect(citationsOf(turn)).toStrictEqual([expected[0]])
      expect(deltas.filter((d) => d.type === "citation")).toHaveLength(1)
    }).pipe(Effect.provide(TestLayer)))

  it.live("an annotation nesting deeper than a citation's provider data may is skipped: the turn completes and encodes", () =>
    Effect.gen(function*() {
      let deep: unknown = "bottom"
      for (let i = 0; i < 300; i++) deep = { deeper: deep }
      const tooDeep = { ...file, detail: deep }
      const deltas = yield* run([ProviderServer.sse(cited([tooDeep, page], [tooDeep, page]).frames)])
      const turn = completeTurn(deltas)
      expect(citationsOf(turn)).toStrictEqual([expected[0]])
      expect(deltas.filter((d) => d.type === "citation")).toHaveLength(1)
      expect(() => Schema.encodeUnknownSync(Turn.Turn)(turn)).not.toThrow()
    }).pipe(Effect.provide(TestLayer)))

  it.live("the next request sends the text's citations back as its annotations, as the API wrote them", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const first = completeTurn(yield* run([ProviderServer.sse(cited([page, file, container], []).frames)]))
      const fromAnthropic: Item.Citation = {
        type: "file_citation",
        title: "Atlas",
        cited_text: "Paris, capital",
        provider_data: { type: "x-anthropic.char_location", data: { type: "char_location" } }
      }
      const message = first.items[0]
      if (message?.type !== "message" || message.content[0]?.type !== "output_text") throw new Error("no text")
      const part = message.content[0]
      const elsewhere: Item.Citation = {
        type: "url_citation",
        url: "https://example.com",
        start_index: 1,
        end_index: 2
      }
      const history: ReadonlyArray<Item.Item> = [
        { ...message, content: [{ ...part, annotations: [...part.annotations ?? [], fromAnthropic, elsewhere] }] }
      ]
      yield* run(
        [ProviderServer.sse(new Script().created().message("msg_2", 0, ["ok"]).completed(usage(1, 1)).frames)],
        {},
        undefined,
        history
      )
      const [, request] = yield* server.requests
      expect(request?.body).toMatchObject({
        input: [{
          type: "message",
          role: "assistant",
          content: [{
            type: "output_text",
            text,
            annotations: [page, file, container, {
              type: "url_citation",
              url: "https://example.com",
              title: "https://example.com",
              start_index: 1,
              end_index: 2
            }]
          }]
        }]
      })
    }).pipe(Effect.provide(TestLayer)))
})
