import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Schema } from "effect"
import { createHash } from "node:crypto"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"

const Address = Schema.Struct({
  street: Schema.String,
  city: Schema.String.annotate({ description: "City name" })
}).annotate({ identifier: "Address" })

const ship = Tool.make({
  name: "ship",
  description: "Ships a parcel",
  input: Schema.Struct({
    from: Address,
    to: Address,
    weightKg: Schema.Finite.annotate({ description: "Weight in kilograms" }),
    express: Schema.Boolean,
    at: Schema.Date
  }),
  output: Schema.Struct({ tracking: Schema.String }),
  execute: ({ to }) => Effect.succeed({ tracking: `to-${to.city}` })
})

interface Category {
  readonly name: string
  readonly children: ReadonlyArray<Category>
}
const Category = Schema.Struct({
  name: Schema.String,
  children: Schema.Array(Schema.suspend((): Schema.Codec<Category> => Category))
}).annotate({ identifier: "Category" })

describe("Tool", () => {
  it("describes its arguments as a self-contained, closed object schema", () => {
    expect(Tool.definition(ship)).toStrictEqual({
      name: "ship",
      description: "Ships a parcel",
      parameters: {
        type: "object",
        properties: {
          from: {
            type: "object",
            properties: { street: { type: "string" }, city: { type: "string", description: "City name" } },
            required: ["street", "city"],
            additionalProperties: false
          },
          to: {
            type: "object",
            properties: { street: { type: "string" }, city: { type: "string", description: "City name" } },
            required: ["street", "city"],
            additionalProperties: false
          },
          weightKg: { type: "number", description: "Weight in kilograms" },
          express: { type: "boolean" },
          at: { type: "string" }
        },
        required: ["from", "to", "weightKg", "express", "at"],
        additionalProperties: false
      }
    })
  })

  it("keeps recursive definitions under $defs, with their references resolvable", () => {
    const tool = Tool.make({
      name: "classify",
      description: "Files an item under a category tree",
      input: Schema.Struct({ tree: Category }),
      output: Schema.String,
      execute: ({ tree }) => Effect.succeed(tree.name)
    })
    const parameters = tool.parameters
    const category = {
      type: "object",
      properties: {
        name: { type: "string" },
        children: { type: "array", items: { $ref: "#/$defs/Category" } }
      },
      required: ["name", "children"],
      additionalProperties: false
    }
    expect(parameters["properties"]).toStrictEqual({ tree: category })
    expect(parameters["$defs"]).toStrictEqual({ Category: category })
  })

  it("inlines definitions whose identifier has characters a JSON pointer escapes", () => {
    const Scoped = Schema.Struct({ city: Schema.String }).annotate({ identifier: "@app/Address~v2" })
    const Node = Schema.Struct({
      name: Schema.String,
      next: Schema.NullOr(Schema.suspend((): Schema.Codec<{ readonly name: string; readonly next: unknown }> => Node))
    }).annotate({ identifier: "@app/Node" })
    const tool = Tool.make({
      name: "scoped",
      description: "Takes identified structs",
      input: Schema.Struct({ home: Scoped, work: Scoped, list: Node }),
      output: Schema.String,
      execute: ({ home }) => Effect.succeed(home.city)
    })
    const address = {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false
    }
    const node = {
      type: "object",
      properties: { name: { type: "string" }, next: { anyOf: [{ $ref: "#/$defs/@app~1Node" }, { type: "null" }] } },
      required: ["name", "next"],
      additionalProperties: false
    }
    expect(tool.parameters["properties"]).toStrictEqual({ home: address, work: address, list: node })
    expect(tool.parameters["$defs"]).toStrictEqual({ "@app/Node": node })
  })

  it("evaluates needsApproval against the decoded input, and keeps its own timeout", () => {
    const remove = Tool.make({
      name: "remove",
      description: "Removes a path",
      input: Schema.Struct({ path: Schema.String }),
      output: Schema.Boolean,
      timeout: "3 seconds",
      needsApproval: ({ path }) => path.startsWith("/"),
      execute: () => Effect.succeed(true)
    })
    expect(remove.needsApproval({ path: "/etc" })).toBe(true)
    expect(remove.needsApproval({ path: "tmp/x" })).toBe(false)
    expect(remove.timeout).toStrictEqual(Duration.seconds(3))
    expect(ship.needsApproval({
      from: { street: "a", city: "b" },
      to: { street: "c", city: "d" },
      weightKg: 1,
      express: false,
      at: new Date(0)
    })).toBe(false)
    expect(ship.timeout).toBeUndefined()
  })

  it("is not idempotent unless it says so, and has an idempotency key only where an engine provides one", () =>
    Effect.gen(function*() {
      const charge = Tool.make({
        name: "charge",
        description: "Charges a card",
        input: Schema.Struct({ cents: Schema.Int }),
        output: Schema.String,
        idempotent: true,
        execute: () =>
          Effect.gen(function*() {
            return (yield* Tool.IdempotencyKey) ?? "none"
          })
      })
      expect(charge.idempotent).toBe(true)
      expect(ship.idempotent).toBe(false)
      const call = {
        type: "function_call",
        id: "fc_1",
        status: "completed",
        call_id: "call_1",
        name: "charge",
        arguments: "{\"cents\":100}"
      } as const
      const outputs = (results: ReadonlyArray<Toolkit.Result>) => results.map((result) => result.output.output)
      expect(outputs(yield* Toolkit.executeAllSafe(Toolkit.make(charge), [call]))).toStrictEqual(["\"none\""])
      const keyed = yield* Toolkit.executeAllSafe(Toolkit.make(charge), [call]).pipe(
        Effect.provideService(Tool.IdempotencyKey, "run-1/call_1")
      )
      expect(outputs(keyed)).toStrictEqual(["\"run-1/call_1\""])
    }).pipe(Effect.runPromise))

  it("derives a recorded run's call keys: SHA-256 of the run and the call, the same each time, another for another", () =>
    Effect.gen(function*() {
      const key = yield* Tool.idempotencyKey("run-1", "tool/2/0")
      expect(key).toBe(createHash("sha256").update("run-1-tool/2/0").digest("hex").slice(0, 32))
      expect(yield* Tool.idempotencyKey("run-1", "tool/2/0")).toBe(key)
      expect(yield* Tool.idempotencyKey("run-1", "tool/2/1")).not.toBe(key)
      expect(yield* Tool.idempotencyKey("run-2", "tool/2/0")).not.toBe(key)
    }).pipe(Effect.runPromise))

  it("lists a toolkit's definitions in order and rejects duplicate names", () => {
    const echo = Tool.make({
      name: "echo",
      description: "Echoes",
      input: Schema.Struct({ text: Schema.String }),
      output: Schema.String,
      execute: ({ text }) => Effect.succeed(text)
    })
    expect(Toolkit.definitions(Toolkit.make(echo, ship)).map((d) => d.name)).toStrictEqual(["echo", "ship"])
    expect(() => Toolkit.make(echo, ship, echo)).toThrow(/two tools are named "echo"/)
  })
})

