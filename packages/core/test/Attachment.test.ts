import { NodeFileSystem } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Attachment from "../src/Attachment.ts"
import * as Item from "../src/Item.ts"

const directory = mkdtempSync(join(tmpdir(), "agentloop-attachments-"))
afterAll(() => rmSync(directory, { recursive: true, force: true }))

const file = (name: string, bytes: Uint8Array): string => {
  const path = join(directory, name)
  writeFileSync(path, bytes)
  return path
}

const png = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10])

describe("Attachment", () => {
  it.effect("reads an image through FileSystem into the part the same bytes make", () =>
    Effect.gen(function*() {
      const path = file("screen.PNG", png)
      expect(yield* Attachment.image(path, { detail: "high" })).toStrictEqual(
        Item.imageFromBytes(png, "image/png", { detail: "high" })
      )
      // An extension that tells nothing, or tells wrong, gives way to the media type given.
      const raw = file("capture.bin", png)
      expect(yield* Attachment.image(raw, { mediaType: "image/png" })).toStrictEqual(
        Item.imageFromBytes(png, "image/png")
      )
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("reads a file named by its base name unless told otherwise", () =>
    Effect.gen(function*() {
      const text = new TextEncoder().encode("Grüße")
      const path = file("notes.txt", text)
      expect(yield* Attachment.file(path)).toStrictEqual(
        Item.fileFromBytes(text, "text/plain", { filename: "notes.txt" })
      )
      expect(yield* Attachment.file(path, { filename: "minutes.txt" })).toMatchObject({ filename: "minutes.txt" })
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("fails with AttachmentError for a missing file, an unknown type, a non-image image, or a file too large", () =>
    Effect.gen(function*() {
      const failure = <A>(effect: Effect.Effect<A, Attachment.AttachmentError, any>) =>
        Effect.flip(effect).pipe(Effect.map((error) => [error._tag, error.path, error.message] as const))
      const missing = yield* failure(Attachment.image(join(directory, "nowhere.png")))
      expect(missing[0]).toBe("AttachmentError")
      expect(missing[1]).toBe(join(directory, "nowhere.png"))
      const unknown = yield* failure(Attachment.file(file("blob", png)))
      expect(unknown[2]).toMatch(/pass mediaType/)
      const pdf = yield* failure(Attachment.image(file("doc.pdf", png)))
      expect(pdf[2]).toBe("application/pdf is not an image type: make it a file")
      const big = yield* failure(Attachment.image(file("big.png", new Uint8Array(1025)), { maxBytes: 1024 }))
      expect(big[2]).toBe("it is 1025 bytes, over the limit of 1024")
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
