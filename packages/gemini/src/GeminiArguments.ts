/**
 * Function-call arguments streamed by Vertex AI (`streamFunctionCallArguments`)
 * as JSON text: each `partialArgs` piece (a value at a JSON path) becomes the
 * next piece of the arguments' JSON, so the pieces can go out as
 * `function_call_arguments_delta`s and concatenate to the whole arguments.
 *
 * The model writes its arguments in order, and the pieces follow that order:
 * an object's keys once each, an array's elements from index 0 up, a string
 * continued by the pieces after it. A piece out of that order cannot be
 * streamed and is reported as an error; a path or an index from the wire is
 * never used to size anything.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import type * as GeminiEvent from "./GeminiEvent.ts"

type Segment = string | number

/**
 * Parses an RFC 9535 normalized path (`$`, `.name`, `['name']`, `[0]`) into its segments.
 *
 * @example
 * ```ts
 * import { GeminiArguments } from "@agentloop/gemini"
 * import { Result } from "effect"
 *
 * // Gemini streams a call's arguments as values at JSON paths.
 * const path = GeminiArguments.parsePath("$.items[2].name")
 * if (Result.isSuccess(path)) console.log(path.success) // [ 'items', 2, 'name' ]
 * ```
 *
 * @since 0.1.0
 * @category parsing
 */
export const parsePath = (path: string): Result.Result<ReadonlyArray<Segment>, string> => {
  if (path.charCodeAt(0) !== 36 /* $ */) return Result.fail(`the path ${JSON.stringify(path)} does not start with $`)
  const segments: Array<Segment> = []
  let i = 1
  while (i < path.length) {
    const char = path[i]
    if (char === ".") {
      let end = i + 1
      while (end < path.length && path[end] !== "." && path[end] !== "[") end++
      if (end === i + 1) return Result.fail(`the path ${JSON.stringify(path)} has an empty name`)
      segments.push(path.slice(i + 1, end))
      i = end
    } else if (char === "[" && (path[i + 1] === "'" || path[i + 1] === "\"")) {
      const quote = path[i + 1]
      let name = ""
      let end = i + 2
      while (end < path.length && path[end] !== quote) {
        if (path[end] === "\\") {
          const escaped = path[end + 1]
          if (escaped === "u") {
            name += String.fromCharCode(parseInt(path.slice(end + 2, end + 6), 16))
            end += 6
            continue
          }
          name += ({ b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" } as Record<string, string>)[escaped ?? ""] ??
            escaped ?? ""
          end += 2
        } else {
          name += path[end]
          end++
        }
      }
      if (path[end + 1] !== "]") return Result.fail(`the path ${JSON.stringify(path)} has an unclosed name`)
      segments.push(name)
      i = end + 2
    } else if (char === "[") {
      const end = path.indexOf("]", i)
      const digits = end < 0 ? "" : path.slice(i + 1, end)
      if (!/^(0|[1-9][0-9]{0,8})$/.test(digits)) return Result.fail(`the path ${JSON.stringify(path)} has a bad index`)
      segments.push(Number(digits))
      i = end + 1
    } else {
      return Result.fail(`the path ${JSON.stringify(path)} is not a normalized JSON path`)
    }
  }
  return Result.succeed(segments)
}

interface Container {
  /** The segment this container is reached by from its parent (none for the root). */
  readonly segment: Segment | undefined
  readonly array: boolean
  /** Members written so far. */
  count: number
  /** The keys written, for an object. */
  readonly keys: Set<string>
}

const scalar = (arg: GeminiEvent.PartialArg): string | undefined =>
  arg.numberValue !== undefined
    ? (Number.isFinite(arg.numberValue) ? JSON.stringify(arg.numberValue) : "null")
    : arg.boolValue !== undefined
    ? JSON.stringify(arg.boolValue)
    : "nullValue" in arg
    ? "null"
    : undefined

/**
 * The JSON text of one call's streamed arguments; see {@link make}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Writer {
  /** Adds one piece; returns the JSON text it adds, or why the piece cannot be streamed. */
  readonly push: (arg: GeminiEvent.PartialArg) => Result.Result<string, string>
  /** Closes what is open; returns the text that ends the arguments. */
  readonly end: () => string
}

/**
 * A writer of one call's arguments, a JSON object.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): Writer => {
  const stack: Array<Container> = [{ segment: undefined, array: false, count: 0, keys: new Set() }]
  let started = false
  // The path of a string still being written (its closing quote not yet out).
  let openString: string | undefined

  const member = (container: Container, segment: Segment): Result.Result<string, string> => {
    if (container.array !== (typeof segment === "number")) {
      return Result.fail(`${JSON.stringify(segment)} does not fit an ${container.array ? "array" : "object"}`)
    }
    if (typeof segment === "number") {
      if (segment !== container.count) return Result.fail(`element ${segment} comes after ${container.count} elements`)
    } else {
      if (container.keys.has(segment)) return Result.fail(`key ${JSON.stringify(segment)} comes twice`)
      container.keys.add(segment)
    }
    const separator = container.count > 0 ? "," : ""
    container.count++
    return Result.succeed(typeof segment === "number" ? separator : `${separator}${JSON.stringify(segment)}:`)
  }

  const push = (arg: GeminiEvent.PartialArg): Result.Result<string, string> => {
    let out = started ? "" : "{"
    started = true
    if (openString !== undefined) {
      if (openString === arg.jsonPath && arg.stringValue !== undefined) {
        out += JSON.stringify(arg.stringValue).slice(1, -1)
        if (arg.willContinue !== true) {
          out += "\""
          openString = undefined
        }
        return Result.succeed(out)
      }
      out += "\""
      openString = undefined
    }
    const path = parsePath(arg.jsonPath)
    if (Result.isFailure(path)) return Result.fail(path.failure)
    const segments = path.success
    const leaf = segments[segments.length - 1]
    if (leaf === undefined) return Result.fail("a value for the whole arguments ($) cannot be streamed")
    // Keep the open containers on the way to the value; close the others.
    let depth = 1
    while (depth < stack.length && depth < segments.length && stack[depth]?.segment === segments[depth - 1]) depth++
    while (stack.length > depth) out += stack.pop()?.array === true ? "]" : "}"
    for (let i = depth - 1; i < segments.length - 1; i++) {
      const segment = segments[i]!
      const written = member(stack[stack.length - 1]!, segment)
      if (Result.isFailure(written)) return written
      const array = typeof segments[i + 1] === "number"
      out += written.success + (array ? "[" : "{")
      stack.push({ segment, array, count: 0, keys: new Set() })
    }
    const written = member(stack[stack.length - 1]!, leaf)
    if (Result.isFailure(written)) return written
    out += written.success
    if (arg.stringValue !== undefined) {
      out += JSON.stringify(arg.stringValue)
      if (arg.willContinue === true) {
        out = out.slice(0, -1)
        openString = arg.jsonPath
      }
      return Result.succeed(out)
    }
    const value = scalar(arg)
    return value === undefined ? Result.fail(`the piece for ${arg.jsonPath} has no value`) : Result.succeed(out + value)
  }

  const end = (): string => {
    let out = started ? "" : "{"
    started = true
    if (openString !== undefined) out += "\""
    openString = undefined
    while (stack.length > 0) out += stack.pop()?.array === true ? "]" : "}"
    return out
  }

  return { push, end }
}
