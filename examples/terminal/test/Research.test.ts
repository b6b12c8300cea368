import { Item } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { parse } from "../src/Args.ts"
import * as Research from "../src/Research.ts"
import { plain } from "./plain.ts"

const research = (asked: string) =>
  Effect.gen(function*() {
    let out = ""
    const report = yield* Research.run(asked, (text) => Effect.sync(() => out += text))
    return { out: plain(out), report }
  }).pipe(Effect.provide(MockLanguageModel.layer(Research.respond)))

describe("the research program", () => {
  it.effect("searches three sources at once, merges the notes, and writes until the verifier accepts", () =>
    Effect.gen(function*() {
      const { out, report } = yield* research(Research.question)
      for (const source of Research.sources) {
        expect(out).toContain(`◆ search-${source} started`)
        expect(out).toContain(`search-${source} ← search {"source":"${source}"`)
        expect(out).toContain(`◆ search-${source} done`)
      }
      expect(out).toContain("◆ notes merged from 3 searches")
      expect(out).toContain(`[verifier: asked again: ${Research.citeSources}]`)
      expect(out).toContain("[verifier: accepted]")
      // Six searcher turns and two writer turns, all counted in the program's books: 3 × (120 + 210) + 2 × 480 input tokens.
      expect(out).toContain("[writer turn 2 · so far, sub-agents included: 1950 in / 432 out tokens")
      expect(typeof report === "string" && report.endsWith("Sources: web, papers, news.\n")).toBe(true)
      expect(out.trimEnd().endsWith("✓ report written")).toBe(true)
    }))

  it.effect("the writer reads the question and the merged notes of every source", () =>
    Effect.gen(function*() {
      const requests = yield* Effect.gen(function*() {
        yield* Research.run("Are heat pumps noisy?", () => Effect.void)
        return yield* (yield* MockLanguageModel.MockLanguageModel).requests
      }).pipe(Effect.provide(MockLanguageModel.layer(Research.respond)))
      const writer = requests.filter((request) => request.options.instructions?.startsWith("You write"))
      expect(writer).toHaveLength(2)
      const [asked, notes] = writer[0]!.history
      expect(asked).toMatchObject({ role: "user", content: [{ text: "Are heat pumps noisy?" }] })
      const text = notes?.type === "message"
        ? notes.content.map(Item.partText).join("")
        : ""
      for (const source of Research.sources) expect(text).toContain(`From ${source}:\n- `)
    }))
})

describe("the demo's command line", () => {
  it("chooses the program with --program or AGENTLOOP_PROGRAM, the flag first, and keeps the question", () => {
    expect(parse([], undefined)).toStrictEqual({ program: "agent", mcp: [], asked: "" })
    expect(parse(["How", "far?"], undefined)).toStrictEqual({ program: "agent", mcp: [], asked: "How far?" })
    expect(parse(["--program", "research", "Why", "not?"], undefined)).toStrictEqual({
      program: "research",
      mcp: [],
      asked: "Why not?"
    })
    expect(parse(["Why?"], "research")).toStrictEqual({ program: "research", mcp: [], asked: "Why?" })
    expect(parse(["--program", "agent"], "research")).toStrictEqual({ program: "agent", mcp: [], asked: "" })
  })
})
