/**
 * Images and files between agentloop and `effect/ai`: an `input_image` or
 * `input_file` part and an `effect/ai` file part, one as the other, and a
 * tool's output with what it attached (`Item.FunctionCallOutput`'s `output`
 * and `content`) and a tool result's `modelOutput`.
 *
 * Inline bytes are bytes on the `effect/ai` side (a `Uint8Array`, which every
 * `effect/ai` provider reads) and a `data:<type>;base64,` URL on agentloop's;
 * a URL stays a URL. An image's `detail` travels as OpenAI's provider option
 * (`options.openai.imageDetail`), where `@effect/ai-openai` reads it. A part
 * that cannot be carried (data that is not base64, a URL that is not one)
 * fails with `AiError.InvalidRequest` naming it: none is dropped.
 *
 * @since 0.2.0
 */
import type { Prompt, Response } from "effect/ai"
import { Base64 } from "effect/encoding"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as AiError from "../AiError.ts"
import * as Item from "../Item.ts"
import * as MediaType from "../MediaType.ts"
import * as ProviderContent from "../provider/ProviderContent.ts"

/**
 * The provider name the bridge's errors carry.
 *
 * @since 0.2.0
 * @category constants
 */
export const provider = "effect-ai"

/**
 * The media type a file part gets when nothing tells it: `image/*` for an
 * image (`effect/ai`'s own wildcard), `application/octet-stream` for a file.
 *
 * @since 0.2.0
 * @category constants
 */
export const unknownType = (part: Item.MediaPart): string =>
  part.type === "input_image" ? "image/*" : "application/octet-stream"

const refuse = (at: string, why: string) => Result.fail(ProviderContent.refuse(provider, at, why))

const OpenAiOptions = Schema.Struct({ imageDetail: Item.ImageDetail })
const decodeOpenAiOptions = Schema.decodeUnknownOption(OpenAiOptions)

/**
 * An agentloop image or file as an `effect/ai` file part: its bytes (from
 * its data URL) or its URL, its media type (the data URL's, else the one its
 * file name or URL tells, else {@link unknownType}), its file name, and an
 * image's detail as `options.openai.imageDetail`. Fails for a part whose data
 * or URL is not one (`at` names it).
 *
 * @since 0.2.0
 * @category conversions
 * @example
 * ```ts
 * import { Item } from "@agentloop/core"
 * import { EffectAiContent } from "@agentloop/core/effect-ai"
 * import { Result } from "effect"
 *
 * const part = EffectAiContent.toFilePart(Item.imageUrl("https://example.com/cat.png", { detail: "low" }), "here")
 * if (Result.isSuccess(part)) console.log(part.success.mediaType, String(part.success.data)) // image/png https://example.com/cat.png
 * ```
 */
export const toFilePart = (
  part: Item.MediaPart,
  at: string
): Result.Result<Prompt.FilePartEncoded, AiError.InvalidRequest> => {
  const read = ProviderContent.source(part)
  if (Result.isFailure(read)) return refuse(at, read.failure)
  const source = read.success
  let data: Uint8Array | URL
  if (source.type === "base64") {
    const bytes = Base64.decode(source.data)
    if (Result.isFailure(bytes)) return refuse(at, "its data URL's content is not base64")
    data = bytes.success
  } else {
    data = new URL(source.url)
  }
  return Result.succeed({
    type: "file",
    mediaType: source.mediaType ?? unknownType(part),
    data,
    ...(part.type === "input_file" && part.filename !== undefined ? { fileName: part.filename } : {}),
    ...(part.type === "input_image" && part.detail !== undefined
      ? { options: { openai: { imageDetail: part.detail } } }
      : {})
  })
}

const base64Text = /^[A-Za-z0-9+/]*={0,2}$/

/**
 * The data URL or URL of an `effect/ai` file part's data: bytes and base64
 * text (as `effect/ai` documents a string) become a data URL of the part's
 * media type; a `data:` string is taken as it is.
 */
const urlOf = (part: Prompt.FilePart, at: string): Result.Result<string, AiError.InvalidRequest> => {
  const data = part.data
  if (data instanceof URL) return Result.succeed(data.href)
  if (data instanceof Uint8Array) return Result.succeed(Item.dataUrl(data, part.mediaType))
  if (data.startsWith("data:")) return Result.succeed(data)
  return data.length % 4 === 0 && base64Text.test(data)
    ? Result.succeed(`data:${part.mediaType};base64,${data}`)
    : refuse(at, "its data is a string that is neither base64 nor a data: URL")
}

