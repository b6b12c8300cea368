/**
 * Images and files on their way to a provider: where each part's bytes are
 * (inline as a data URL, or at a URL the provider fetches), what media type
 * it has, and whether the provider takes it, checked before anything is sent.
 *
 * A provider package states what its API takes as {@link Rules} (media types,
 * documented size limits, URL schemes) and maps each part through a
 * {@link checker} while it builds a request; a part the API would refuse
 * fails the turn with an `AiError.InvalidRequest` that names it
 * (`history[2] (message "user") content[1] (input_file "a.zip")`) and says
 * why, instead of a 400 from the server after the upload.
 *
 * @since 0.2.0
 */
import { Base64 } from "effect/encoding"
import * as Result from "effect/Result"
import * as AiError from "../AiError.ts"
import type * as Item from "../Item.ts"
import * as MediaType from "../MediaType.ts"

/**
 * Where a part's bytes are: inline (`data`, base64, of `mediaType`), or at
 * `url` (with the media type its file name or URL tells, when it tells one).
 *
 * @since 0.2.0
 * @category models
 */
export type Source =
  | { readonly type: "base64"; readonly mediaType: string; readonly data: string }
  | { readonly type: "url"; readonly url: string; readonly mediaType: string | undefined }

/**
 * A documented size limit: at most `max` bytes, counted on the base64 text
 * sent (`encoded`, as limits on a request's payload are) or on the bytes it
 * stands for (`decoded`, as limits on a file are). `what` names it in errors.
 *
 * @since 0.2.0
 * @category models
 */
export interface Limit {
  readonly max: number
  readonly of: "encoded" | "decoded"
  readonly what: string
}

/**
 * What a provider's API takes: the media types of images and of files, the
 * documented size limits, and the URLs it fetches.
 *
 * @since 0.2.0
 * @category models
 */
export interface Rules {
  /** The provider's name, as its errors carry it. */
  readonly provider: string
  /** The media types an `input_image` may have. */
  readonly imageTypes: ReadonlyArray<string>
  /** The media types an `input_file` may have. */
  readonly fileTypes: ReadonlyArray<string>
  /** The limit on one inline part of a media type, if there is one. */
  readonly partLimit?: ((mediaType: string) => Limit | undefined) | undefined
  /** The limit on all inline parts of one request together, counted as `partLimit`'s are. */
  readonly requestLimit?: Limit | undefined
  /** The URL schemes the provider fetches from. Default `https:` and `http:`. */
  readonly urlSchemes?: ReadonlyArray<string> | undefined
  /** The media types a file URL may have (Anthropic fetches only PDFs); default any of `fileTypes`. */
  readonly fileUrlTypes?: ReadonlyArray<string> | undefined
  /** Whether a URL part must tell its media type (by its file name or its URL's extension); Gemini needs it. */
  readonly urlNeedsType?: boolean | undefined
}

/**
 * Where a part is in the history, for error messages:
 * `history[2] (message "user") content[1] (input_image)`.
 *
 * @since 0.2.0
 * @category naming
 */
export const where = (index: number, item: Item.Item, part: number, media: Item.MediaPart): string => {
  const name = media.type === "input_file" && media.filename !== undefined ? ` ${JSON.stringify(media.filename)}` : ""
  return `history[${index}] (${item.type} ${JSON.stringify(item.id)}) content[${part}] (${media.type}${name})`
}

/**
 * The error that refuses a part: `where` it is, and why.
 *
 * @since 0.2.0
 * @category errors
 */
export const refuse = (provider: string, at: string, why: string): AiError.InvalidRequest =>
  new AiError.InvalidRequest({ provider, message: `${at}: ${why}` })

const dataUrlPrefix = /^data:([a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+)(?:;[^;,]*)*;base64,/i
const base64Text = /^[A-Za-z0-9+/]*={0,2}$/

/**
 * How many bytes `data`, base64 text, stands for.
 *
 * @since 0.2.0
 * @category sizes
 */
export const decodedSize = (data: string): number => {
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0
  return Math.floor(data.length * 3 / 4) - padding
}

const sizeOf = (data: string, limit: Limit): number => limit.of === "encoded" ? data.length : decodedSize(data)

const bytesText = (bytes: number): string =>
  bytes >= 1_000_000 ? `${Number((bytes / 1_000_000).toFixed(2))} MB` : `${bytes} bytes`

/**
 * Reads where a part's bytes are, without checking them against any
 * provider: a `data:<type>;base64,` URL (its media type lower-cased), or
 * another URL (its media type told by the file's `filename`, else by the
 * URL's path). Fails with why, for a URL that is neither, base64 that is not
 * base64, or an `input_file` without exactly one of `file_data` and `file_url`.
 *
 * @since 0.2.0
 * @category sources
 */
export const source = (part: Item.MediaPart): Result.Result<Source, string> => {
  if (part.type === "input_file" && (part.file_data === undefined) === (part.file_url === undefined)) {
    return Result.fail("an input_file has either file_data or file_url, not both and not neither")
  }
  const text = part.type === "input_image" ? part.image_url : part.file_data ?? part.file_url ?? ""
  const prefix = dataUrlPrefix.exec(text)
  if (prefix !== null) {
    const data = text.slice(prefix[0].length)
    if (data.length % 4 !== 0 || !base64Text.test(data)) return Result.fail("its data URL's content is not base64")
    return Result.succeed({ type: "base64", mediaType: prefix[1]!.toLowerCase(), data })
  }
  if (text.startsWith("data:")) return Result.fail("a data URL must be data:<media type>;base64,<data>")
  if (part.type === "input_file" && part.file_data !== undefined) {
    return Result.fail("file_data must be a data:<media type>;base64, URL (a URL to fetch goes in file_url)")
  }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return Result.fail("its URL is neither an http(s) URL nor a data: URL")
  }
  const named = part.type === "input_file" && part.filename !== undefined
    ? MediaType.fromName(part.filename)
    : undefined
  return Result.succeed({ type: "url", url: url.href, mediaType: named ?? MediaType.fromName(url.pathname) })
}

