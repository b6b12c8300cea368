import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHash } from "node:crypto"
import { sha256Hex } from "../src/internal/sha256.ts"

/** What the digest must be: Node's own SHA-256, its first 32 hex digits. */
const expected = (text: string) => createHash("sha256").update(text, "utf8").digest("hex").slice(0, 32)

const letters = "abcdefghijklmnopqrstuvwxyz0123456789-/ü€😀"
const random = (length: number) =>
  Array.from({ length }, () => letters[Math.floor(Math.random() * letters.length)]).join("")

describe("sha256Hex", () => {
  it.effect("is SHA-256: the known digests, and every length around a block's end, short texts and long ones", () =>
    Effect.gen(function*() {
      expect(yield* sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb924")
      expect(yield* sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223")
      const texts = [
        ...Array.from({ length: 200 }, (_, length) => "a".repeat(length)),
        ...Array.from({ length: 200 }, (_, length) => random(length)),
        "run-42-tool/3/0",
        "ü€😀".repeat(500),
        "x".repeat(1024),
        "x".repeat(1025),
        random(100_000)
      ]
      for (const text of texts) expect(yield* sha256Hex(text)).toBe(expected(text))
    }))
})
