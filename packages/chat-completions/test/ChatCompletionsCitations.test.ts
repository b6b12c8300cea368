/**
 * Cited sources over loopback HTTP, in the shapes OpenAI's search models,
 * OpenRouter's web plugin and Perplexity send them.
 */
import { Item, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { chunk, delta, done, finish, role, usage } from "./fixtures.ts"
import { completed, requestBody, run, turn } from "./harness.ts"

const hello = [Item.userMessage("Who won?")]

const answer = (frames: ReadonlyArray<string>) =>
  run((server) =>
    Effect.gen(function*() {
      yield* server.reply(ProviderServer.sse(frames, { chunkSize: 9 }))
      const deltas = yield* turn(hello)
      return { deltas, turn: completed(deltas) }
    })
  )

const annotationsOf = (t: Turn.Turn) =>
  t.items.flatMap((item) =>
    item.type === "message"
      ? item.content.flatMap((part) => part.type === "output_text" ? part.annotations ?? [] : [])
      : []
  )

const citationDeltas = (deltas: ReadonlyArray<{ readonly type: string }>) => deltas.filter((d) => d.type === "citation")

describe("Chat Completions citations", () => {
  it.effect("a delta's url_citation annotations (OpenAI, OpenRouter) are the text's citations; others are skipped", () =>
    Effect.gen(function*() {
      const espn = { url: "https://espn.com/euro?utm_source=openai", title: "Euro 2024", start_index: 0, end_index: 23 }
      const { deltas, turn: t } = yield* answer([
        role,
        delta({ content: "Spain won Euro 2024." }),
        delta({ content: " In Berlin." }),
        delta({
          annotations: [
            { type: "url_citation", url_citation: espn },
            {
              type: "url_citation",
              url_citation: { url: "https://uefa.com", title: null, content: "Spain beat England 2-1" }
            },
            { type: "file_citation", file_citation: { file_id: "f" } },
            { type: "url_citation", url_citation: { url: 7 } },
            { type: "url_citation", url_citation: { ...espn, start_index: -3 } },
            null
          ]
        }),
        // OpenRouter repeats the annotations on the finishing chunk.
        delta({ annotations: [{ type: "url_citation", url_citation: espn }] }, "stop"),
        usage(),
        done
      ])
      const expected: ReadonlyArray<Item.Citation> = [
        { type: "url_citation", ...espn },
        { type: "url_citation", url: "https://uefa.com" }
      ]
      expect(Turn.text(t)).toBe("Spain won Euro 2024. In Berlin.")
      expect(annotationsOf(t)).toStrictEqual(expected)
      expect(citationDeltas(deltas)).toStrictEqual(expected.map((citation) => ({ type: "citation", citation })))
    }))

  it.effect("Perplexity's search_results and citations, repeated on every chunk, are each one citation", () =>
    Effect.gen(function*() {
      const search_results = [
        {
          title: "UEFA Euro 2024 final",
          url: "https://en.wikipedia.org/wiki/UEFA_Euro_2024_final",
          date: "2024-07-14"
        },
        { title: null, url: "https://uefa.com" },
        { title: "no url" }
      ]
      const citations = [
        "https://en.wikipedia.org/wiki/UEFA_Euro_2024_final",
        "https://uefa.com",
        "https://bbc.com",
        42
      ]
      const sourced = (fields: Record<string, unknown>) =>
        chunk({ search_results, citations, choices: [{ index: 0, ...fields, finish_reason: null }] })
      const { deltas, turn: t } = yield* answer([
        sourced({ delta: { role: "assistant", content: "Spain [1]" } }),
        sourced({ delta: { content: " won [2][3]." } }),
        finish("stop"),
        done
      ])
      const expected: ReadonlyArray<Item.Citation> = [
        {
          type: "url_citation",
          url: "https://en.wikipedia.org/wiki/UEFA_Euro_2024_final",
          title: "UEFA Euro 2024 final"
        },
        { type: "url_citation", url: "https://uefa.com" },
        { type: "url_citation", url: "https://bbc.com" }
      ]
      expect(annotationsOf(t)).toStrictEqual(expected)
      expect(citationDeltas(deltas)).toHaveLength(3)
      // Sources that are not a list cost nothing.
      const odd = yield* answer([
        chunk({ citations: "none", search_results: { a: 1 }, choices: [] }),
        role,
        delta({ content: "Hi" }, "stop"),
        done
      ])
      expect(Turn.text(odd.turn)).toBe("Hi")
      expect(annotationsOf(odd.turn)).toStrictEqual([])
    }))

  it.effect("citations are not sent back: an assistant message has no room for them", () =>
    run((server) =>
      Effect.gen(function*() {
        yield* server.reply(ProviderServer.sse([role, delta({ content: "ok" }, "stop"), done]))
        const cited: Item.Message = {
          ...Item.assistantMessage("Spain won."),
          content: [{
            type: "output_text",
            text: "Spain won.",
            annotations: [{ type: "url_citation", url: "https://uefa.com" }]
          }]
        }
        yield* turn([...hello, cited, Item.userMessage("Sure?")])
        const body = yield* requestBody(server)
        expect(body.messages).toStrictEqual([
          { role: "user", content: "Who won?" },
          { role: "assistant", content: "Spain won." },
          { role: "user", content: "Sure?" }
        ])
      })
    ))
})
