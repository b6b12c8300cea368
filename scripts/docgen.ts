/**
 * The API reference: one Markdown page per public module under `docs/api/`,
 * its exports grouped by `@category`, each with its summary, signature,
 * `@since` and examples, from the declarations `tsc -b` writes (see
 * `jsdoc.ts`). `npm run docs` runs it.
 *
 * `--check` writes nothing: it fails when an export lacks JSDoc, `@since` or
 * `@category`, or a module lacks an `@example`, and prints the counts.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { type Export, type Module, modules, root, stripFence } from "./jsdoc.ts"

const check = process.argv.includes("--check")

const page = (module: Module): string => {
  const byCategory = new Map<string, Array<Export>>()
  for (const entry of module.exports) {
    const category = entry.doc?.category ?? "uncategorized"
    byCategory.set(category, [...(byCategory.get(category) ?? []), entry])
  }
  const lines = [`# ${module.specifier}`, ""]
  if (module.doc !== undefined) lines.push(module.doc.text, "", `Since ${module.doc.since}`, "")
  for (const example of module.doc?.examples ?? []) lines.push("```typescript", stripFence(example), "```", "")
  for (const [category, entries] of [...byCategory].sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`## ${category}`, "")
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      lines.push(`### ${entry.name}`, "")
      if (entry.doc !== undefined && entry.doc.text !== "") lines.push(entry.doc.text, "")
      lines.push("```typescript", entry.signature.replace(/^export\s+(declare\s+)?/, ""), "```", "")
      for (const example of entry.doc?.examples ?? []) {
        lines.push("**Example**", "", "```typescript", stripFence(example), "```", "")
      }
      if (entry.doc?.since !== undefined) lines.push(`Since ${entry.doc.since}`, "")
    }
  }
  return lines.join("\n")
}

const all = modules()
const exports = all.flatMap((module) => module.exports.map((entry) => ({ module, entry })))
const missing = {
  doc: exports.filter(({ entry }) => entry.doc === undefined || entry.doc.text === ""),
  since: exports.filter(({ entry }) => entry.doc?.since === undefined),
  category: exports.filter(({ entry }) => entry.doc?.category === undefined)
}
const moduleExamples = all.filter((module) =>
  (module.doc?.examples.length ?? 0) + module.exports.reduce((n, entry) => n + (entry.doc?.examples.length ?? 0), 0) >
    0
)
const examples = all.reduce(
  (n, module) =>
    n + (module.doc?.examples.length ?? 0) +
    module.exports.reduce((m, entry) => m + (entry.doc?.examples.length ?? 0), 0),
  0
)
const summary = [
  `${all.length} modules, ${exports.length} exports:`,
  `${exports.length - missing.doc.length} documented,`,
  `${exports.length - missing.since.length} with @since,`,
  `${exports.length - missing.category.length} with @category;`,
  `${examples} examples in ${moduleExamples.length} modules`
].join(" ")

if (check) {
  console.log(summary)
  const problems = [
    ...missing.doc.map(({ entry, module }) => `${module.specifier}: ${entry.name} has no JSDoc`),
    ...missing.since.map(({ entry, module }) => `${module.specifier}: ${entry.name} has no @since`),
    ...missing.category.map(({ entry, module }) => `${module.specifier}: ${entry.name} has no @category`),
    ...all.filter((module) => module.doc === undefined).map((module) =>
      `${module.specifier}: no module JSDoc with @since`
    ),
    ...all.filter((module) => !moduleExamples.includes(module)).map((module) => `${module.specifier}: no @example`)
  ]
  for (const problem of problems) console.error(problem)
  if (problems.length > 0) process.exitCode = 1
} else {
  const out = join(root, "docs", "api")
  rmSync(out, { recursive: true, force: true })
  for (const module of all) {
    const path = join(out, `${module.specifier.replace(/^@agentloop\//, "")}.md`)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, page(module))
  }
  const index = ["# API reference", "", "Generated from the sources' JSDoc by `npm run docs`.", ""]
  let current = ""
  for (const module of all) {
    if (module.package !== current) index.push("", `## ${(current = module.package)}`, "")
    const summaryLine = module.doc?.text.split("\n\n")[0]?.replace(/\n/g, " ") ?? ""
    index.push(`- [${module.specifier}](${module.specifier.replace(/^@agentloop\//, "")}.md): ${summaryLine}`)
  }
  writeFileSync(join(out, "README.md"), index.join("\n") + "\n")
  console.log(`docs/api: ${summary}`)
}