describe("Tool.make types", () => {
  it("takes the output and failure types from the Schemas, not from execute", () => {
    const make = () =>
      Tool.make({
        name: "typed",
        description: "Returns a number",
        input: Schema.Struct({}),
        output: Schema.Finite,
        // @ts-expect-error a string is not the declared output
        execute: () => Effect.succeed("not a number")
      })
    const failing = () =>
      Tool.make({
        name: "failing",
        description: "Fails with a code",
        input: Schema.Struct({}),
        output: Schema.Finite,
        failure: Schema.Struct({ code: Schema.Finite }),
        // @ts-expect-error the failure Schema does not describe a string error
        execute: () => Effect.fail("a string")
      })
    class Refused extends Schema.TaggedError<Refused>()("Refused", { message: Schema.String }) {}
    const refusing = Tool.make({
      name: "refusing",
      description: "Fails with its own error, inferred through a context-sensitive execute",
      input: Schema.Struct({ why: Schema.String }),
      output: Schema.Finite,
      failure: Refused,
      execute: ({ why }) => why === "" ? Effect.succeed(1) : Effect.fail(new Refused({ message: why }))
    })
    expect(refusing.failure).toBe(Refused)
    expect(make().name).toBe("typed")
    expect(failing().failure).toBeDefined()
  })
})
