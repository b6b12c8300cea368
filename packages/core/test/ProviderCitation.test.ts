import { describe, expect, it } from "@effect/vitest"
import type * as Item from "../src/Item.ts"
import * as ProviderCitation from "../src/provider/ProviderCitation.ts"

const page: Item.Citation = { type: "url_citation", url: "https://example.com", title: "Example" }

describe("ProviderCitation", () => {
  it("encodable keeps a citation whose provider data a checkpoint encodes, and only that", () => {
    const nested = (depth: number) => {
      let data: { readonly [key: string]: unknown } = {}
      for (let i = 0; i < depth; i++) data = { data }
      return { ...page, provider_data: { type: "x-example.page" as const, data } }
    }
    expect(ProviderCitation.encodable(page)).toBe(page)
    expect(ProviderCitation.encodable(nested(255))).toStrictEqual(nested(255))
    expect(ProviderCitation.encodable(nested(256))).toBeUndefined()
    expect(ProviderCitation.encodable(undefined)).toBeUndefined()
  })

  it("toRequest writes an output_text's citations, dropping those the provider does not take; other parts have none", () => {
    const toWire = (citation: Item.Citation) => citation.type === "url_citation" ? citation.url : undefined
    const annotations: ReadonlyArray<Item.Citation> = [page, { type: "file_citation", title: "Atlas" }, page]
    expect(ProviderCitation.toRequest({ type: "output_text", text: "a", annotations }, toWire)).toStrictEqual([
      page.url,
      page.url
    ])
    expect(ProviderCitation.toRequest({ type: "output_text", text: "a" }, toWire)).toStrictEqual([])
    expect(ProviderCitation.toRequest({ type: "input_text", text: "a" }, toWire)).toStrictEqual([])
  })
})
