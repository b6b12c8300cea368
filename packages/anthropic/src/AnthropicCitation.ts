/**
 * The citations of the Messages API's text blocks (on the block, and streamed
 * as `citations_delta`s), read as `Item.Citation`s and written back.
 *
 * A citation covers the whole text block it is on, so it has no span in the
 * text: its indices (`start_char_index`, `start_page_number`, …) are
 * positions in the cited document, kept with the rest of the citation in its
 * `provider_data` (`x-anthropic.<type>`), from which the next request's
 * citation is rebuilt with the fields the API takes back (a web search
 * result's `encrypted_index` among them; not a document's `file_id`, which the
 * API sends but refuses in a request). A
 * `web_search_result_location` or `search_result_location` is an
 * `Item.UrlCitation` (a search result's `source` as its URL); a
 * `char_location`, `page_location` or `content_block_location` an
 * `Item.FileCitation` (the document's title, its file id when it has one). A
 * citation of another type, one that does not decode, or one that would not
 * encode as an `Item.Citation` (nesting deeper than `Item.CitationData`
 * allows) is skipped: a citation is never worth failing a turn for.
 *
 * @since 0.2.0
 */
import { type Item, ProviderCitation } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { JsonObject } from "./AnthropicEvent.ts"

const { Text } = ProviderCitation
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

const Index = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Title = Schema.NullOr(Text)
const InDocument = { cited_text: Text, document_index: Index, document_title: Title }

/**
 * A citation as a request's text block takes it back: each kind with exactly
 * the fields the API documents for it (it refuses any other, such as the
 * `file_id` it sends on a document's citations).
 *
 * @since 0.2.0
 * @category schemas
 */
export const CitationParam = Schema.Union([
  Schema.Struct({
    type: Schema.Literal("char_location"),
    ...InDocument,
    start_char_index: Index,
    end_char_index: Index
  }),
  Schema.Struct({
    type: Schema.Literal("page_location"),
    ...InDocument,
    start_page_number: Index,
    end_page_number: Index
  }),
  Schema.Struct({
    type: Schema.Literal("content_block_location"),
    ...InDocument,
    start_block_index: Index,
    end_block_index: Index
  }),
  Schema.Struct({
    type: Schema.Literal("web_search_result_location"),
    cited_text: Text,
    encrypted_index: Text,
    title: Title,
    url: Text
  }),
  Schema.Struct({
    type: Schema.Literal("search_result_location"),
    cited_text: Text,
    search_result_index: Index,
    source: Text,
    title: Title,
    start_block_index: Index,
    end_block_index: Index
  })
])
export type CitationParam = typeof CitationParam.Type

const decodeObject = Schema.decodeUnknownResult(JsonObject)
const decodeSearch = Schema.decodeUnknownResult(SearchCitation)
const decodeDocument = Schema.decodeUnknownResult(DocumentCitation)
const decodeParam = Schema.decodeUnknownResult(CitationParam)

/** The citation a citation object is, by its type, or `undefined`. */
const citationOf = (data: { readonly [key: string]: unknown }): Item.Citation | undefined => {
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
 * The citation a text block's citation is, or `undefined` for one of another type, that does not decode or nests too deep.
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
  // The citation is kept whole, so it must nest no deeper than a checkpoint will encode.
  return ProviderCitation.encodable(citationOf(object.success))
}

/**
 * The citation as a text block of the next request carries it: the one the
 * API sent, with the fields of its kind the API takes back (see
 * {@link CitationParam}); `undefined` for another provider's (the API would
 * refuse a citation it cannot check) or one that lacks any of them.
 *
 * @example
 * ```ts
 * import { AnthropicCitation } from "@agentloop/anthropic"
 *
 * const citation = AnthropicCitation.fromWire({
 *   type: "page_location",
 *   cited_text: "Revenue grew 12%.",
 *   document_index: 0,
 *   document_title: null,
 *   file_id: "file_011",
 *   start_page_number: 3,
 *   end_page_number: 4
 * })
 * console.log(citation && AnthropicCitation.toWire(citation))
 * // { type: 'page_location', cited_text: 'Revenue grew 12%.', document_index: 0, document_title: null, start_page_number: 3, end_page_number: 4 }
 * ```
 *
 * @since 0.2.0
 * @category encoding
 */
export const toWire = (citation: Item.Citation): CitationParam | undefined => {
  if (!citation.provider_data?.type.startsWith("x-anthropic.")) return undefined
  const param = decodeParam(citation.provider_data.data)
  return Result.isSuccess(param) ? param.success : undefined
}
