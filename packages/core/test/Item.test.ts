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
  { type: "x-note", id: "x", status: "failed", data: { nested: { list: [1, "two", null] } } }
]

describe("Item", () => {
  it("round-trips every item kind through JSON exactly", () => {
    const json = JSON.stringify(Schema.encodeSync(Item.History)(history))
    expect(Schema.decodeUnknownSync(Item.History)(JSON.parse(json))).toStrictEqual(history)
  })

  it("rejects unknown item types, statuses and roles", () => {
    const decode = Schema.decodeUnknownResult(Item.Item)
    expect(decode({ type: "image", id: "i", status: "completed" })._tag).toBe("Failure")
    expect(decode({ ...Item.userMessage("hi"), status: "done" })._tag).toBe("Failure")
    expect(decode({ ...Item.userMessage("hi"), role: "tool" })._tag).toBe("Failure")
    expect(decode({ type: "x-note", id: "x", status: "completed" })._tag).toBe("Failure")
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
})
