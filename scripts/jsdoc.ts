/**
 * The public API as its declarations say it: reads the `.d.ts` files `tsc -b`
 * writes (each package's `build/src`, JSDoc kept) one top-level statement at a
 * time, and gives every public module (outside `internal/`, index files aside)
 * with its exports and their JSDoc. The `.d.ts` files tsc emits are regular
 * enough to read as text (TypeScript 7's compiler has no JavaScript API for a
 * documentation tool to use). Used by `docgen.ts` and `examples.ts`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { basename, dirname, join, relative, resolve, sep } from "node:path"

export const root = resolve(import.meta.dirname, "..")

/** One exported declaration of a module. */
export interface Export {
  readonly name: string
  readonly kind: "const" | "function" | "class" | "interface" | "type" | "namespace" | "enum"
  readonly doc: Doc | undefined
  readonly signature: string
}

/** A JSDoc comment: its text and its tags. */
export interface Doc {
  readonly text: string
  readonly since: string | undefined
  readonly category: string | undefined
  readonly examples: ReadonlyArray<string>
  readonly internal: boolean
}

/** One public module of a package. */
export interface Module {
  readonly package: string
  /** How an app imports it, e.g. `@agentloop/core/step/Step`. */
  readonly specifier: string
  readonly file: string
  readonly doc: Doc | undefined
  readonly exports: ReadonlyArray<Export>
}

const parseDoc = (comment: string): Doc => {
  const lines = comment
    .replace(/^\/\*\*/, "")
    .replace(/\*\/$/, "")
    .split("\n")
    .map((line) => line.replace(/^\s*\* ?/, ""))
  const text: Array<string> = []
  const examples: Array<string> = []
  let since: string | undefined
  let category: string | undefined
  let internal = false
  let example: Array<string> | undefined
  for (const line of lines) {
    const tag = /^@(\w+)\s*(.*)$/.exec(line.trim())
    if (tag !== null) {
      if (example !== undefined) examples.push(example.join("\n").trim())
      example = undefined
      const [, name, value] = tag
      if (name === "since") since = value!.trim()
      else if (name === "category") category = value!.trim()
      else if (name === "internal") internal = true
      else if (name === "example") example = value === "" ? [] : [value!]
      continue
    }
    if (example !== undefined) example.push(line)
    else text.push(line)
  }
  if (example !== undefined) examples.push(example.join("\n").trim())
  return { text: text.join("\n").trim(), since, category, examples, internal }
}

