import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { GeminiArguments } from "../src/index.ts"
import type { GeminiEvent } from "../src/index.ts"

/** The pieces a writer makes of `args`, and their text. */
const write = (args: ReadonlyArray<GeminiEvent.PartialArg>) => {
  const writer = GeminiArguments.make()
  const pieces: Array<string> = []
  for (const arg of args) {
    const piece = writer.push(arg)
    if (Result.isFailure(piece)) return Result.fail(piece.failure)
    pieces.push(piece.success)
  }
  pieces.push(writer.end())
  return Result.succeed(pieces)
}

describe("GeminiArguments.parsePath", () => {
  it("reads names, quoted names with escapes and indices", () => {
    expect(GeminiArguments.parsePath("$")).toStrictEqual(Result.succeed([]))
    expect(GeminiArguments.parsePath("$.a.b_c[0]['d e'][\"f\"]['it\\'s\\u00e9']")).toStrictEqual(
      Result.succeed(["a", "b_c", 0, "d e", "f", "it's\u00e9"])
    )
  })

  it("refuses what is not a normalized path, and indices too large to mean anything", () => {
    for (const path of ["a.b", "$.", "$[x]", "$[01]", "$[-1]", "$[4294967296]", "$['open", "$..a"]) {
      expect(Result.isFailure(GeminiArguments.parsePath(path)), path).toBe(true)
    }
  })
})

describe("GeminiArguments.make", () => {
  it("writes the pieces as JSON text, each piece a prefix's continuation", () => {
    const pieces = write([
      { jsonPath: "$.q", stringValue: "a\"b", willContinue: true },
      { jsonPath: "$.q", stringValue: "\nc" },
      { jsonPath: "$.n.deep[0][0]", numberValue: 1 },
      { jsonPath: "$.n.deep[0][1]", numberValue: Number.POSITIVE_INFINITY },
      { jsonPath: "$.n.deep[1][0]", boolValue: false },
      { jsonPath: "$.n.other", nullValue: null },
      { jsonPath: "$.last", stringValue: "open", willContinue: true }
    ])
    expect(Result.isSuccess(pieces)).toBe(true)
    const text = Result.getOrThrow(pieces).join("")
    expect(JSON.parse(text)).toStrictEqual({
      q: "a\"b\nc",
      n: { deep: [[1, null], [false]], other: null },
      last: "open"
    })
    expect(write([])).toStrictEqual(Result.succeed(["{}"]))
  })

  it("refuses pieces that cannot be streamed in order", () => {
    const failure = (args: ReadonlyArray<GeminiEvent.PartialArg>) => {
      const written = write(args)
      return Result.isFailure(written) ? written.failure : undefined
    }
    expect(failure([{ jsonPath: "$.a[2]", numberValue: 1 }])).toBe("element 2 comes after 0 elements")
    expect(
      failure([{ jsonPath: "$.a", numberValue: 1 }, { jsonPath: "$.b", numberValue: 1 }, {
        jsonPath: "$.a",
        numberValue: 2
      }])
    )
      .toBe("key \"a\" comes twice")
    expect(failure([{ jsonPath: "$.a[0]", numberValue: 1 }, { jsonPath: "$.a.b", numberValue: 1 }])).toBe(
      "\"b\" does not fit an array"
    )
    expect(failure([{ jsonPath: "$", numberValue: 1 }])).toMatch(/whole arguments/)
    expect(failure([{ jsonPath: "$.a" }])).toBe("the piece for $.a has no value")
    expect(failure([{ jsonPath: "a" }])).toMatch(/does not start with \$/)
  })
})
