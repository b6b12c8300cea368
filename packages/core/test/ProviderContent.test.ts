import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as Item from "../src/Item.ts"
import * as ProviderContent from "../src/provider/ProviderContent.ts"

const rules: ProviderContent.Rules = {
  provider: "demo",
  imageTypes: ["image/png", "image/jpeg"],
  fileTypes: ["application/pdf", "text/plain"],
  fileUrlTypes: ["application/pdf"],
  partLimit: (mediaType) => mediaType === "image/png" ? { max: 8, of: "encoded", what: "for an image" } : undefined,
  requestLimit: { max: 12, of: "decoded", what: "in one request" }
}

const bytes = (n: number) => new Uint8Array(n).fill(65)

/** The failure message of checking `part` with a fresh checker, or the source. */
const checked = (part: Item.MediaPart, with_: ProviderContent.Rules = rules) => {
  const result = ProviderContent.checker(with_)(part, "part")
  return Result.isFailure(result) ? result.failure.message : result.success
}

describe("ProviderContent.source", () => {
  it("reads a data URL's media type (lower-cased, parameters skipped) and data, and a URL's type from its name", () => {
    expect(ProviderContent.source(Item.imageUrl("data:Image/PNG;name=a.png;base64,QUJD"))).toStrictEqual(
      Result.succeed({ type: "base64", mediaType: "image/png", data: "QUJD" })
    )
    expect(ProviderContent.source(Item.imageUrl("https://example.com/a/b.JPG?size=2#top"))).toStrictEqual(
      Result.succeed({ type: "url", url: "https://example.com/a/b.JPG?size=2#top", mediaType: "image/jpeg" })
    )
    // A file's name wins over its URL's, which may have no extension at all.
    expect(ProviderContent.source(Item.fileUrl("https://example.com/download?id=7", { filename: "q3.pdf" })))
      .toStrictEqual(
        Result.succeed({ type: "url", url: "https://example.com/download?id=7", mediaType: "application/pdf" })
      )
    expect(ProviderContent.source(Item.fileUrl("https://example.com/download?id=7"))).toStrictEqual(
      Result.succeed({ type: "url", url: "https://example.com/download?id=7", mediaType: undefined })
    )
  })

  it("refuses what is not a URL, base64 that is not base64, and a file with both sources or none", () => {
    const failure = (part: Item.MediaPart) => Result.getFailure(ProviderContent.source(part))
    expect(failure(Item.imageUrl("not a url"))._tag).toBe("Some")
    expect(failure(Item.imageUrl("data:image/png,rawbytes"))).toMatchObject({ value: expect.stringMatching(/data:/) })
    expect(failure(Item.imageUrl("data:image/png;base64,QUJ"))).toMatchObject({
      value: expect.stringMatching(/base64/)
    })
    expect(failure(Item.imageUrl("data:image/png;base64,QU*D"))).toMatchObject({
      value: expect.stringMatching(/base64/)
    })
    expect(failure({ type: "input_file", file_data: "https://example.com/a.pdf" })).toMatchObject({
      value: expect.stringMatching(/file_url/)
    })
    expect(failure({ type: "input_file" })).toMatchObject({
      value: expect.stringMatching(/either file_data or file_url/)
    })
    expect(failure({ type: "input_file", file_url: "https://e.com/a.pdf", file_data: "data:text/plain;base64,QQ==" }))
      .toMatchObject({ value: expect.stringMatching(/not both/) })
  })

  it("counts the bytes base64 stands for", () => {
    expect([ProviderContent.decodedSize(""), ProviderContent.decodedSize("QQ=="), ProviderContent.decodedSize("QUI=")])
      .toStrictEqual([0, 1, 2])
    expect(ProviderContent.decodedSize("QUJD".repeat(1000))).toBe(3000)
  })
})