/** The top-level statements of a declaration file, each with the JSDoc right before it. */
const statements = (source: string): Array<{ readonly doc: string | undefined; readonly text: string }> => {
  const out: Array<{ doc: string | undefined; text: string }> = []
  let doc: string | undefined
  let i = 0
  while (i < source.length) {
    while (i < source.length && /\s/.test(source[i]!)) i++
    if (source.startsWith("/**", i)) {
      const end = source.indexOf("*/", i) + 2
      // Two comments in a row (the module's, then its first export's once tsc elided the imports between them):
      // the first stands alone.
      if (doc !== undefined) out.push({ doc, text: "" })
      doc = source.slice(i, end)
      i = end
      continue
    }
    if (source.startsWith("//", i)) {
      i = source.indexOf("\n", i) + 1 || source.length
      continue
    }
    if (source.startsWith("/*", i)) {
      i = source.indexOf("*/", i) + 2
      continue
    }
    // A statement ends at a `;` or a closing `}` at depth 0 (an interface, a class, a namespace).
    const start = i
    let depth = 0
    let quote: string | undefined
    for (; i < source.length; i++) {
      const c = source[i]!
      if (quote !== undefined) {
        if (c === "\\") i++
        else if (c === quote) quote = undefined
        continue
      }
      if (c === "\"" || c === "'" || c === "`") quote = c
      else if (c === "/" && source[i + 1] === "*") i = source.indexOf("*/", i + 2) + 1
      else if (c === "/" && source[i + 1] === "/") i = source.indexOf("\n", i)
      else if (c === "{" || c === "(" || c === "[" || c === "<") depth++
      else if ((c === "}" || c === ")" || c === "]" || c === ">") && source[i - 1] !== "=") depth--
      if (depth === 0 && c === ";") {
        i++
        break
      }
      if (depth === 0 && c === "}" && !/^\s*[|&;.,[]/.test(source.slice(i + 1, i + 4))) {
        i++
        break
      }
    }
    out.push({ doc, text: source.slice(start, i).trim() })
    doc = undefined
  }
  return out
}

const declaration =
  /^export\s+(?:declare\s+)?(?:abstract\s+)?(const|function|class|interface|type|namespace|enum)\s+([A-Za-z_$][\w$]*)/

/** Follows `export declare const x: typeof Alias.name` to the declaration it names, for its signature. */
const follow = (file: string, source: string, signature: string): string => {
  const alias = /^export declare const (\w+): typeof (\w+)\.(\w+);$/.exec(signature)
  if (alias === null) return signature
  const [, exported, namespace, name] = alias
  const from = new RegExp(`import (?:type )?\\* as ${namespace} from "([^"]+)"`).exec(source)
  if (from === null) return signature
  const target = resolve(dirname(file), from[1]!.replace(/\.ts$/, ".d.ts").replace(/\.js$/, ".d.ts"))
  if (!existsSync(target)) return signature
  const found = statements(readFileSync(target, "utf8")).find((statement) =>
    declaration.exec(statement.text)?.[2] === name
  )
  return found === undefined ? signature : found.text.replace(new RegExp(`\\b${name}\\b`), exported!)
}

const readModule = (pkg: string, specifier: string, file: string): Module => {
  const source = readFileSync(file, "utf8")
  const all = statements(source)
  // The module's JSDoc is read from its source: tsc drops it from the declarations with the import it sits on
  // when that import is elided (one only types use, or none at all).
  const sourceFile = join(dirname(file), basename(file, ".d.ts") + ".ts").replace(
    `${sep}build${sep}src${sep}`,
    `${sep}src${sep}`
  )
  const first = existsSync(sourceFile)
    ? /^\s*(\/\*\*[\s\S]*?\*\/)/.exec(readFileSync(sourceFile, "utf8"))?.[1]
    : undefined
  const moduleComment = first !== undefined && /@since/.test(first)
    ? first
    : all[0]?.doc !== undefined && /@since/.test(all[0].doc)
    ? all[0].doc
    : undefined
  const moduleDoc = moduleComment === undefined ? undefined : parseDoc(moduleComment)
  const exports: Array<Export> = []
  const seen = new Set<string>()
  for (const statement of all) {
    const match = declaration.exec(statement.text)
    if (match === null) continue
    const [, kind, name] = match
    if (seen.has(name!)) continue // an overload: the first signature carries the doc
    seen.add(name!)
    const doc = statement.doc === undefined || statement.doc === moduleComment
      ? undefined
      : parseDoc(statement.doc)
    if (doc?.internal === true) continue
    exports.push({ name: name!, kind: kind as Export["kind"], doc, signature: follow(file, source, statement.text) })
  }
  return { package: pkg, specifier, file, doc: moduleDoc, exports }
}

/** Every public module of every package: each `build/src` declaration file outside `internal/` and the index files. */
export const modules = (): Array<Module> => {
  const out: Array<Module> = []
  for (const name of readdirSync(join(root, "packages")).sort()) {
    const dir = join(root, "packages", name)
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name: string }
    const build = join(dir, "build", "src")
    if (!existsSync(build)) throw new Error(`${manifest.name} has no build: run \`npx tsc -b\` first`)
    const walk = (folder: string): void => {
      for (const entry of readdirSync(folder).sort()) {
        const path = join(folder, entry)
        if (statSync(path).isDirectory()) {
          if (entry !== "internal") walk(path)
        } else if (entry.endsWith(".d.ts") && entry !== "index.d.ts") {
          const subpath = relative(build, path).replace(/\.d\.ts$/, "")
          out.push(readModule(manifest.name, `${manifest.name}/${subpath}`, path))
        }
      }
    }
    walk(build)
  }
  return out
}

/** An `@example` body without its own ```ts fence, if it has one. */
export const stripFence = (example: string): string => example.replace(/^```\w*\n/, "").replace(/\n```$/, "").trim()
