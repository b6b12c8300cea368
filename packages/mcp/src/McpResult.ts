/**
 * An MCP tool result as the text a model reads.
 *
 * Text blocks are the text; an embedded text resource is its text; a link to
 * a resource is its title and URI. An image, audio clip or binary resource
 * becomes a short placeholder naming its type and size, until items carry
 * images. A result with no content but `structuredContent` is that JSON.
 *
 * @since 0.2.0
 */
import type { McpSchema } from "effect/ai"

/**
 * The text of a result's content, blocks separated by a newline.
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
export const text = (result: {
  readonly content: ReadonlyArray<McpSchema.ContentBlock>
  readonly structuredContent?: unknown
}): string =>
  result.content.length === 0 && result.structuredContent !== undefined
    ? JSON.stringify(result.structuredContent)
    : result.content.map(blockText).join("\n")

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
