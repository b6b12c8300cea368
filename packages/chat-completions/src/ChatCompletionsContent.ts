/**
 * Images and files on the Chat Completions wire: what the API takes
 * ({@link rules}), and OpenAI's `image_url` and `file` parts a user message
 * carries them in.
 *
 * @since 0.2.0
 */
import { type AiError, type Item, ProviderContent } from "@agentloop/core"
import * as Result from "effect/Result"
import * as ChatCompletionsError from "./ChatCompletionsError.ts"

/**
 * An image as OpenAI's `image_url` part takes it: an `http(s)` URL or a
 * `data:<type>;base64,` URL, and the detail the item asks for, if any.
 *
 * @since 0.2.0
 * @category models
 */
export interface ImagePart {
  readonly type: "image_url"
  readonly image_url: { readonly url: string; readonly detail?: Item.ImageDetail }
}

/**
 * A PDF as OpenAI's `file` part takes it: its bytes as a
 * `data:application/pdf;base64,` URL, and a file name (which OpenAI requires
 * beside `file_data`).
 *
 * @since 0.2.0
 * @category models
 */
export interface FilePart {
  readonly type: "file"
  readonly file: { readonly file_data: string; readonly filename: string }
}

/**
 * What the Chat Completions API takes as images and files: PNG, JPEG, WebP
 * and non-animated GIF images, from their bytes or an `http(s)` URL, up to
 * 50 MB of them in one request
 * (https://platform.openai.com/docs/guides/images-vision, "Image input
 * requirements"); PDFs only as files, from their bytes only, at most 32 MB of
 * them in one request (https://platform.openai.com/docs/guides/pdf-files?api-mode=chat:
 * "Chat Completions accepts only PDF files", file URLs "not supported",
 * "up to 100 pages and 32MB of total content in a single request, across
 * multiple file inputs"; see {@link pdfLimit}). Servers that speak the wire
 * take what their models take: a text-only model refuses any image.
 *
 * @since 0.2.0
 * @category content
 */
export const rules: ProviderContent.Rules = {
  provider: ChatCompletionsError.provider,
  imageTypes: ["image/png", "image/jpeg", "image/webp", "image/gif"],
  fileTypes: ["application/pdf"],
  requestLimit: { max: 50_000_000, of: "encoded", what: "of images and files in one request" }
}

/**
 * The PDF bytes one request may carry: 32 MB across all its files (OpenAI's
 * PDF guide for Chat Completions).
 *
 * @since 0.2.0
 * @category content
 */
export const pdfLimit: ProviderContent.Limit = { max: 32_000_000, of: "decoded", what: "of PDFs in one request" }

/**
 * The file name a PDF without one is sent with: OpenAI refuses `file_data`
 * without `filename`.
 *
 * @since 0.2.0
 * @category content
 */
export const defaultFilename = "document.pdf"

const megabytes = (bytes: number): string => `${Number((bytes / 1_000_000).toFixed(2))} MB`

/**
 * Checks one request's images and files against {@link rules} and the PDFs'
 * total against {@link pdfLimit}, and maps each as the API takes it; make one
 * per request. A file URL is refused: OpenAI's file part has no `file_url`.
 *
 * @since 0.2.0
 * @category checking
 * @example
 * ```ts
 * import { ChatCompletionsContent } from "@agentloop/chat-completions"
 * import { Item } from "@agentloop/core"
 * import { Result } from "effect"
 *
 * const check = ChatCompletionsContent.checker()
 * const image = check(Item.imageUrl("https://example.com/cat.png", { detail: "low" }), "content[0]")
 * if (Result.isSuccess(image)) console.log(image.success) // { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } }
 * const file = check(Item.fileUrl("https://example.com/spec.pdf"), "content[1]")
 * if (Result.isFailure(file)) console.log(file.failure.message)
 * // content[1]: chat-completions takes no file URLs (OpenAI's file part has no file_url): send the file's bytes
 * ```
 */
export const checker = () => {
  const check = ProviderContent.checker(rules)
  let pdfBytes = 0
  return (part: Item.MediaPart, at: string): Result.Result<ImagePart | FilePart, AiError.InvalidRequest> => {
    const refuse = (why: string) => Result.fail(ProviderContent.refuse(ChatCompletionsError.provider, at, why))
    if (part.type === "input_file" && part.file_url !== undefined) {
      return refuse(
        `${ChatCompletionsError.provider} takes no file URLs (OpenAI's file part has no file_url): send the file's bytes`
      )
    }
    const checked = check(part, at)
    if (Result.isFailure(checked)) return Result.fail(checked.failure)
    if (part.type === "input_image") {
      return Result.succeed({
        type: "image_url",
        image_url: { url: part.image_url, ...(part.detail === undefined ? {} : { detail: part.detail }) }
      })
    }
    const source = checked.success
    if (source.type === "base64") pdfBytes += ProviderContent.decodedSize(source.data)
    if (pdfBytes > pdfLimit.max) {
      return refuse(
        `the request's PDFs come to ${
          megabytes(pdfBytes)
        } with this one, over ${ChatCompletionsError.provider}'s limit of ${megabytes(pdfLimit.max)} ${pdfLimit.what}`
      )
    }
    return Result.succeed({
      type: "file",
      file: { file_data: part.file_data ?? "", filename: part.filename ?? defaultFilename }
    })
  }
}
