/**
 * Images and files read from the file system, as content parts for a user
 * message or a tool's output.
 *
 * They read through effect's `FileSystem` service, so this module runs
 * wherever one is provided (`NodeFileSystem.layer` from
 * `@effect/platform-node`, a Bun or in-memory one) and the rest of the core
 * stays free of any runtime. Parts made from bytes or URLs need no service:
 * see `Item.imageFromBytes`, `Item.fileFromBytes`, `Item.imageUrl` and
 * `Item.fileUrl`.
 *
 * @since 0.2.0
 */
import * as ByteSize from "effect/ByteSize"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Schema from "effect/Schema"
import * as Item from "./Item.ts"
import * as MediaType from "./MediaType.ts"

/**
 * A file could not be made a part: it could not be read, is larger than
 * allowed, or its media type is unknown (or not an image, for an image).
 *
 * @since 0.2.0
 * @category errors
 */
export class AttachmentError extends Schema.TaggedError<AttachmentError>()("AttachmentError", {
  path: Schema.String,
  message: Schema.String
}) {}

/**
 * The largest file read by default: 100 MB, the most any provider takes
 * inline in one request (Gemini). A smaller provider limit is checked when
 * the part is sent.
 *
 * @since 0.2.0
 * @category limits
 */
export const defaultMaxBytes = 100_000_000

/**
 * How a file is read: its media type when its extension does not tell it (or
 * tells it wrong), and the most bytes to read.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  readonly mediaType?: string | undefined
  /** Default {@link defaultMaxBytes}; a larger file fails without being read. */
  readonly maxBytes?: number | undefined
}

const read = Effect.fnUntraced(function*(path: string, options: Options | undefined) {
  const mediaType = options?.mediaType ?? MediaType.fromName(path)
  if (mediaType === undefined) {
    return yield* new AttachmentError({
      path,
      message: "its extension does not tell its media type: pass mediaType"
    })
  }
  const fs = yield* FileSystem.FileSystem
  const failed = (error: { readonly message: string }) => new AttachmentError({ path, message: error.message })
  const max = options?.maxBytes ?? defaultMaxBytes
  const info = yield* Effect.mapError(fs.stat(path), failed)
  const size = ByteSize.toBigInt(info.size)
  if (size > BigInt(max)) {
    return yield* new AttachmentError({ path, message: `it is ${size} bytes, over the limit of ${max}` })
  }
  const bytes = yield* Effect.mapError(fs.readFile(path), failed)
  // The file may have grown between the stat and the read.
  if (bytes.length > max) {
    return yield* new AttachmentError({ path, message: `it is ${bytes.length} bytes, over the limit of ${max}` })
  }
  return { bytes, mediaType }
})

/**
 * An image read from `path`, sent inline as a data URL. Its media type comes
 * from its extension (`.png`, `.jpg`, `.webp`, `.gif`, …) unless given.
 *
 * @since 0.2.0
 * @category constructors
 * @example
 * ```ts
 * import { Attachment, Item } from "@agentloop/core"
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { writeFileSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * const path = join(tmpdir(), "screenshot.png")
 * writeFileSync(path, new Uint8Array([137, 80, 78, 71]))
 * const message = Effect.gen(function*() {
 *   const screenshot = yield* Attachment.image(path, { detail: "low" })
 *   return Item.userMessage([{ type: "input_text", text: "What is on screen?" }, screenshot])
 * })
 * Effect.runPromise(message.pipe(Effect.provide(NodeFileSystem.layer))).then((m) => console.log(m.content[1]))
 * ```
 */
export const image = Effect.fn("Attachment.image")(function*(
  path: string,
  options?: Options & { readonly detail?: Item.ImageDetail | undefined }
) {
  const { bytes, mediaType } = yield* read(path, options)
  if (!MediaType.isImage(mediaType)) {
    return yield* new AttachmentError({ path, message: `${mediaType} is not an image type: make it a file` })
  }
  return Item.imageFromBytes(bytes, mediaType, { detail: options?.detail })
})

/**
 * A file read from `path` (a PDF, a text document, …), sent inline as a data
 * URL and named by its base name unless `filename` is given. Its media type
 * comes from its extension unless given.
 *
 * @since 0.2.0
 * @category constructors
 */
export const file = Effect.fn("Attachment.file")(function*(
  path: string,
  options?: Options & { readonly filename?: string | undefined }
) {
  const { bytes, mediaType } = yield* read(path, options)
  const filename = options?.filename ?? path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")) + 1)
  return Item.fileFromBytes(bytes, mediaType, { filename })
})
