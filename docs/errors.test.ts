/**
 * The error vocabulary across the packages: every tagged error class that any
 * package exports has a tag no other class has, so a `catchTag` or a `_tag`
 * read from a log names one class.
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
