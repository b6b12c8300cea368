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
 * up to {@link maxEntries}, and so are the citations made of them (a support
 * may name many chunks). Gemini takes no citations back in a request.
 *
 * @since 0.2.0
 */
import { type Item, ProviderCitation } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * The most chunks, supports and citations read from one `groundingMetadata`.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxEntries = 4096

const { Text } = ProviderCitation
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

type Support = typeof GroundingSupport.Type

const decodeChunk = Schema.decodeUnknownResult(GroundingChunk)
const decodeSupport = Schema.decodeUnknownResult(GroundingSupport)

/** The bytes `char` (one code point) takes in UTF-8. */
const utf8Length = (char: string): number => {
  const code = char.codePointAt(0) ?? 0
  return code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4
}

/**
 * The UTF-16 index of each of the UTF-8 byte `offsets` of `text` (an offset
 * inside a character is the next one's), found in one walk of the text over
 * the offsets sorted; an offset past the text's bytes is missing (the end of
 * the text).
 */
const utf16Indices = (text: string, offsets: ReadonlyArray<number>): ReadonlyMap<number, number> => {
  const sorted = [...new Set(offsets)].sort((a, b) => a - b)
  const indices = new Map<number, number>()
  let bytes = 0
  let index = 0
  let next = 0
  for (const char of text) {
    for (let offset = sorted[next]; offset !== undefined && offset <= bytes; offset = sorted[++next]) {
      indices.set(offset, index)
    }
    if (next === sorted.length) break
    bytes += utf8Length(char)
    index += char.length
  }
  return indices
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
 * spans first, in the supports' order, then the sources no support names, up
 * to {@link maxEntries} in all. The spans' byte offsets are converted to
 * UTF-16 in one walk of the text.
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
  const supports = supportsUpTo(metadata.groundingSupports ?? [], sources)
  const indices = utf16Indices(text, supports.flatMap(({ segment }) => [segment.startIndex ?? 0, segment.endIndex]))
  const at = (offset: number) => indices.get(offset) ?? text.length
  const named = new Set<number>()
  const out: Array<Item.Citation> = []
  for (const { groundingChunkIndices, segment } of supports) {
    const span = { start_index: at(segment.startIndex ?? 0), end_index: at(segment.endIndex) }
    for (const index of groundingChunkIndices) {
      const source = sources[index]
      if (source === undefined || out.length === maxEntries) continue
      named.add(index)
      out.push({ ...source, ...span })
    }
  }
  for (const [index, source] of sources.entries()) {
    if (source !== undefined && !named.has(index) && out.length < maxEntries) out.push(source)
  }
  return out
}

/** The supports that decode, read until they name {@link maxEntries} sources in all. */
const supportsUpTo = (
  raws: ReadonlyArray<unknown>,
  sources: ReadonlyArray<Item.Citation | undefined>
): Array<Support> => {
  const supports: Array<Support> = []
  let named = 0
  for (const raw of raws.slice(0, maxEntries)) {
    if (named >= maxEntries) break
    const support = decodeSupport(raw)
    if (Result.isFailure(support)) continue
    supports.push(support.success)
    named += support.success.groundingChunkIndices.filter((index) => sources[index] !== undefined).length
  }
  return supports
}
