/**
 * Gemini's grounding (`groundingMetadata` on a candidate, sent by Google
 * Search grounding, URL context, Maps and file search) read as
 * `Item.Citation`s, and written back the same way for the testing wire.
 *
 * `groundingChunks` are the sources: a `web` or `maps` chunk is an
 * `Item.UrlCitation` (its `uri` and `title`), a `retrievedContext` chunk an
 * `Item.FileCitation` (its `title`, its `text` as the cited text).
 * `groundingSupports` say which spans of the answer each source supports:
 * each support's `segment` (UTF-8 byte offsets into the answer's text) gives
 * one citation per chunk it names, with the span as UTF-16 indices into the
 * text; a chunk no support names is a citation without a span. Chunks of
 * other kinds, and entries that do not decode, are skipped; the lists are read
 * up to {@link maxEntries}. Gemini takes no citations back in a request.
 *
 * @since 0.2.0
 */
import type { Item } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * The most chunks, and supports, read from one `groundingMetadata`.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxEntries = 4096

const Text = Schema.String.check(Schema.isMaxLength(1_000_000))
const Offset = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Source = Schema.Struct({ uri: Schema.optionalKey(Text), title: Schema.optionalKey(Text) })

/**
 * One source of a grounded answer: a web page, a place on Maps, or a passage of a retrieved document.
 *
 * @since 0.2.0
 * @category schemas
 */
export const GroundingChunk = Schema.Struct({
  web: Schema.optionalKey(Source),
  maps: Schema.optionalKey(Source),
  retrievedContext: Schema.optionalKey(Schema.Struct({
    uri: Schema.optionalKey(Text),
    title: Schema.optionalKey(Text),
    text: Schema.optionalKey(Text)
  }))
})

/**
 * A span of the answer (`segment`, in UTF-8 bytes) and the chunks that support it.
 *
 * @since 0.2.0
 * @category schemas
 */
export const GroundingSupport = Schema.Struct({
  segment: Schema.Struct({ startIndex: Schema.optionalKey(Offset), endIndex: Offset }),
  groundingChunkIndices: Schema.Array(Offset).check(Schema.isMaxLength(maxEntries))
})

/**
 * A candidate's `groundingMetadata`: its chunks and supports, each decoded on its own.
 *
 * @since 0.2.0
 * @category schemas
 */
export const GroundingMetadata = Schema.Struct({
  groundingChunks: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  groundingSupports: Schema.optionalKey(Schema.Array(Schema.Unknown))
})
export type GroundingMetadata = typeof GroundingMetadata.Type

const decodeChunk = Schema.decodeUnknownResult(GroundingChunk)
const decodeSupport = Schema.decodeUnknownResult(GroundingSupport)

/** The UTF-16 index of the UTF-8 byte `offset` of `text` (the end of the text past its bytes). */
const utf16Index = (text: string, offset: number): number => {
  let bytes = 0
  let index = 0
  for (const char of text) {
    if (bytes >= offset) return index
    const code = char.codePointAt(0) ?? 0
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4
    index += char.length
  }
  return index
}

/** The citation a chunk is, without a span, or `undefined` for a kind this layer does not read. */
const sourceOf = (raw: unknown): Item.Citation | undefined => {
  const chunk = decodeChunk(raw)
  if (Result.isFailure(chunk)) return undefined
  const { maps, retrievedContext, web } = chunk.success
  const page = web ?? maps
  if (page?.uri !== undefined) {
    return { type: "url_citation", url: page.uri, ...(page.title === undefined ? {} : { title: page.title }) }
  }
  if (retrievedContext === undefined) return undefined
  return {
    type: "file_citation",
    ...(retrievedContext.title === undefined ? {} : { title: retrievedContext.title }),
    ...(retrievedContext.text === undefined ? {} : { cited_text: retrievedContext.text })
  }
}

/**
 * The citations of a grounded answer whose text is `text`: the supported
 * spans first, in the supports' order, then the sources no support names.
 *
 * @example
 * ```ts
 * import { GeminiGrounding } from "@agentloop/gemini"
 *
 * const citations = GeminiGrounding.citations("Zürich is in Switzerland.", {
 *   groundingChunks: [{ web: { uri: "https://example.com/zurich", title: "example.com" } }],
 *   groundingSupports: [{ segment: { startIndex: 0, endIndex: 26 }, groundingChunkIndices: [0] }]
 * })
 * console.log(citations[0]) // { type: 'url_citation', url: 'https://example.com/zurich', title: 'example.com', start_index: 0, end_index: 25 }
 * ```
 *
 * @since 0.2.0
 * @category decoding
 */
export const citations = (text: string, metadata: GroundingMetadata): Array<Item.Citation> => {
  const sources = (metadata.groundingChunks ?? []).slice(0, maxEntries).map(sourceOf)
  const named = new Set<number>()
  const out: Array<Item.Citation> = []
  for (const raw of (metadata.groundingSupports ?? []).slice(0, maxEntries)) {
    const support = decodeSupport(raw)
    if (Result.isFailure(support)) continue
    const { endIndex, startIndex } = support.success.segment
    const span = { start_index: utf16Index(text, startIndex ?? 0), end_index: utf16Index(text, endIndex) }
    for (const index of support.success.groundingChunkIndices) {
      const source = sources[index]
      if (source === undefined) continue
      named.add(index)
      out.push({ ...source, ...span })
    }
  }
  for (const [index, source] of sources.entries()) if (source !== undefined && !named.has(index)) out.push(source)
  return out
}
