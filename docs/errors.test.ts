/**
 * The error vocabulary across the packages: every tagged error class that any
 * package exports has a tag no other class has, so a `catchTag` or a `_tag`
 * read from a log names one class; and `errors.md` lists every one of them
 * once, with the retryability and category its class says.
 */
import * as Anthropic from "@agentloop/anthropic"
import * as AnthropicTesting from "@agentloop/anthropic/testing"
import * as ChatCompletions from "@agentloop/chat-completions"
import * as ChatCompletionsTesting from "@agentloop/chat-completions/testing"
import * as Core from "@agentloop/core"
import * as Durable from "@agentloop/durable"
import * as Gemini from "@agentloop/gemini"
import * as GeminiTesting from "@agentloop/gemini/testing"
import * as Mcp from "@agentloop/mcp"
import * as Responses from "@agentloop/responses"
import * as ResponsesTesting from "@agentloop/responses/testing"
import * as Testing from "@agentloop/testing"
import * as Schema from "effect/Schema"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const entries: Record<string, Record<string, unknown>> = {
  "@agentloop/anthropic": Anthropic,
  "@agentloop/anthropic/testing": AnthropicTesting,
  "@agentloop/chat-completions": ChatCompletions,
  "@agentloop/chat-completions/testing": ChatCompletionsTesting,
  "@agentloop/core": Core,
  "@agentloop/durable": Durable,
  "@agentloop/gemini": Gemini,
  "@agentloop/gemini/testing": GeminiTesting,
  "@agentloop/mcp": Mcp,
  "@agentloop/responses": Responses,
  "@agentloop/responses/testing": ResponsesTesting,
  "@agentloop/testing": Testing
}

/** An exported error class, and the first export path it was found at. */
interface ErrorClass {
  readonly tag: string
  readonly path: string
  readonly klass: Function
}

/** The tag of a `Schema.TaggedError` class, or `undefined` for anything else. */
const tagOf = (value: unknown): string | undefined => {
  if (typeof value !== "function" || !Schema.isSchema(value) || !(value.prototype instanceof Error)) return undefined
  const fields: unknown = (value as { readonly fields?: unknown }).fields
  if (typeof fields !== "object" || fields === null || !("_tag" in fields)) return undefined
  const literal: unknown = (fields._tag as { readonly ast?: { readonly literal?: unknown } }).ast?.literal
  return typeof literal === "string" ? literal : undefined
}

/** Every tagged error class the packages export, each once, whichever namespaces re-export it. */
const errorClasses = (): ReadonlyArray<ErrorClass> => {
  const found = new Map<Function, ErrorClass>()
  for (const [entry, namespaces] of Object.entries(entries)) {
    for (const [name, namespace] of Object.entries(namespaces)) {
      if (typeof namespace !== "object" || namespace === null) continue
      for (const [key, value] of Object.entries(namespace)) {
        const tag = tagOf(value)
        if (tag !== undefined && !found.has(value as Function)) {
          found.set(value as Function, { tag, path: `${entry} ${name}.${key}`, klass: value as Function })
        }
      }
    }
  }
  return [...found.values()]
}

describe("error tags", () => {
  const classes = errorClasses()

  it("finds the error classes of every layer", () => {
    const tags = new Set(classes.map((c) => c.tag))
    for (const tag of ["AuthFailed", "MaxTurns", "StepTimeout", "CheckpointError", "RunParked", "McpToolError"]) {
      expect(tags).toContain(tag)
    }
  })

  it("names one class each, across the packages", () => {
    const byTag = new Map<string, Array<string>>()
    for (const c of classes) byTag.set(c.tag, [...(byTag.get(c.tag) ?? []), c.path])
    const shared = [...byTag].filter(([, paths]) => paths.length > 1)
    expect(shared).toStrictEqual([])
  })
})

/** The class an export path such as `AiError.Timeout` names, in whichever entry exports it. */
const resolve = (path: string): Function | undefined => {
  const [namespace, name] = path.split(".")
  for (const namespaces of Object.values(entries)) {
    const found: unknown = (namespaces[namespace!] as Record<string, unknown> | undefined)?.[name!]
    if (found !== undefined && tagOf(found) !== undefined) return found as Function
  }
  return undefined
}

/** The rows of every Markdown table in `text`, as cells, by the `## ` section they are in, header row first. */
const tables = (text: string): Map<string, Array<Array<string>>> => {
  const bySection = new Map<string, Array<Array<string>>>()
  let section = ""
  for (const line of text.split("\n")) {
    if (line.startsWith("## ")) section = line.slice(3)
    if (!line.startsWith("|") || /^\|[\s|-]+\|$/.test(line)) continue
    const cells = line.slice(1, -1).split("|").map((cell) => cell.trim())
    bySection.set(section, [...(bySection.get(section) ?? []), cells])
  }
  return bySection
}

const yesNo = (value: unknown): string => value === true ? "yes" : value === false ? "no" : ""

// The properties are getters that read no field: a class's prototype answers for its instances.
const property = (klass: Function, key: string): unknown => (klass.prototype as Record<string, unknown>)[key]

describe("docs/errors.md", () => {
  const docs = dirname(fileURLToPath(import.meta.url))
  const sections = tables(readFileSync(join(docs, "errors.md"), "utf8"))
  const rows = [...sections].flatMap(([section, [header, ...body]]) =>
    body.map((cells) => ({ section, header: header!, cells, path: cells[0]!.replaceAll("`", "") }))
  )

  it("names every row's error by the path that exports it, and its tag", () => {
    for (const row of rows) {
      const klass = resolve(row.path)
      expect(klass, `${row.section}: ${row.path}`).toBeDefined()
      expect(tagOf(klass), row.path).toBe(row.path.split(".")[1])
    }
  })

  it("lists every error class once", () => {
    const listed = rows.map((row) => resolve(row.path))
    expect(new Set(listed).size).toBe(listed.length)
    const missing = errorClasses().filter((c) => !listed.includes(c.klass)).map((c) => c.path)
    expect(missing).toStrictEqual([])
  })

  it("says what each class says of its retryability, its provider and its category", () => {
    let checked = 0
    for (const row of rows) {
      const klass = resolve(row.path)!
      row.header.forEach((column, index) => {
        const cell = row.cells[index]!
        if (column === "isRetryable" || column === "isProviderFailure") {
          expect(cell, `${row.path} ${column}`).toBe(yesNo(property(klass, column)))
          checked++
        }
        if (column === "category") {
          expect(cell, `${row.path} category`).toBe(property(klass, "category") ?? "")
          checked++
        }
      })
    }
    expect(checked).toBeGreaterThan(30)
  })

  it("agrees with the categories of terminations.md", () => {
    const table = [...tables(readFileSync(join(docs, "terminations.md"), "utf8")).values()]
      .flat()
      .filter((cells) => cells.length === 4)
    const header = table.find((cells) => cells[0] === "tag" && cells[1] === "category")
    const body = table.slice(table.indexOf(header!) + 1).filter((cells) => cells[0]!.startsWith("`"))
    const categories = body.map((cells) => [cells[0]!.replaceAll("`", ""), cells[1]])
    expect(categories).toStrictEqual(
      Core.Termination.all.map((tag) => [tag, Core.Termination.category(tag)])
    )
  })
})
