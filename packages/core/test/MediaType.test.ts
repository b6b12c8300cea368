import { describe, expect, it } from "@effect/vitest"
import * as MediaType from "../src/MediaType.ts"

describe("MediaType", () => {
  it("tells a media type from a file name's extension, in any case, on any path", () => {
    expect(MediaType.fromName("shot.PNG")).toBe("image/png")
    expect(MediaType.fromName("/tmp/a.b/report.pdf")).toBe("application/pdf")
    expect(MediaType.fromName("C:\\docs\\notes.txt")).toBe("text/plain")
    expect(MediaType.fromName("photo.jpeg")).toBe(MediaType.fromName("photo.jpg"))
  })

  it("tells nothing for a name without a known extension, or a dot file", () => {
    expect(MediaType.fromName("README")).toBeUndefined()
    expect(MediaType.fromName("archive.xyz")).toBeUndefined()
    expect(MediaType.fromName(".png")).toBeUndefined()
    expect(MediaType.fromName("dir.png/file")).toBeUndefined()
  })

  it("tells image types apart", () => {
    expect(["image/webp", "application/pdf"].map(MediaType.isImage)).toStrictEqual([true, false])
  })
})
