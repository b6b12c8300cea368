/**
 * Media types (MIME types) of the images and files a model is given, told
 * from a file name when nothing else says.
 *
 * @since 0.2.0
 */

const byExtension: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  heic: "image/heic",
  heif: "image/heif",
  pdf: "application/pdf",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  tsv: "text/tab-separated-values",
  html: "text/html",
  htm: "text/html",
  css: "text/css",
  xml: "text/xml",
  json: "application/json",
  rtf: "application/rtf",
  doc: "application/msword",
  docx: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  xls: "application/vnd.ms-excel",
  xlsx: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ppt: "application/vnd.ms-powerpoint",
  pptx: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  odt: "application/vnd.oasis.opendocument.text",
  mp3: "audio/mp3",
  wav: "audio/wav",
  flac: "audio/flac",
  ogg: "audio/ogg",
  aac: "audio/aac",
  mp4: "video/mp4",
  mpeg: "video/mpeg",
  mov: "video/mov",
  webm: "video/webm"
}

/**
 * The media type a file name's extension stands for (`report.PDF` →
 * `application/pdf`), or `undefined` for an extension this table does not
 * know. A URL's query and fragment are not part of its name: pass its path.
 *
 * @since 0.2.0
 * @category media types
 * @example
 * ```ts
 * import { MediaType } from "@agentloop/core"
 *
 * console.log(MediaType.fromName("screenshots/login.png")) // image/png
 * console.log(MediaType.fromName("notes")) // undefined
 * ```
 */
export const fromName = (name: string): string | undefined => {
  const base = name.slice(Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\")) + 1)
  const dot = base.lastIndexOf(".")
  return dot <= 0 ? undefined : byExtension[base.slice(dot + 1).toLowerCase()]
}

/**
 * Whether a media type is an image type (`image/…`).
 *
 * @since 0.2.0
 * @category media types
 */
export const isImage = (mediaType: string): boolean => mediaType.startsWith("image/")
