/**
 * A citation as the source list of a UI shows it: a web page, or a document
 * with the media type and title the AI SDK's and `effect/ai`'s source parts
 * require (a citation without them gets `application/octet-stream` and its
 * file's name or id).
 *
 * @internal
 */
import type * as Item from "../Item.ts"

/** A cited source. `key` is the same for two citations of the same source. */
export type Source =
  | { readonly kind: "url"; readonly key: string; readonly url: string; readonly title: string | undefined }
  | {
    readonly kind: "document"
    readonly key: string
    readonly mediaType: string
    readonly title: string
    readonly filename: string | undefined
  }

/** The source `citation` cites. */
export const of = (citation: Item.Citation): Source => {
  if (citation.type === "url_citation") {
    return { kind: "url", key: `url:${citation.url}`, url: citation.url, title: citation.title }
  }
  const title = citation.title ?? citation.filename ?? citation.file_id ?? "document"
  return {
    kind: "document",
    key: `document:${citation.file_id ?? ""}:${citation.filename ?? ""}:${title}`,
    mediaType: citation.media_type ?? "application/octet-stream",
    title,
    filename: citation.filename
  }
}
