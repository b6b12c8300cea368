import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as Item from "../src/Item.ts"

const history: Item.History = [
  Item.userMessage("What is 2 + 2?"),
  {
    type: "message",
    id: "s",
    status: "completed",
    role: "system",
    content: [{ type: "input_text", text: "Be brief." }]
  },
  {
    type: "reasoning",
    id: "r1",
    status: "completed",
    content: [{ type: "output_text", text: "add" }],
    summary: [{ type: "output_text", text: "adding" }],
    encrypted_content: "opaque"
  },
  { type: "reasoning", id: "r2", status: "in_progress", content: [] },
  { type: "function_call", id: "fc", status: "completed", call_id: "c1", name: "add", arguments: "{\"a\":2,\"b\":2}" },
  { type: "function_call_output", id: "fo", status: "completed", call_id: "c1", output: "4" },
  { type: "message", id: "a", status: "incomplete", role: "assistant", content: [{ type: "refusal", refusal: "no" }] },
  {
    type: "message",
    id: "cited",
    status: "completed",
    role: "assistant",
    content: [{
      type: "output_text",
      text: "Paris is the capital.",
      annotations: [
        { type: "url_citation", url: "https://example.com/paris", title: "Paris", start_index: 0, end_index: 21 },
        {
          type: "file_citation",
          title: "Atlas",
          cited_text: "Paris, capital of France",
          provider_data: { type: "x-anthropic.char_location", data: { document_index: 0, start_char_index: 3 } }
        },
        { type: "file_citation", file_id: "file_1", filename: "atlas.pdf", start_index: 21, end_index: 21 }
      ]
    }]
  },
  { type: "x-note", id: "x", status: "failed", data: { nested: { list: [1, "two", null] } } },
  Item.userMessage([
    { type: "input_text", text: "What is in these?" },
    Item.imageUrl("https://example.com/cat.png", { detail: "high" }),
    Item.imageFromBytes(new Uint8Array([137, 80, 78, 71, 0, 255]), "image/png"),
    Item.fileFromBytes(new TextEncoder().encode("%PDF-1.7 …"), "application/pdf", { filename: "report.pdf" }),
    Item.fileUrl("https://example.com/spec.pdf")
  ], "u2"),
  {
    type: "function_call_output",
    id: "fo2",
    status: "completed",
    call_id: "c2",
    output: "{\"saved\":true}",
    content: [{ type: "input_text", text: "The page:" }, Item.imageFromBytes(new Uint8Array([1, 2, 3]), "image/webp")]
  }
]

describe("Item", () => {
  it("round-trips every item kind through JSON exactly", () => {
    const json = JSON.stringify(Schema.encodeSync(Item.History)(history))
    expect(Schema.decodeUnknownSync(Item.History)(JSON.parse(json))).toStrictEqual(history)
  })

  it("reads a history written before images and files existed (a 0.1 checkpoint's JSON)", () => {
    const written =
      `[{"type":"message","id":"u","status":"completed","role":"user","content":[{"type":"input_text","text":"hi"}]},` +
      `{"type":"function_call_output","id":"o","status":"completed","call_id":"c","output":"4"}]`
    expect(Schema.decodeUnknownSync(Item.History)(JSON.parse(written))).toStrictEqual([
      Item.userMessage("hi", "u"),
      { type: "function_call_output", id: "o", status: "completed", call_id: "c", output: "4" }
    ])
  })

  it("rejects a file with both file_data and file_url, or neither, and an image without a URL", () => {
    const decode = Schema.decodeUnknownResult(Item.ContentPart)
    expect(decode({ type: "input_file", file_data: "data:text/plain;base64,aGk=" })._tag).toBe("Success")
    expect(decode({ type: "input_file", file_url: "https://example.com/a.pdf", filename: "a.pdf" })._tag).toBe(
      "Success"
    )
    expect(decode({ type: "input_file", file_data: "data:text/plain;base64,aGk=", file_url: "https://e.com/a" })._tag)
      .toBe("Failure")
    expect(decode({ type: "input_file", filename: "a.pdf" })._tag).toBe("Failure")
    expect(decode({ type: "input_image" })._tag).toBe("Failure")
    expect(decode({ type: "input_image", image_url: "https://e.com/a.png", detail: "medium" })._tag).toBe("Failure")
  })

  it("rejects citations of unknown kinds, negative indices and provider data that is not an extension's", () => {
    const decode = Schema.decodeUnknownResult(Item.OutputText)
    const part = (annotation: unknown) => ({ type: "output_text", text: "t", annotations: [annotation] })
    expect(decode(part({ type: "url_citation", url: "https://e.com" }))._tag).toBe("Success")
    expect(decode(part({ type: "page_citation", url: "https://e.com" }))._tag).toBe("Failure")
    expect(decode(part({ type: "url_citation", url: "https://e.com", start_index: -1 }))._tag).toBe("Failure")
    expect(decode(part({ type: "file_citation", provider_data: { type: "anthropic", data: {} } }))._tag).toBe("Failure")
  })

  it("rejects unknown item types, statuses and roles", () => {
    const decode = Schema.decodeUnknownResult(Item.Item)
    expect(decode({ type: "image", id: "i", status: "completed" })._tag).toBe("Failure")
    expect(decode({ ...Item.userMessage("hi"), status: "done" })._tag).toBe("Failure")
    expect(decode({ ...Item.userMessage("hi"), role: "tool" })._tag).toBe("Failure")
    expect(decode({ type: "x-note", id: "x", status: "completed" })._tag).toBe("Failure")
  })
})

