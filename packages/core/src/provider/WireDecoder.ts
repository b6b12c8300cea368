/**
 * Schema decoding of wire data, fast enough for a model stream's every event.
 *
 * A stream event is JSON that almost always matches its schema. `make` walks
 * the schema's AST once and builds a plain predicate for it (types, literals,
 * required and optional keys, arrays, records, unions of those, and every
 * check, run as the schema runs it); data the predicate accepts is the decoded
 * value as it is, without the copy `Schema`'s decoder makes of each object.
 * Anything the predicate rejects goes through `Schema`'s own decoder, so every
 * failure is `Schema`'s own issue, and a schema with a part the predicate
 * cannot judge (a transformation, a declaration, a recursive schema) is always
 * decoded by `Schema`. Profiling the providers found a third of the decode time
 * in those per-object copies and their garbage.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import type * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaParser from "effect/SchemaParser"

type Guard = (input: unknown) => boolean

// The options `Schema`'s decoder runs checks with when none are given.
const parseOptions: SchemaAST.ParseOptions = {}

const checksPass = (checks: SchemaAST.Checks | undefined, ast: SchemaAST.AST): Guard | undefined => {
  if (checks === undefined) return undefined
  const filters: Array<SchemaAST.Filter<unknown>> = []
  const collect = (check: SchemaAST.Check<unknown>): void => {
    if (check._tag === "Filter") filters.push(check)
    else for (const inner of check.checks) collect(inner)
  }
  for (const check of checks) collect(check)
  return (input) => {
    for (const filter of filters) {
      if (filter.run(input, ast, parseOptions) !== undefined) return false
    }
    return true
  }
}

const isRecord = (input: unknown): input is Readonly<Record<string, unknown>> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

/** The predicate of `ast` without its checks, or `undefined` when `ast` is outside what a predicate can judge. */
const structure = (ast: SchemaAST.AST): Guard | undefined => {
  switch (ast._tag) {
    case "String":
      return (input) => typeof input === "string"
    case "Number":
      return (input) => typeof input === "number"
    case "Boolean":
      return (input) => typeof input === "boolean"
    case "Null":
      return (input) => input === null
    case "Undefined":
      return (input) => input === undefined
    case "Unknown":
    case "Any":
      return () => true
    case "Literal": {
      const literal = ast.literal
      return (input) => input === literal
    }
    case "Union": {
      if (ast.options?.mode === "oneOf") return undefined
      const members = ast.types.map(compile)
      if (!members.every((member) => member !== undefined)) return undefined
      return (input) => members.some((member) => member(input))
    }
    case "Arrays": {
      const item = ast.elements.length === 0 && ast.rest.length === 1 && ast.rest[0] !== undefined
        ? compile(ast.rest[0])
        : undefined
      if (item === undefined) return undefined
      return (input) => Array.isArray(input) && input.every(item)
    }
    case "Objects": {
      const properties: Array<readonly [string, Guard, boolean]> = []
      for (const property of ast.propertySignatures) {
        const guard = compile(property.type)
        if (guard === undefined || typeof property.name !== "string") return undefined
        properties.push([property.name, guard, SchemaAST.isOptional(property.type)])
      }
      let values: Guard | undefined
      if (ast.indexSignatures.length > 0) {
        const [index, ...others] = ast.indexSignatures
        if (
          index === undefined || others.length > 0 || index.parameter._tag !== "String" ||
          index.parameter.checks !== undefined
        ) {
          return undefined
        }
        values = compile(index.type)
        if (values === undefined) return undefined
      }
      const eachValue = values
      return (input) => {
        if (!isRecord(input)) return false
        for (const [name, guard, optional] of properties) {
          if (!(name in input)) {
            if (optional) continue
            return false
          }
          if (!guard(input[name])) return false
        }
        if (eachValue !== undefined) {
          for (const key of Object.keys(input)) if (!eachValue(input[key])) return false
        }
        return true
      }
    }
    default:
      return undefined
  }
}

/** The predicate of `ast`, checks included, or `undefined` when `ast` is outside what a predicate can judge. */
const compile = (ast: SchemaAST.AST): Guard | undefined => {
  if (ast.encoding !== undefined) return undefined
  const shape = structure(ast)
  if (shape === undefined) return undefined
  const checks = checksPass(ast.checks, ast)
  return checks === undefined ? shape : (input) => shape(input) && checks(input)
}

/**
 * A decoder of wire data with `schema`: the same successes and the same
 * issues as `SchemaParser.decodeUnknownResult(schema)`, except that an
 * accepted object is returned as it came (keys the schema does not declare included).
 *
 * @example
 * ```ts
 * import { WireDecoder } from "@agentloop/core"
 * import { Result, Schema } from "effect"
 *
 * // A decoder for untrusted wire values: a Result, never an exception.
 * const decodeUsage = WireDecoder.make(Schema.Struct({ input_tokens: Schema.Number }))
 * console.log(Result.isSuccess(decodeUsage({ input_tokens: 12 }))) // true
 * console.log(Result.isSuccess(decodeUsage({ input_tokens: "12" }))) // false
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <A>(schema: Schema.Decoder<A>): (input: unknown) => Result.Result<A, SchemaIssue.Issue> => {
  const decode = SchemaParser.decodeUnknownResult(schema)
  const guard = compile(schema.ast)
  if (guard === undefined) return decode
  // The guard is the schema's own judgement of the input, and a schema without transformations decodes to its input.
  const accepted = guard as (input: unknown) => input is A
  return (input) => accepted(input) ? Result.succeed(input) : decode(input)
}
