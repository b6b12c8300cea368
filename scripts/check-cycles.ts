/**
 * Fails when the workspace's sources import each other in a circle, type-only
 * imports included: `npm run check` runs it. Every `import`/`export … from` of
 * a relative path or of a workspace package (resolved through its exports map's
 * `@agentloop/source` condition) is an edge; each strongly connected group of
 * more than one module (or a module importing itself) is printed.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const root = resolve(import.meta.dirname, "..")
const workspaces = ["packages", "examples"].flatMap((folder) =>
  readdirSync(join(root, folder)).map((name) => join(root, folder, name))
).concat([join(root, "bench")]).filter((dir) => existsSync(join(dir, "package.json")))

type Exports = Record<string, string | null | Record<string, string>>
const packages = new Map<string, { readonly dir: string; readonly exports: Exports }>()
for (const dir of workspaces) {
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    name: string
    exports?: Exports
  }
  packages.set(manifest.name, { dir, exports: manifest.exports ?? {} })
}

const sourceOf = (target: string | null | Record<string, string> | undefined): string | undefined =>
  target === null || target === undefined
    ? undefined
    : typeof target === "string"
    ? target
    : target["@agentloop/source"]

/** A workspace package's subpath, resolved as Node would: exact keys first, then `*` patterns. */
const resolvePackage = (specifier: string): string | undefined => {
  const name = specifier.split("/").slice(0, 2).join("/")
  const entry = packages.get(name)
  if (entry === undefined) return undefined
  const subpath = "." + specifier.slice(name.length)
  const exact = sourceOf(entry.exports[subpath])
  if (exact !== undefined) return join(entry.dir, exact)
  for (const [key, target] of Object.entries(entry.exports)) {
    const star = key.indexOf("*")
    if (star < 0) continue
    const [prefix, suffix] = [key.slice(0, star), key.slice(star + 1)]
    if (!subpath.startsWith(prefix) || !subpath.endsWith(suffix)) continue
    const source = sourceOf(target)
    if (source === undefined) return undefined
    return join(entry.dir, source.replace("*", subpath.slice(prefix.length, subpath.length - suffix.length)))
  }
  return undefined
}

const sources = (dir: string): Array<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (name === "node_modules" || name === "build") return []
    if (statSync(path).isDirectory()) return sources(path)
    return /\.tsx?$/.test(name) ? [path] : []
  })

const specifiers = /(?:^|\n)\s*(?:import|export)\b[^;'"]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)/g

const graph = new Map<string, Array<string>>()
for (const dir of workspaces) {
  for (
    const file of sources(join(dir, "src")).concat(existsSync(join(dir, "test")) ? sources(join(dir, "test")) : [])
  ) {
    const text = readFileSync(file, "utf8")
    const edges: Array<string> = []
    for (const match of text.matchAll(specifiers)) {
      const specifier = match[1] ?? match[2] ?? ""
      const target = specifier.startsWith(".")
        ? resolve(dirname(file), specifier)
        : specifier.startsWith("@agentloop/")
        ? resolvePackage(specifier)
        : undefined
      if (target !== undefined && existsSync(target)) edges.push(target)
    }
    graph.set(file, edges)
  }
}

// Tarjan's strongly connected components, iteratively (no recursion on deep graphs).
const index = new Map<string, number>()
const low = new Map<string, number>()
const onStack = new Set<string>()
const stack: Array<string> = []
const cycles: Array<Array<string>> = []
let counter = 0
for (const start of graph.keys()) {
  if (index.has(start)) continue
  const work: Array<[string, number]> = [[start, 0]]
  while (work.length > 0) {
    const frame = work[work.length - 1]!
    const [node, edge] = frame
    if (edge === 0) {
      index.set(node, counter)
      low.set(node, counter++)
      stack.push(node)
      onStack.add(node)
    }
    const targets = graph.get(node) ?? []
    if (edge < targets.length) {
      frame[1]++
      const next = targets[edge]!
      if (!index.has(next)) work.push([next, 0])
      else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!))
      continue
    }
    work.pop()
    const parent = work[work.length - 1]
    if (parent !== undefined) low.set(parent[0], Math.min(low.get(parent[0])!, low.get(node)!))
    if (low.get(node) === index.get(node)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== node)
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) cycles.push(component)
    }
  }
}

if (cycles.length === 0) {
  console.log(`No import cycles among ${graph.size} modules.`)
} else {
  for (const cycle of cycles) {
    console.error(`Import cycle of ${cycle.length} modules:`)
    for (const file of cycle.toSorted()) {
      const inCycle = (graph.get(file) ?? []).filter((target) => cycle.includes(target))
      console.error(`  ${relative(root, file)} -> ${inCycle.map((target) => relative(root, target)).join(", ")}`)
    }
  }
  process.exitCode = 1
}