describe("ProviderContent.checker", () => {
  it("passes what the rules take, and refuses other media types naming the part and what is taken", () => {
    expect(checked(Item.imageFromBytes(bytes(3), "image/jpeg"))).toMatchObject({ type: "base64" })
    expect(checked(Item.fileFromBytes(bytes(3), "application/pdf"))).toMatchObject({ type: "base64" })
    expect(checked(Item.imageFromBytes(bytes(3), "image/gif"))).toBe(
      "part: demo does not take images of type image/gif (it takes image/png, image/jpeg)"
    )
    expect(checked(Item.fileFromBytes(bytes(3), "application/zip"))).toBe(
      "part: demo does not take files of type application/zip (it takes application/pdf, text/plain)"
    )
    // A PDF sent as an image, where only images go.
    expect(checked(Item.imageFromBytes(bytes(3), "application/pdf"))).toMatch(
      /does not take images of type application\/pdf/
    )
    expect(checked(Item.fileFromBytes(bytes(3), "application/pdf"), { ...rules, fileTypes: [] })).toBe(
      "part: demo takes no files"
    )
  })

  it("refuses a part over its limit, counted encoded or decoded as the limit says", () => {
    // 6 bytes are 8 base64 characters: at the limit; 7 bytes are 12, over it.
    expect(checked(Item.imageFromBytes(bytes(6), "image/png"))).toMatchObject({ type: "base64" })
    expect(checked(Item.imageFromBytes(bytes(7), "image/png"))).toBe(
      "part: 12 bytes is over demo's limit of 8 bytes for an image"
    )
    // The request's limit counts the bytes the base64 stands for, across every part of the request.
    const check = ProviderContent.checker(rules)
    expect(Result.isSuccess(check(Item.imageFromBytes(bytes(6), "image/jpeg"), "first"))).toBe(true)
    expect(Result.isSuccess(check(Item.fileFromBytes(bytes(6), "text/plain"), "second"))).toBe(true)
    const third = check(Item.fileFromBytes(bytes(1), "text/plain"), "third")
    expect(Result.isFailure(third) && third.failure.message).toMatch(/^third: the request's inline images and files/)
    // Another request starts from nothing.
    expect(checked(Item.fileFromBytes(bytes(12), "text/plain"))).toMatchObject({ type: "base64" })
    expect(checked(Item.fileFromBytes(bytes(13), "text/plain"))).toMatch(/over demo's limit/)
  })

  it("keeps counting the request's total when a place of the request has rules of its own", () => {
    const check = ProviderContent.checker(rules)
    const strict: ProviderContent.Rules = { ...rules, imageTypes: ["image/png"], requestLimit: undefined }
    expect(Result.isSuccess(check(Item.imageFromBytes(bytes(9), "image/jpeg"), "a"))).toBe(true)
    const jpeg = check(Item.imageFromBytes(bytes(1), "image/jpeg"), "b", strict)
    expect(Result.isFailure(jpeg) && jpeg.failure.message).toMatch(/does not take images of type image\/jpeg/)
    const png = check(Item.imageFromBytes(bytes(4), "image/png"), "c", strict)
    expect(Result.isFailure(png) && png.failure.message).toMatch(/request's inline images and files come to/)
  })

  it("checks URLs: the schemes fetched, the file types fetched, and a media type where the provider needs one", () => {
    expect(checked(Item.fileUrl("https://example.com/a.pdf"))).toMatchObject({
      type: "url",
      mediaType: "application/pdf"
    })
    expect(checked(Item.fileUrl("https://example.com/a.txt"))).toBe(
      "part: demo does not fetch files of type text/plain (it fetches application/pdf)"
    )
    expect(checked(Item.imageUrl("ftp://example.com/a.png"))).toBe(
      "part: demo does not fetch ftp: URLs (it fetches https:, http:)"
    )
    expect(checked(Item.imageUrl("https://example.com/a.png"), { ...rules, urlSchemes: [] })).toBe(
      "part: demo fetches no URLs here: send the image's bytes"
    )
    // Without a known extension the URL goes as it is, unless the provider needs its type.
    expect(checked(Item.imageUrl("https://example.com/image?id=1"))).toMatchObject({
      type: "url",
      mediaType: undefined
    })
    expect(checked(Item.imageUrl("https://example.com/image?id=1"), { ...rules, urlNeedsType: true })).toMatch(
      /^part: demo needs the media type of an image URL/
    )
  })

  it("names a part by its place in the history", () => {
    const message = Item.userMessage([
      { type: "input_text", text: "see" },
      Item.fileUrl("https://e.com/a", { filename: "a.zip" })
    ])
    const part = message.content[1]
    expect(part !== undefined && Item.isMediaPart(part) && ProviderContent.where(3, message, 1, part)).toBe(
      "history[3] (message \"user\") content[1] (input_file \"a.zip\")"
    )
  })

  it("decodes an inline text file as UTF-8, and refuses bytes that are not", () => {
    expect(ProviderContent.decodeText("R3LDvMOfZQ==")).toStrictEqual(Result.succeed("Grüße"))
    expect(Result.isFailure(ProviderContent.decodeText("//79"))).toBe(true)
  })
})
