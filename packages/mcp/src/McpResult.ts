/**
 * An MCP tool result as what a model is shown: its text, and its images.
 *
 * Text blocks are the text; an embedded text resource is its text; a link to
 * a resource is its title and URI. An image of a type models take (PNG, JPEG,
 * GIF, WebP) is attached as an image part, and the text says where it was;
 * any other image, an audio clip or a binary resource becomes a short
 * placeholder naming its type and size. A result with no content but
 * `structuredContent` is that JSON.
 *
 * The other way, for a served tool ({@link blocks}), what an agentloop tool
 * attached to its output becomes MCP content blocks.
 *
 * @since 0.2.0
 */
import { Item, ProviderContent } from "@agentloop/core"
import type { McpSchema } from "effect/ai"
import { Base64 } from "effect/encoding"
import * as EffectResult from "effect/Result"

/**
 * An MCP tool result's content, and its `structuredContent`.
 *
 * @since 0.2.0
 * @category models
 */
export interface Result {
  readonly content: ReadonlyArray<McpSchema.ContentBlock>
  readonly structuredContent?: unknown
}

/**
 * What a model is shown of a result: the text it reads, and the images
 * attached after it.
 *
 * @since 0.2.0
 * @category models
 */
export interface Shown {
  readonly text: string
  readonly content: ReadonlyArray<Item.ToolContentPart>
}

/**
 * The image types attached as images: those every provider that takes images
 * takes (Responses, Chat Completions, Anthropic and Gemini alike).
 *
 * @since 0.2.0
 * @category constants
 */
export const imageTypes: ReadonlyArray<string> = ["image/png", "image/jpeg", "image/gif", "image/webp"]

/**
 * The text of a result's content, blocks separated by a newline, and, with
 * `images: "attach"` (the default), its images of {@link imageTypes} as
 * image parts, each marked in the text where it was (`[image 1 attached:
 * image/png, 1067 bytes]`). With `images: "describe"` every image is a
 * placeholder in the text and nothing is attached.
 *
 * @example
 * ```ts
 * import { McpResult } from "@agentloop/mcp"
 *
 * const shown = McpResult.shown({
 *   content: [
 *     { type: "text", text: "The logo:" },
 *     { type: "image", mimeType: "image/png", data: new Uint8Array([137, 80, 78, 71]) }
 *   ]
 * })
 * console.log(shown.text) // The logo:\n[image 1 attached: image/png, 4 bytes]
 * console.log(shown.content) // [ { type: 'input_image', image_url: 'data:image/png;base64,iVBORw==' } ]
 * ```
 *
 * @since 0.2.0
 * @category conversions
 */
export const shown = (result: Result, options: { readonly images?: "attach" | "describe" | undefined } = {}): Shown => {
  if (result.content.length === 0 && result.structuredContent !== undefined) {
    return { text: JSON.stringify(result.structuredContent), content: [] }
  }
  const attach = options.images !== "describe"
  const content: Array<Item.ToolContentPart> = []
  const lines = result.content.map((block) => {
    if (block.type !== "image" || !attach || !imageTypes.includes(block.mimeType.toLowerCase())) return blockText(block)
    content.push(Item.imageFromBytes(block.data, block.mimeType.toLowerCase()))
    return `[image ${content.length} attached: ${block.mimeType}, ${block.data.length} bytes]`
  })
  return { text: lines.join("\n"), content }
}

/**
 * The text of a result's content, blocks separated by a newline, every image a
 * placeholder (see {@link shown}).
 *
 * @example
 * ```ts
 * import { McpResult } from "@agentloop/mcp"
 *
 * console.log(McpResult.text({ content: [{ type: "text", text: "4" }] })) // 4
 * ```
 *
 * @since 0.2.0
 * @category conversions
 */
export const text = (result: Result): string => shown(result, { images: "describe" }).text

const blockText = (block: McpSchema.ContentBlock): string => {
  switch (block.type) {
    case "text":
      return block.text
    case "image":
    case "audio":
      return `[${block.type}: ${block.mimeType}, ${block.data.length} bytes]`
    case "resource_link":
      return `${block.title ?? block.name}: ${block.uri}${
        block.description === undefined ? "" : `\n${block.description}`
      }`
    case "resource": {
      const resource = block.resource
      if ("text" in resource) return resource.text
      return `[resource ${resource.uri}: ${resource.mimeType ?? "binary"}, ${resource.blob.length} bytes]`
    }
  }
}

const lastSegment = (url: string): string => {
  const path = new URL(url).pathname
  const segment = path.slice(path.lastIndexOf("/") + 1)
  // A segment that is not valid percent-encoding (a link found on a hostile page) is kept as it is.
  return decoded(segment) || url
}

const decoded = (segment: string): string => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

const notSent = (part: Item.MediaPart, position: number, why: string): McpSchema.ContentBlock => ({
  type: "text",
  text: `[${part.type} ${position + 1} not sent: ${why}]`
})

/** An image's or a file's MCP block: its bytes as an image or an embedded resource, its URL as a link. */
const mediaBlock = (part: Item.MediaPart, position: number): McpSchema.ContentBlock => {
  const read = ProviderContent.source(part)
  if (EffectResult.isFailure(read)) return notSent(part, position, read.failure)
  const source = read.success
  const name = part.type === "input_file" ? part.filename : undefined
  if (source.type === "url") {
    return {
      type: "resource_link",
      uri: source.url,
      name: name ?? lastSegment(source.url),
      ...(source.mediaType === undefined ? {} : { mimeType: source.mediaType })
    }
  }
  const bytes = Base64.decode(source.data)
  if (EffectResult.isFailure(bytes)) return notSent(part, position, "its data is not base64")
  return part.type === "input_image"
    ? { type: "image", data: bytes.success, mimeType: source.mediaType }
    : {
      type: "resource",
      resource: { uri: name ?? `attachment-${position + 1}`, mimeType: source.mediaType, blob: bytes.success }
    }
}

/**
 * What an agentloop tool attached to its output (`Item.FunctionCallOutput`'s
 * `content`), as the MCP content blocks of a served tool's result: text as
 * text, an image's bytes as an image, a file's bytes as an embedded resource
 * (its URI its file name), and an image or a file at a URL as a link to it. A
 * part whose data is not what it says is a text block saying so.
 *
 * @example
 * ```ts
 * import { Item } from "@agentloop/core"
 * import { McpResult } from "@agentloop/mcp"
 *
 * const blocks = McpResult.blocks([
 *   { type: "input_text", text: "The page:" },
 *   Item.imageFromBytes(new Uint8Array([137, 80, 78, 71]), "image/png"),
 *   Item.fileUrl("https://example.com/spec.pdf")
 * ])
 * console.log(blocks.map((block) => block.type)) // [ 'text', 'image', 'resource_link' ]
 * ```
 *
 * @since 0.2.0
 * @category conversions
 */
export const blocks = (content: ReadonlyArray<Item.ToolContentPart>): Array<McpSchema.ContentBlock> =>
  content.map((part, position) =>
    Item.isMediaPart(part) ? mediaBlock(part, position) : { type: "text", text: part.text }
  )