/**
 * An `effect/ai` file part as an agentloop part: an `input_image` for an
 * image media type (its `options.openai.imageDetail` as its detail), else an
 * `input_file` with its file name. Bytes and base64 text become a data URL,
 * a URL stays one. Fails for data that is neither bytes, base64, a data URL
 * nor a URL, and for a data URL that is not `data:<type>;base64,` (`at`
 * names the part).
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromFilePart = (
  part: Prompt.FilePart,
  at: string
): Result.Result<Item.MediaPart, AiError.InvalidRequest> => {
  const url = urlOf(part, at)
  if (Result.isFailure(url)) return Result.fail(url.failure)
  const inline = url.success.startsWith("data:")
  if (inline && part.mediaType.includes("*")) {
    return refuse(at, `inline bytes need their media type, not ${part.mediaType}`)
  }
  const media: Item.MediaPart = MediaType.isImage(part.mediaType)
    ? Item.imageUrl(url.success, {
      detail: Option.getOrUndefined(decodeOpenAiOptions(part.options["openai"]))?.imageDetail
    })
    : {
      type: "input_file",
      ...(inline ? { file_data: url.success } : { file_url: url.success }),
      ...(part.fileName === undefined ? {} : { filename: part.fileName })
    }
  // The same reading every provider makes before sending: a part this accepts, a provider can check.
  const read = ProviderContent.source(media)
  return Result.isFailure(read) ? refuse(at, read.failure) : Result.succeed(media)
}

/**
 * The text of parts where `effect/ai` has room for text only (`place` names
 * it: `an effect/ai system message`); fails for the first image or file,
 * `at` naming it.
 *
 * @since 0.2.0
 * @category conversions
 */
export const textOnly = (
  parts: ReadonlyArray<Item.ContentPart>,
  place: string,
  at: (position: number, part: Item.MediaPart) => string
): Result.Result<string, AiError.InvalidRequest> => {
  const text: Array<string> = []
  for (const [position, part] of parts.entries()) {
    if (Item.isMediaPart(part)) return refuse(at(position, part), `${place} is text only`)
    text.push(part.type === "refusal" ? part.refusal : part.text)
  }
  return Result.succeed(text.join(""))
}

/**
 * A tool's output and what it attached, as an `effect/ai` tool result's
 * `modelOutput` (what the model is shown in place of the result): the
 * output's text, then each attached part in order. Fails as
 * {@link toFilePart} does for a part it cannot carry.
 *
 * @since 0.2.0
 * @category conversions
 */
export const toModelOutput = (
  output: string,
  content: ReadonlyArray<Item.ToolContentPart>,
  at: (position: number, part: Item.MediaPart) => string
): Result.Result<Array<Prompt.TextPartEncoded | Prompt.FilePartEncoded>, AiError.InvalidRequest> => {
  const parts: Array<Prompt.TextPartEncoded | Prompt.FilePartEncoded> = [{ type: "text", text: output }]
  for (const [position, part] of content.entries()) {
    if (!Item.isMediaPart(part)) {
      parts.push({ type: "text", text: part.text })
      continue
    }
    const file = toFilePart(part, at(position, part))
    if (Result.isFailure(file)) return Result.fail(file.failure)
    parts.push(file.success)
  }
  return Result.succeed(parts)
}

/**
 * An `effect/ai` tool result's `modelOutput` as agentloop parts, in order:
 * text as `input_text`, files as images or files. Fails as
 * {@link fromFilePart} does for a part it cannot carry.
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromModelOutput = (
  parts: ReadonlyArray<Prompt.ToolModelOutputPart>,
  at: (position: number, part: Prompt.FilePart) => string
): Result.Result<Array<Item.ToolContentPart>, AiError.InvalidRequest> => {
  const content: Array<Item.ToolContentPart> = []
  for (const [position, part] of parts.entries()) {
    if (part.type === "text") {
      content.push({ type: "input_text", text: part.text })
      continue
    }
    const media = fromFilePart(part, at(position, part))
    if (Result.isFailure(media)) return Result.fail(media.failure)
    content.push(media.success)
  }
  return Result.succeed(content)
}

/**
 * An image or a file of a model's answer as an `effect/ai` response file
 * part, which holds bytes only: fails for one at a URL, or whose data is not
 * base64 (`at` names it).
 *
 * @since 0.2.0
 * @category conversions
 */
export const toResponseFile = (
  part: Item.MediaPart,
  at: string
): Result.Result<Response.FilePartEncoded, AiError.InvalidRequest> => {
  const read = ProviderContent.source(part)
  if (Result.isFailure(read)) return refuse(at, read.failure)
  const source = read.success
  return source.type === "base64"
    ? Result.succeed({ type: "file", mediaType: source.mediaType, data: source.data })
    : refuse(at, "an effect/ai response file part holds bytes, not a URL")
}

/**
 * An `effect/ai` response file part (an image or a file a model made) as an
 * agentloop part: an `input_image` for an image media type, else an
 * `input_file`, its bytes as a data URL.
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromResponseFile = (part: Response.FilePart): Item.MediaPart =>
  MediaType.isImage(part.mediaType)
    ? Item.imageFromBytes(part.data, part.mediaType)
    : Item.fileFromBytes(part.data, part.mediaType)
