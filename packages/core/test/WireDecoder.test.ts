import { describe, expect, it } from "@effect/vitest"
import { Result, Schema, SchemaIssue, SchemaParser } from "effect"
import * as WireDecoder from "../src/provider/WireDecoder.ts"

const Index = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

const schemas = {
  event: Schema.Struct({
    type: Schema.Literal("delta"),
    item_id: Schema.String,
    content_index: Index,
    delta: Schema.String,
    phase: Schema.optionalKey(Schema.NullOr(Schema.String)),
    flags: Schema.optionalKey(Schema.Array(Schema.Boolean)),
    status: Schema.optional(Schema.Literals(["in_progress", "completed"]))
  }),
  nested: Schema.Struct({
    candidates: Schema.optionalKey(Schema.Array(Schema.Struct({
      content: Schema.optionalKey(Schema.Struct({
        parts: Schema.optionalKey(Schema.Array(Schema.Struct({
          text: Schema.optionalKey(Schema.String),
          call: Schema.optionalKey(Schema.Struct({ name: Schema.String, args: Schema.optionalKey(Schema.Unknown) }))
        })))
      })),
      reason: Schema.optionalKey(Schema.String)
    }))),
    usage: Schema.optionalKey(Schema.Record(Schema.String, Index)),
    item: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
  }),
  union: Schema.Struct({
    value: Schema.Union([
      Schema.Struct({ kind: Schema.Literal("a"), n: Schema.Number }),
      Schema.Struct({ kind: Schema.Literal("b"), s: Schema.String })
    ])
  }),
  bounded: Schema.Struct({
    list: Schema.Array(Schema.String).check(Schema.isMaxLength(2)),
    name: Schema.String.check(Schema.isNonEmpty())
  })
}

const samples: { readonly [K in keyof typeof schemas]: ReadonlyArray<unknown> } = {
  event: [
    { type: "delta", item_id: "m", content_index: 0, delta: "x" },
    {
      type: "delta",
      item_id: "m",
      content_index: 4294967295,
      delta: "",
      phase: null,
      flags: [true],
      status: "completed",
      extra: 1
    }
  ],
  nested: [
    {},
    {
      candidates: [{ content: { parts: [{ text: "a" }, { call: { name: "f", args: [1] } }] }, reason: "STOP" }],
      usage: { a: 1 },
      item: { x: [] }
    }
  ],
  union: [{ value: { kind: "a", n: 1 } }, { value: { kind: "b", s: "s" } }],
  bounded: [{ list: ["a"], name: "n" }]
}

const replacements: ReadonlyArray<unknown> = [undefined, null, 0, -1, 1.5, 1e300, "s", "", true, [], {}, [
  "a",
  "b",
  "c"
], { kind: "a" }]

/** Every variant of `value` with one place (itself, or a value at any depth) replaced, removed or given an extra key. */
const variants = (value: unknown): Array<unknown> => {
  const out: Array<unknown> = [...replacements]
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      for (const variant of variants(item)) out.push(value.map((other, j) => j === i ? variant : other))
    })
    out.push([...value, value[0]])
  } else if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>
    for (const key of Object.keys(record)) {
      const { [key]: _, ...without } = record
      out.push(without)
      for (const variant of variants(record[key])) out.push({ ...record, [key]: variant })
    }
    out.push({ ...record, added: 1 })
  }
  return out
}

const format = SchemaIssue.makeFormatterDefault()

describe("WireDecoder.make", () => {
  for (const name of Object.keys(schemas) as Array<keyof typeof schemas>) {
    it(`accepts and rejects exactly what Schema does, with Schema's issues: ${name}`, () => {
      const schema: Schema.Decoder<unknown> = schemas[name]
      const fast = WireDecoder.make(schema)
      const reference = SchemaParser.decodeUnknownResult(schema)
      let checked = 0
      for (const sample of samples[name]) {
        for (const input of [sample, ...variants(sample)]) {
          const ours = fast(input)
          const theirs = reference(input)
          checked++
          expect(Result.isSuccess(ours), JSON.stringify(input)).toBe(Result.isSuccess(theirs))
          if (Result.isSuccess(ours) && Result.isSuccess(theirs)) {
            // Ours is the input as it came: decoding it again gives Schema's own value.
            expect(reference(ours.success)).toStrictEqual(theirs)
          }
          if (Result.isFailure(ours) && Result.isFailure(theirs)) {
            expect(format(ours.failure)).toBe(format(theirs.failure))
          }
        }
      }
      expect(checked).toBeGreaterThan(20)
    })
  }

  it("leaves a schema it cannot judge to Schema: transformations and classes decode as Schema decodes them", () => {
    const transformed = WireDecoder.make(Schema.Struct({ n: Schema.NumberFromString }))
    expect(transformed({ n: "12" })).toStrictEqual(Result.succeed({ n: 12 }))
    class Point extends Schema.Class<Point>("Point")({ x: Schema.Number }) {}
    const point = WireDecoder.make(Point)
    const decoded = point({ x: 1 })
    expect(Result.isSuccess(decoded) && decoded.success instanceof Point).toBe(true)
    const oneOf = WireDecoder.make(Schema.Union([Schema.String, Schema.Literal("a")], { mode: "oneOf" }))
    expect(Result.isFailure(oneOf("a"))).toBe(true)
    expect(oneOf("b")).toStrictEqual(Result.succeed("b"))
  })
})
