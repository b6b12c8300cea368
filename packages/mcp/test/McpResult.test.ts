import { Item } from "@agentloop/core"
import { describe, expect, it } from "@effect/vitest"
import type { McpSchema } from "effect/ai"
import { McpResult } from "../src/index.ts"

const png = new Uint8Array([137, 80, 78, 71])
const image = (mimeType: string): McpSchema.ContentBlock => ({ type: "image", mimeType, data: png })

describe("McpResult.shown", () => {
  it("attaches images of the types models take, numbered in the text in order, and describes the rest", () => {
    const shown = McpResult.shown({
      content: [
        { type: "text", text: "Two shots:" },
        image("image/png"),
        image("image/svg+xml"),
        image("IMAGE/JPEG"),
        { type: "audio", mimeType: "audio/wav", data: png }
      ]
    })
    expect(shown.text).toBe(
      [
        "Two shots:",
        "[image 1 attached: image/png, 4 bytes]",
        "[image: image/svg+xml, 4 bytes]",
        "[image 2 attached: IMAGE/JPEG, 4 bytes]",
        "[audio: audio/wav, 4 bytes]"
      ].join("\n")
    )
    expect(shown.content).toEqual([Item.imageFromBytes(png, "image/png"), Item.imageFromBytes(png, "image/jpeg")])
  })

  it("describes every image and attaches none when told, as text does", () => {
    const result = { content: [image("image/png")] }
    expect(McpResult.shown(result, { images: "describe" })).toEqual({
      text: "[image: image/png, 4 bytes]",
      content: []
    })
    expect(McpResult.text(result)).toBe("[image: image/png, 4 bytes]")
  })

  it("a result with only structured content is its JSON", () => {
    expect(McpResult.shown({ content: [], structuredContent: { a: 1 } })).toEqual({ text: `{"a":1}`, content: [] })
  })
})

describe("McpResult.blocks", () => {
  it("names an inline file without a name by its position, and a URL by its last segment", () => {
    expect(McpResult.blocks([
      Item.fileFromBytes(png, "application/octet-stream"),
      Item.fileUrl("https://example.com/docs/"),
      Item.fileUrl("https://example.com/a%20b.pdf", { filename: "spec.pdf" })
    ])).toEqual([
      {
        type: "resource",
        resource: { uri: "attachment-1", mimeType: "application/octet-stream", blob: png }
      },
      { type: "resource_link", uri: "https://example.com/docs/", name: "https://example.com/docs/" },
      { type: "resource_link", uri: "https://example.com/a%20b.pdf", name: "spec.pdf", mimeType: "application/pdf" }
    ])
  })

  it("a URL whose last segment is not valid percent-encoding is named by that segment as it is", () => {
    // A link a tool found on a hostile page: decoding it would throw, and fail the whole result.
    expect(McpResult.blocks([Item.fileUrl("https://example.com/report%E0%A4%A.pdf")])).toEqual([
      {
        type: "resource_link",
        uri: "https://example.com/report%E0%A4%A.pdf",
        name: "report%E0%A4%A.pdf",
        mimeType: "application/pdf"
      }
    ])
  })
})
