/**
 * The annotations of the Responses API's `output_text` parts, read as
 * `Item.Citation`s and written back. A `url_citation` is an
 * `Item.UrlCitation` as it is; a `file_citation`, `container_file_citation`
 * or `file_path` is an `Item.FileCitation` (its `index`, a position in the
 * text, as both indices) that keeps the annotation in its `provider_data`
 * (`x-openai.<type>`), to go back as it came. An annotation of another type,
 * one that does not decode, or one that would not encode as an
 * `Item.Citation` (its data nesting deeper than `Item.CitationData` allows)
 * is skipped: a citation is never worth failing a turn for.
 *
 * @since 0.2.0
 */
import { type Item, ProviderCitation } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { Index, JsonObject } from "./ResponsesEvent.ts"

const { Text } = ProviderCitation

/**
 * A `url_citation`: a web page the text cites, with the span of the citing text.
 *
 * @since 0.2.0
 * @category schemas
 */
export const UrlCitation = Schema.Struct({
  type: Schema.Literal("url_citation"),
  url: Text,
  title: Schema.optionalKey(Schema.NullOr(Text)),
  start_index: Schema.optionalKey(Schema.NullOr(Index)),
  end_index: Schema.optionalKey(Schema.NullOr(Index))
})

/**
 * A `file_citation`, `container_file_citation` or `file_path`: a file of the
 * file search, of a code interpreter's container, or one it wrote. `index` is
 * a position in the text, `start_index`/`end_index` a span.
 *
 * @since 0.2.0
 * @category schemas
 */
export const FileAnnotation = Schema.Struct({
  type: Schema.Literals(["file_citation", "container_file_citation", "file_path"]),
  file_id: Text,
  filename: Schema.optionalKey(Schema.NullOr(Text)),
  index: Schema.optionalKey(Schema.NullOr(Index)),
  start_index: Schema.optionalKey(Schema.NullOr(Index)),
  end_index: Schema.optionalKey(Schema.NullOr(Index))
})

const decodeUrl = Schema.decodeUnknownResult(UrlCitation)
const decodeObject = Schema.decodeUnknownResult(JsonObject)
const decodeFile = Schema.decodeUnknownResult(FileAnnotation)

const span = (start: number | null | undefined, end: number | null | undefined) => ({
  ...(start == null ? {} : { start_index: start }),
  ...(end == null ? {} : { end_index: end })
})

/**
 * The citation an annotation is, or `undefined` for one of another type or that does not decode.
 *
 * @example
 * ```ts
 * import { ResponsesCitation } from "@agentloop/responses"
 *
 * const citation = ResponsesCitation.fromWire({
 *   type: "url_citation", url: "https://example.com", title: "Example", start_index: 0, end_index: 7
 * })
 * console.log(citation) // { type: 'url_citation', url: 'https://example.com', title: 'Example', start_index: 0, end_index: 7 }
 * console.log(ResponsesCitation.fromWire({ type: "page_number", page: 3 })) // undefined
 * ```
 *
 * @since 0.2.0
 * @category decoding
 */
export const fromWire = (raw: unknown): Item.Citation | undefined => {
  const url = decodeUrl(raw)
  if (Result.isSuccess(url)) {
    const { end_index, start_index, title, url: href } = url.success
    return { type: "url_citation", url: href, ...(title == null ? {} : { title }), ...span(start_index, end_index) }
  }
  const object = decodeObject(raw)
  if (Result.isFailure(object)) return undefined
  const file = decodeFile(object.success)
  if (Result.isFailure(file)) return undefined
  const { end_index, file_id, filename, index, start_index, type } = file.success
  // The annotation is kept whole, so it must nest no deeper than a checkpoint will encode.
  return ProviderCitation.encodable({
    type: "file_citation",
    file_id,
    ...(filename == null ? {} : { filename }),
    ...(index == null ? span(start_index, end_index) : span(index, index)),
    provider_data: { type: `x-openai.${type}`, data: object.success }
  })
}

/**
 * The annotation a citation goes back to the API as: the annotation this
 * layer read, as it came; a URL citation with the span of its citing text,
 * whichever provider cited it, as a `url_citation`; else `undefined` (a
 * document cited by another provider means nothing to this API).
 *
 * @since 0.2.0
 * @category encoding
 */
export const toWire = (citation: Item.Citation): { readonly [key: string]: unknown } | undefined => {
  if (citation.provider_data?.type.startsWith("x-openai.")) return citation.provider_data.data
  if (citation.type !== "url_citation" || citation.start_index === undefined || citation.end_index === undefined) {
    return undefined
  }
  return {
    type: "url_citation",
    url: citation.url,
    title: citation.title ?? citation.url,
    start_index: citation.start_index,
    end_index: citation.end_index
  }
}
