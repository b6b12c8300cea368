import { Turn } from "@agentloop/core"
import { GeminiGrounding } from "@agentloop/gemini"
import { ProviderHarness, ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { conformance } from "./fixtures.ts"

const chunk = (candidate: Record<string, unknown>) =>
  `data: ${
    JSON.stringify({ candidates: [{ index: 0, ...candidate }], modelVersion: "gemini-2.5-flash", responseId: "r1" })
  }\n\n`

const text = (piece: string) => ({ content: { role: "model", parts: [{ text: piece }] } })

/** Serves `frames` and runs one turn of the Gemini layer on them. */
const decode = (frames: ReadonlyArray<string>) =>
  ProviderHarness.run(conformance, (server, model) =>
    Effect.gen(function*() {
      yield* server.reply(ProviderServer.sse(frames))
      return yield* ProviderHarness.turn(model)
    }))

// As Google Search grounding sends it: redirect URIs, domains as titles, supports in UTF-8 bytes.
const search = {
  webSearchQueries: ["who won euro 2024"],
  searchEntryPoint: { renderedContent: "<style></style>" },
  groundingChunks: [
    { web: { uri: "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbF9", title: "uefa.com" } },
    { web: { uri: "https://vertexaisearch.cloud.google.com/grounding-api-redirect/Xy7Q", title: "espn.com" } },
    { retrievedContext: { uri: "fileSearchStores/s1/documents/d1", title: "notes.txt", text: "Spain beat England." } },
    { image: { uri: "https://example.com/a.png" } },
    { web: { title: "no uri" } }
  ],
  groundingSupports: [
    {
      segment: { endIndex: 29, text: "Spain won Euro 2024 in Berlin" },
      groundingChunkIndices: [0, 1],
      confidenceScores: [0.9, 0.8]
    },
    { segment: { startIndex: 30, endIndex: 50, text: " Olé, it was 2–1." }, groundingChunkIndices: [2, 9] },
    { segment: { startIndex: -1, endIndex: 3 }, groundingChunkIndices: [0] },
    { segment: "nope", groundingChunkIndices: [0] },
    { groundingChunkIndices: [1] }
  ]
}

describe("Gemini grounding", () => {
  it.effect("groundingMetadata becomes the message's citations, spans in UTF-16, with deltas; unknown and malformed entries are skipped", () =>
    Effect.gen(function*() {
      const { deltas, error } = yield* decode([
        chunk(text("Spain won Euro 2024 in Berlin.")),
        chunk({ ...text(" Olé, it was 2–1."), finishReason: "STOP", groundingMetadata: search })
      ])
      expect(error).toBeUndefined()
      const turn = ProviderHarness.completed(deltas)
      expect(Turn.text(turn)).toBe("Spain won Euro 2024 in Berlin. Olé, it was 2–1.")
      const expected = [
        {
          type: "url_citation",
          url: search.groundingChunks[0]!.web!.uri,
          title: "uefa.com",
          start_index: 0,
          end_index: 29
        },
        {
          type: "url_citation",
          url: search.groundingChunks[1]!.web!.uri,
          title: "espn.com",
          start_index: 0,
          end_index: 29
        },
        { type: "file_citation", title: "notes.txt", cited_text: "Spain beat England.", start_index: 30, end_index: 47 }
      ]
      expect(turn.items[0]).toMatchObject({
        type: "message",
        content: [{ type: "output_text", annotations: expected }]
      })
      expect(deltas.filter((d) => d.type === "citation")).toStrictEqual(
        expected.map((citation) => ({ type: "citation", citation }))
      )
    }))

  it.effect("grounding of a shape it does not know costs the citations, never the turn", () =>
    Effect.gen(function*() {
      for (const groundingMetadata of ["grounded", { groundingChunks: "many" }, { groundingSupports: [null] }, null]) {
        const { deltas, error } = yield* decode([chunk({ ...text("Hi."), finishReason: "STOP", groundingMetadata })])
        expect(error).toBeUndefined()
        const turn = ProviderHarness.completed(deltas)
        expect(Turn.text(turn)).toBe("Hi.")
        expect(turn.items[0]).toMatchObject({ content: [{ type: "output_text", text: "Hi." }] })
        expect(turn.items[0]?.type === "message" && turn.items[0].content[0]).not.toHaveProperty("annotations")
        expect(deltas.some((d) => d.type === "citation")).toBe(false)
      }
    }))

  it("a grounding makes at most maxEntries citations, however many chunks its supports name", () => {
    const { maxEntries } = GeminiGrounding
    const groundingChunks = [{ web: { uri: "https://a.example" } }, { web: { uri: "https://b.example" } }]
    const supports = (count: number, groundingChunkIndices: ReadonlyArray<number>) =>
      Array.from({ length: count }, () => ({ segment: { endIndex: 1 }, groundingChunkIndices }))
    const both = GeminiGrounding.citations("ab", { groundingChunks, groundingSupports: supports(maxEntries, [0, 1]) })
    expect(both).toHaveLength(maxEntries)
    expect(both.at(-1)).toStrictEqual({ type: "url_citation", url: "https://b.example", start_index: 0, end_index: 1 })
    // The cap counts the sources no support names too.
    const full = GeminiGrounding.citations("ab", { groundingChunks, groundingSupports: supports(maxEntries, [0]) })
    expect(full).toHaveLength(maxEntries)
    expect(full.at(-1)).toMatchObject({ url: "https://a.example" })
  })

  it("converts every support's byte offsets in one walk of a long answer", () => {
    // 200,000 UTF-16 units in 400,000 UTF-8 bytes: each repeat is 5 units in 10 bytes (1 + 2 + 3 + 4).
    const answer = "aé✓😀".repeat(40_000)
    // The answer as a string object that counts the characters read from it.
    let read = 0
    const text = Object.assign(new String(answer), {
      *[Symbol.iterator]() {
        for (const char of answer) {
          read++
          yield char
        }
      }
    })
    const groundingSupports = Array.from({ length: GeminiGrounding.maxEntries }, (_, i) => ({
      segment: { startIndex: i * 970, endIndex: i * 970 + 7 },
      groundingChunkIndices: [0]
    }))
    const citations = GeminiGrounding.citations(text as unknown as string, {
      groundingChunks: [{ web: { uri: "https://example.com" } }],
      groundingSupports
    })
    expect(read).toBeLessThanOrEqual(answer.length)
    expect(citations).toHaveLength(GeminiGrounding.maxEntries)
    // Byte 7 of a repeat is inside its emoji (bytes 6 to 9), so the span ends after it; an offset past the text is its end.
    expect(citations[1]).toMatchObject({ start_index: 97 * 5, end_index: 97 * 5 + 5 })
    expect(citations.at(-1)).toMatchObject({ start_index: 200_000, end_index: 200_000 })
  })
})
