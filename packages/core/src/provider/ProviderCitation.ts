/**
 * What provider layers share to read the citations of their wire as
 * `Item.Citation`s and write them back: a bound on the wire's strings, the
 * check that a citation a layer keeps whole would encode, and a text part's
 * citations in a request's form.
 *
 * @since 0.2.0
 */
import * as Schema from "effect/Schema"
import * as Item from "../Item.ts"

/**
 * A string of a citation on a provider's wire (a URL, a title, an id, a
 * cited passage), bounded: none is near this long.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Text = Schema.String.check(Schema.isMaxLength(1_000_000))

const isCitation = Schema.is(Item.Citation)

/**
 * The citation a layer read, or `undefined` when it would not encode as an
 * `Item.Citation` (its provider data nesting deeper than `Item.CitationData`
 * allows): a turn that kept it could not be checkpointed, and a citation is
 * never worth failing a turn for.
 *
 * @example
 * ```ts
 * import { ProviderCitation } from "@agentloop/core"
 *
 * let deep: unknown = {}
 * for (let i = 0; i < 300; i++) deep = { deep }
 * console.log(ProviderCitation.encodable({ type: "url_citation", url: "https://example.com" })) // { type: 'url_citation', url: 'https://example.com' }
 * console.log(ProviderCitation.encodable({
 *   type: "url_citation",
 *   url: "https://example.com",
 *   provider_data: { type: "x-example.page", data: { deep } }
 * })) // undefined
 * ```
 *
 * @since 0.2.0
 * @category decoding
 */
export const encodable = (citation: Item.Citation | undefined): Item.Citation | undefined =>
  citation !== undefined && isCitation(citation) ? citation : undefined

/**
 * The citations of a content part as a request carries them, each written by
 * the provider's `toWire`; one it writes as `undefined` (another provider's,
 * say) is dropped. Only an `output_text` has citations.
 *
 * @example
 * ```ts
 * import { ProviderCitation } from "@agentloop/core"
 *
 * const urls = ProviderCitation.toRequest(
 *   {
 *     type: "output_text",
 *     text: "Paris",
 *     annotations: [{ type: "url_citation", url: "https://example.com" }, { type: "file_citation", title: "Atlas" }]
 *   },
 *   (citation) => citation.type === "url_citation" ? { url: citation.url } : undefined
 * )
 * console.log(urls) // [ { url: 'https://example.com' } ]
 * ```
 *
 * @since 0.2.0
 * @category encoding
 */
export const toRequest = <A>(
  part: Item.ContentPart,
  toWire: (citation: Item.Citation) => A | undefined
): Array<A> =>
  part.type === "output_text"
    ? (part.annotations ?? []).flatMap((citation) => {
      const wire = toWire(citation)
      return wire === undefined ? [] : [wire]
    })
    : []
