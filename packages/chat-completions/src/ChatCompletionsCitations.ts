/**
 * The sources a Chat Completions answer cites, wherever a server puts them,
 * read as `Item.UrlCitation`s: the `annotations` of a delta (OpenAI's search
 * models, OpenRouter's web plugin: `{ type: "url_citation", url_citation: {
 * url, title, start_index, end_index } }`), and Perplexity's top-level
 * `search_results` (`{ title, url }`) and `citations` (URLs), which it
 * repeats on every chunk. Each source is kept once (a URL citation by its URL
 * and span, a Perplexity source by its URL); an entry of another type, or one
 * that does not decode, is skipped, and at most {@link maxCitations} are kept.
 * Chat Completions takes no citations back in a request.
 *
 * @since 0.2.0
 */
import { type Item, ProviderCitation, type TurnDelta } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * The most citations kept for one answer.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxCitations = 4096

const { Text } = ProviderCitation
const Position = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const nullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

/**
 * A delta's annotation that cites a web page.
 *
 * @since 0.2.0
 * @category schemas
 */
export const UrlAnnotation = Schema.Struct({
  type: Schema.Literal("url_citation"),
  url_citation: Schema.Struct({
    url: Text,
    title: nullable(Text),
    start_index: nullable(Position),
    end_index: nullable(Position)
  })
})

/**
 * One of Perplexity's `search_results`.
 *
 * @since 0.2.0
 * @category schemas
 */
export const SearchResult = Schema.Struct({ url: Text, title: nullable(Text) })

const decodeAnnotation = Schema.decodeUnknownResult(UrlAnnotation)
const decodeResult = Schema.decodeUnknownResult(SearchResult)
const decodeUrl = Schema.decodeUnknownResult(Text)

/** The elements of `value` when it is an array, else none. */
const entries = (value: unknown): ReadonlyArray<unknown> => Array.isArray(value) ? value : []

/**
 * The citations of one answer, gathered from its chunks.
 *
 * @since 0.2.0
 * @category models
 */
export interface Citations {
  /** Reads a delta's `annotations`; a citation not seen before goes out as a delta. */
  readonly annotations: (value: unknown, out: Array<TurnDelta.TurnDelta>) => void
  /** Reads a chunk's `search_results` and `citations` (Perplexity). */
  readonly sources: (results: unknown, urls: unknown, out: Array<TurnDelta.TurnDelta>) => void
  /** The citations so far, in the order they came. */
  readonly all: () => ReadonlyArray<Item.Citation>
}

/**
 * A gatherer of one answer's citations.
 *
 * @example
 * ```ts
 * import type { TurnDelta } from "@agentloop/core"
 * import { ChatCompletionsCitations } from "@agentloop/chat-completions"
 *
 * const citations = ChatCompletionsCitations.make()
 * const out: Array<TurnDelta.TurnDelta> = []
 * // Perplexity repeats its sources on every chunk: each is kept once.
 * citations.sources([{ title: "Paris", url: "https://example.com/paris" }], ["https://example.com/paris"], out)
 * citations.sources([{ title: "Paris", url: "https://example.com/paris" }], ["https://example.com/paris"], out)
 * console.log(citations.all()) // [ { type: 'url_citation', url: 'https://example.com/paris', title: 'Paris' } ]
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (): Citations => {
  const kept = new Map<string, Item.Citation>()
  const keep = (key: string, citation: Item.Citation, out: Array<TurnDelta.TurnDelta>) => {
    if (kept.has(key) || kept.size >= maxCitations) return
    kept.set(key, citation)
    out.push({ type: "citation", citation })
  }
  const source = (url: string, title: string | null | undefined, out: Array<TurnDelta.TurnDelta>) =>
    keep(`source ${url}`, { type: "url_citation", url, ...(title == null ? {} : { title }) }, out)
  return {
    annotations: (value, out) => {
      for (const raw of entries(value)) {
        const annotation = decodeAnnotation(raw)
        if (Result.isFailure(annotation)) continue
        const { end_index, start_index, title, url } = annotation.success.url_citation
        keep(`${url} ${start_index} ${end_index}`, {
          type: "url_citation",
          url,
          ...(title == null ? {} : { title }),
          ...(start_index == null ? {} : { start_index }),
          ...(end_index == null ? {} : { end_index })
        }, out)
      }
    },
    sources: (results, urls, out) => {
      for (const raw of entries(results)) {
        const result = decodeResult(raw)
        if (Result.isSuccess(result)) source(result.success.url, result.success.title, out)
      }
      for (const raw of entries(urls)) {
        const url = decodeUrl(raw)
        if (Result.isSuccess(url)) source(url.success, undefined, out)
      }
    },
    all: () => [...kept.values()]
  }
}
