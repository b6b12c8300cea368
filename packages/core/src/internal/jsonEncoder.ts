/**
 * Schema encoding to JSON text, fast enough for a stream's every event.
 *
 * `make(schema)` gives the same text as `Schema.encodeExit(Schema.fromJsonString(schema))`,
 * where `schema` is a JSON codec (`Schema.toCodecJson(...)`). It walks the
 * schema's AST once and builds a writer for it: strings, numbers, booleans,
 * `null` and literals are checked (their checks included) and written with
 * `JSON.stringify`; structs write their declared keys in the schema's order
 * (what Schema's encoding keeps: undeclared keys are dropped); arrays each
 * item; a union its first member that accepts the value, as Schema picks it.
 * Any part the writer cannot judge (a transformation, a declaration, a record,
 * a recursive schema, a struct with checks of its own) is encoded by `Schema`
 * itself, then written. A value the writer rejects, or anything it cannot
 * write exactly as `Schema` would, goes through `Schema`'s own encoding, so
 * every failure is `Schema`'s own error.
 *
 * Profiling a run served as SSE found a third of its time in the per-event
 * `Schema` encoding of deltas: a `Delta` event costs a few property reads here.
 *
 * @internal
 */
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as SchemaParser from "effect/SchemaParser"

/** What a writer answers for a value its schema rejects. */
const rejected = Symbol.for("@agentloop/core/internal/jsonEncoder/rejected")

/** Thrown when the writer cannot tell what `Schema` would write: the whole value then goes through `Schema`. */
const unsure = Symbol.for("@agentloop/core/internal/jsonEncoder/unsure")

type Writer = (input: unknown) => string | typeof rejected

// The options `Schema`'s encoder runs checks with when none are given.
const parseOptions: SchemaAST.ParseOptions = {}

const filtersOf = (checks: SchemaAST.Checks): ReadonlyArray<SchemaAST.Filter<unknown>> => {
  const filters: Array<SchemaAST.Filter<unknown>> = []
  const collect = (check: SchemaAST.Check<unknown>): void => {
    if (check._tag === "Filter") filters.push(check)
    else for (const inner of check.checks) collect(inner)
  }
  for (const check of checks) collect(check)
  return filters
}

/** A part encoded by `Schema` itself, then written. */
const bySchema = (ast: SchemaAST.AST): Writer => {
  const encode = SchemaParser.encodeUnknownExit(Schema.make<Schema.Codec<unknown, unknown>>(ast))
  return (input) => {
    const encoded = encode(input)
    if (Exit.isFailure(encoded)) return rejected
    const text = JSON.stringify(encoded.value)
    // `JSON.stringify` leaves out what it cannot write (an `undefined`): only the whole value's encoding knows where.
    if (text === undefined) throw unsure
    return text
  }
}

const isRecord = (input: unknown): input is Readonly<Record<string, unknown>> =>
  typeof input === "object" && input !== null && !Array.isArray(input)

/** The writer of `ast` without its checks, or `undefined` when `Schema` must encode it. */
const structure = (ast: SchemaAST.AST): Writer | undefined => {
  switch (ast._tag) {
    case "String":
      return (input) => typeof input === "string" ? JSON.stringify(input) : rejected
    case "Number":
      return (input) => typeof input === "number" ? JSON.stringify(input) : rejected
    case "Boolean":
      return (input) => input === true ? "true" : input === false ? "false" : rejected
    case "Null":
      return (input) => input === null ? "null" : rejected
    case "Literal": {
      const literal = ast.literal
      if (typeof literal === "bigint") return undefined
      const text = JSON.stringify(literal)
      return (input) => input === literal ? text : rejected
    }
    case "Union": {
      if (ast.options?.mode === "oneOf") return undefined
      const members = ast.types.map(compile)
      return (input) => {
        for (let i = 0; i < members.length; i++) {
          const text = members[i]!(input)
          if (text !== rejected) return text
        }
        return rejected
      }
    }
    case "Arrays": {
      if (ast.elements.length !== 0 || ast.rest.length !== 1 || ast.rest[0] === undefined) return undefined
      const item = compile(ast.rest[0])
      return (input) => {
        if (!Array.isArray(input)) return rejected
        let text = "["
        for (let i = 0; i < input.length; i++) {
          const written = item(input[i])
          if (written === rejected) return rejected
          text += i === 0 ? written : `,${written}`
        }
        return `${text}]`
      }
    }
    case "Objects": {
      // A struct's own checks see the object Schema builds (undeclared keys dropped): Schema judges those.
      if (ast.indexSignatures.length > 0 || ast.checks !== undefined) return undefined
      const names: Array<string> = []
      const keys: Array<string> = []
      const writers: Array<Writer> = []
      const optional: Array<boolean> = []
      for (const property of ast.propertySignatures) {
        if (typeof property.name !== "string" || property.name === "__proto__") return undefined
        names.push(property.name)
        keys.push(`${JSON.stringify(property.name)}:`)
        writers.push(compile(property.type))
        optional.push(SchemaAST.isOptional(property.type))
      }
      return (input) => {
        if (!isRecord(input)) return rejected
        let text = ""
        for (let i = 0; i < names.length; i++) {
          const name = names[i]!
          if (!(name in input)) {
            if (optional[i]) continue
            return rejected
          }
          const written = writers[i]!(input[name])
          if (written === rejected) return rejected
          text += text === "" ? keys[i]! + written : `,${keys[i]!}${written}`
        }
        return `{${text}}`
      }
    }
    default:
      return undefined
  }
}

/** The writer of `ast`, checks included. */
const compile = (ast: SchemaAST.AST): Writer => {
  if (ast.encoding !== undefined) return bySchema(ast)
  const shape = structure(ast)
  if (shape === undefined) return bySchema(ast)
  if (ast.checks === undefined) return shape
  const filters = filtersOf(ast.checks)
  return (input) => {
    const text = shape(input)
    if (text === rejected) return rejected
    for (const filter of filters) {
      if (filter.run(input, ast, parseOptions) !== undefined) return rejected
    }
    return text
  }
}

/**
 * An encoder of values to JSON text with `schema`, a JSON codec: the same
 * results as `Schema.encodeExit(Schema.fromJsonString(schema))`, failures
 * included, faster.
 */
export const make = <A>(schema: Schema.Codec<A, unknown>): (input: A) => Exit.Exit<string, Schema.SchemaError> => {
  const encode = Schema.encodeExit(Schema.fromJsonString(schema))
  const write = compile(schema.ast)
  return (input) => {
    try {
      const text = write(input)
      if (text !== rejected) return Exit.succeed(text)
    } catch {
      // Something the writer could not judge (a value `JSON.stringify` throws on, say): Schema tells.
    }
    return encode(input)
  }
}