const list = (types: ReadonlyArray<string>): string => types.join(", ")

/**
 * Checks parts against `rules` for one request: each part alone (its URL or
 * data, its media type, its size), and all inline parts together against the
 * request's limit. Make one per request, and hand it each part with
 * {@link where} it is (and, for a place of the request that takes less, such
 * as a tool's result, the rules of that place: the request's limit stays
 * `rules`'); it answers with the part's {@link Source}, or the
 * `AiError.InvalidRequest` that refuses it.
 *
 * @since 0.2.0
 * @category checking
 * @example
 * ```ts
 * import { Item } from "@agentloop/core"
 * import { ProviderContent } from "@agentloop/core/provider"
 * import { Result } from "effect"
 *
 * const check = ProviderContent.checker({ provider: "demo", imageTypes: ["image/png"], fileTypes: [] })
 * const message = Item.userMessage([Item.fileUrl("https://example.com/a.pdf")])
 * const part = message.content[0]
 * if (part !== undefined && Item.isMediaPart(part)) {
 *   const checked = check(part, ProviderContent.where(0, message, 0, part))
 *   if (Result.isFailure(checked)) console.log(checked.failure.message)
 *   // history[0] (message "user") content[0] (input_file): demo takes no files
 * }
 * ```
 */
export const checker = (request: Rules) => {
  let total = 0
  return (part: Item.MediaPart, at: string, rules: Rules = request): Result.Result<Source, AiError.InvalidRequest> => {
    const { provider } = rules
    const schemes = rules.urlSchemes ?? ["https:", "http:"]
    const fail = (why: string) => Result.fail(refuse(provider, at, why))
    const read = source(part)
    if (Result.isFailure(read)) return fail(read.failure)
    const found = read.success
    const image = part.type === "input_image"
    const kind = image ? "image" : "file"
    const accepted = image ? rules.imageTypes : rules.fileTypes
    if (accepted.length === 0) return fail(`${provider} takes no ${kind}s`)
    if (found.type === "url") {
      const scheme = new URL(found.url).protocol
      if (schemes.length === 0) return fail(`${provider} fetches no URLs here: send the ${kind}'s bytes`)
      if (!schemes.includes(scheme)) {
        return fail(`${provider} does not fetch ${scheme} URLs (it fetches ${list(schemes)})`)
      }
      if (found.mediaType === undefined) {
        return rules.urlNeedsType === true
          ? fail(
            `${provider} needs the media type of ${
              image ? "an image" : "a file"
            } URL, and neither its URL nor its filename ends with a known extension`
          )
          : Result.succeed(found)
      }
      const urlTypes = image ? accepted : rules.fileUrlTypes ?? accepted
      return urlTypes.includes(found.mediaType)
        ? Result.succeed(found)
        : fail(`${provider} does not fetch ${kind}s of type ${found.mediaType} (it fetches ${list(urlTypes)})`)
    }
    if (!accepted.includes(found.mediaType)) {
      return fail(`${provider} does not take ${kind}s of type ${found.mediaType} (it takes ${list(accepted)})`)
    }
    const limit = rules.partLimit?.(found.mediaType)
    if (limit !== undefined && sizeOf(found.data, limit) > limit.max) {
      return fail(
        `${bytesText(sizeOf(found.data, limit))} is over ${provider}'s limit of ${bytesText(limit.max)} ${limit.what}`
      )
    }
    const requestLimit = request.requestLimit
    if (requestLimit !== undefined) {
      total += sizeOf(found.data, requestLimit)
      if (total > requestLimit.max) {
        return fail(
          `the request's inline images and files come to ${
            bytesText(total)
          } with this one, over ${provider}'s limit of ${bytesText(requestLimit.max)} ${requestLimit.what}`
        )
      }
    }
    return Result.succeed(found)
  }
}

/**
 * The text of an inline text file (`text/plain`, …), for APIs that take a
 * text document as text; fails with why when its bytes are not UTF-8.
 *
 * @since 0.2.0
 * @category sources
 */
export const decodeText = (data: string): Result.Result<string, string> => {
  const bytes = Base64.decode(data)
  if (Result.isFailure(bytes)) return Result.fail("its data is not base64")
  try {
    return Result.succeed(new TextDecoder("utf-8", { fatal: true }).decode(bytes.success))
  } catch {
    return Result.fail("its bytes are not UTF-8 text")
  }
}
