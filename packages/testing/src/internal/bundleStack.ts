/**
 * Stack traces of a bundled child, pointed back at its sources by the parent.
 * A child started with Node's `--enable-source-maps` parses its bundle's map
 * as it starts (a fifth of a second of CPU for agentloop's packages, in every
 * child, even one that never fails); the parent reads the map instead, once,
 * and only when what the child wrote names a position in the bundle.
 *
 * @internal
 */
import * as Fs from "node:fs"
import * as Module from "node:module"
import * as Path from "node:path"
import * as Url from "node:url"

/** Escapes `text` for a regular expression. */
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * A function that rewrites every `line:column` position in `bundle` (a path)
 * that text names, as a path or a `file:` URL, to the position in the source
 * its map says it came from, as a `file:` URL; other text is left as it is.
 * The map is read on the first text that names the bundle; without a map, the
 * text is left as it is.
 */
export const sourcePositions = (bundle: string): (text: string) => string => {
  const url = Url.pathToFileURL(bundle).href
  const position = new RegExp(`(?:${escape(url)}|${escape(bundle)}):(\\d+):(\\d+)`, "g")
  let map: Module.SourceMap | null | undefined
  const origin = (whole: string, line: string, column: string): string => {
    map ??= readMap(`${bundle}.map`)
    const found = map?.findOrigin(Number(line), Number(column))
    if (found === undefined || !("fileName" in found)) return whole
    const source = Url.pathToFileURL(Path.resolve(Path.dirname(bundle), found.fileName)).href
    return `${source}:${found.lineNumber}:${found.columnNumber}`
  }
  return (text) => text.includes(url) || text.includes(bundle) ? text.replace(position, origin) : text
}

/** The source map in `file`, or `null` when there is none to read. */
const readMap = (file: string): Module.SourceMap | null => {
  try {
    return new Module.SourceMap(JSON.parse(Fs.readFileSync(file, "utf8")))
  } catch {
    return null
  }
}
