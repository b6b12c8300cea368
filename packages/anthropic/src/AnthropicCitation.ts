/**
 * The citations of the Messages API's text blocks (on the block, and streamed
 * as `citations_delta`s), read as `Item.Citation`s and written back.
 *
 * A citation covers the whole text block it is on, so it has no span in the
 * text: its indices (`start_char_index`, `start_page_number`, …) are
 * positions in the cited document, kept with the rest of the citation in its
 * `provider_data` (`x-anthropic.<type>`), which goes back as it came: the API
 * wants a web search result's `encrypted_index` back. A
 * `web_search_result_location` or `search_result_location` is an
 * `Item.UrlCitation` (a search result's `source` as its URL); a
 * `char_location`, `page_location` or `content_block_location` an
 * `Item.FileCitation` (the document's title, its file id when it has one). A
 * citation of another type, or one that does not decode, is skipped.
 *
 * @since 0.2.0
 */
import type { Item } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** A string from the wire, bounded: a title, a URL or a cited passage is never near this long. */
const Text = Schema.String.check(Schema.isMaxLength(1_000_000))
const OptionalText = Schema.optionalKey(Schema.NullOr(Text))

/**
 * A `web_search_result_location` or `search_result_location`: a web page or
 * a search result, and the passage of it the text cites.
 *
 * @since 0.2.0
 * @category schemas
 */
export const SearchCitation = Schema.Struct({
  type: Schema.Literals(["web_search_result_location", "search_result_location"]),
  url: OptionalText,
  source: OptionalText,
  title: OptionalText,
  cited_text: OptionalText
})

/**
 * A `char_location`, `page_location` or `content_block_location`: a passage
 * of a document given in the request.
 *
 * @since 0.2.0
 * @category schemas
 */
export const DocumentCitation = Schema.Struct({
  type: Schema.Literals(["char_location", "page_location", "content_block_location"]),
  document_title: OptionalText,
  file_id: OptionalText,
  cited_text: OptionalText
})

const decodeObject = Schema.decodeUnknownResult(Schema.Record(Schema.String, Schema.Unknown))
const decodeSearch = Schema.decodeUnknownResult(SearchCitation)
const decodeDocument = Schema.decodeUnknownResult(DocumentCitation)

/**
 * The citation a text block's citation is, or `undefined` for one of another type or that does not decode.
 *
 * @example
 * ```ts
 * import { AnthropicCitation } from "@agentloop/anthropic"
 *
 * const citation = AnthropicCitation.fromWire({
 *   type: "char_location",
 *   cited_text: "The grass is green.",
 *   document_index: 0,
 *   document_title: "Facts",
 *   start_char_index: 0,
 *   end_char_index: 20
 * })
 * console.log(citation?.type, citation?.title, citation?.provider_data?.type) // file_citation Facts x-anthropic.char_location
 * console.log(AnthropicCitation.fromWire({ type: "audio_location" })) // undefined
 * ```
 *
 * @since 0.2.0
 * @category decoding
 */
export const fromWire = (raw: unknown): Item.Citation | undefined => {
  const object = decodeObject(raw)
  if (Result.isFailure(object)) return undefined
  const data = object.success
  const search = decodeSearch(data)
  if (Result.isSuccess(search)) {
    const { cited_text, source, title, type, url } = search.success
    const href = url ?? source
    if (href == null) return undefined
    return {
      type: "url_citation",
      url: href,
      ...(title == null ? {} : { title }),
      ...(cited_text == null ? {} : { cited_text }),
      provider_data: { type: `x-anthropic.${type}`, data }
    }
  }
  const document = decodeDocument(data)
  if (Result.isFailure(document)) return undefined
  const { cited_text, document_title, file_id, type } = document.success
  return {
    type: "file_citation",
    ...(file_id == null ? {} : { file_id }),
    ...(document_title == null ? {} : { title: document_title }),
    ...(cited_text == null ? {} : { cited_text }),
    provider_data: { type: `x-anthropic.${type}`, data }
  }
}

/**
 * The citation as a text block of the next request carries it: the one the
 * API sent, as it came; `undefined` for another provider's (the API would
 * refuse a citation it cannot check).
 *
 * @since 0.2.0
 * @category encoding
 */
export const toWire = (citation: Item.Citation): { readonly [key: string]: unknown } | undefined =>
  citation.provider_data?.type.startsWith("x-anthropic.") ? citation.provider_data.data : undefined