describe("Item.Extension", () => {
  it("refuses data nested more than 256 deep, and checks data that shares its objects in one walk", () => {
    const extension = (data: Record<string, unknown>) => ({ type: "x-note", id: "n1", status: "completed", data })
    const nested = (depth: number): unknown => Array.from({ length: depth }).reduce<unknown>((inner) => [inner], 1)
    expect(Schema.is(Item.Extension)(extension({ v: nested(250) }))).toBe(true)
    expect(Schema.is(Item.Extension)(extension({ v: nested(300) }))).toBe(false)
    // Built in memory, not read from JSON: 60 levels of two references to the level below are 2^60 paths.
    const shared = Array.from({ length: 60 }).reduce<unknown>((below) => ({ a: below, b: below }), 1)
    expect(Schema.is(Item.Extension)(extension({ v: shared }))).toBe(true)
  })
})

describe("Item's part constructors", () => {
  it("make data URLs of bytes, keep URLs as they are, and say which parts are media", () => {
    const image = Item.imageFromBytes(new Uint8Array([0, 1, 254, 255]), "image/png", { detail: "low" })
    expect(image).toStrictEqual({ type: "input_image", image_url: "data:image/png;base64,AAH+/w==", detail: "low" })
    expect(Item.imageUrl("https://example.com/a.jpg")).toStrictEqual({
      type: "input_image",
      image_url: "https://example.com/a.jpg"
    })
    const file = Item.fileFromBytes(new TextEncoder().encode("hi"), "text/plain", { filename: "hi.txt" })
    expect(file).toStrictEqual({ type: "input_file", file_data: "data:text/plain;base64,aGk=", filename: "hi.txt" })
    expect(Item.fileUrl("https://example.com/x", { filename: "x.pdf" })).toStrictEqual({
      type: "input_file",
      file_url: "https://example.com/x",
      filename: "x.pdf"
    })
    expect([image, file, { type: "input_text" as const, text: "t" }].map(Item.isMediaPart)).toStrictEqual([
      true,
      true,
      false
    ])
    // Media parts have no text: the answer's text is its text parts.
    expect(Item.userMessage([{ type: "input_text", text: "a" }, image]).content.map(Item.partText).join("")).toBe("a")
  })
})

describe("Item.argumentsObject", () => {
  it("is the arguments when they are an object, {} when empty, and wraps anything else", () => {
    expect(Item.argumentsObject("{\"city\":\"Zürich\"}")).toStrictEqual({ city: "Zürich" })
    expect(Item.argumentsObject("  ")).toStrictEqual({})
    expect(Item.argumentsObject("[1,2]")).toStrictEqual({ arguments: [1, 2] })
    expect(Item.argumentsObject("42")).toStrictEqual({ arguments: 42 })
    expect(Item.argumentsObject("{\"cut")).toStrictEqual({ arguments: "{\"cut" })
  })

  it("keeps as text arguments nested too deep to be written back as JSON", () => {
    // A model (or a client's history) may send any text: parsed, this one would overflow the request's JSON.stringify.
    const deep = `{"a":${"[".repeat(10_000)}${"]".repeat(10_000)}}`
    const object = Item.argumentsObject(deep)
    expect(object).toStrictEqual({ arguments: deep })
    expect(JSON.parse(JSON.stringify(object))).toStrictEqual({ arguments: deep })
  })
})
