import { CheckpointVersion, Tool, Toolkit, ToolRecord } from "@agentloop/core"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, SchemaTransformation } from "effect"
import { RunSteps } from "../src/index.ts"

const Celsius = Schema.Struct({ celsius: Schema.Finite })
const Degrees = Schema.Struct({ degrees: Schema.Finite, unit: Schema.String })
const weather = (outputVersioning: CheckpointVersion.Versioning) =>
  Toolkit.make(Tool.make({
    name: "weather",
    description: "Today's weather",
    input: Schema.Struct({}),
    output: Degrees,
    outputVersioning,
    execute: () => Effect.succeed({ degrees: 70, unit: "F" })
  }))
const toDegrees = CheckpointVersion.migration(
  1,
  2,
  Celsius.pipe(Schema.decodeTo(
    Degrees,
    SchemaTransformation.transform({
      decode: ({ celsius }) => ({ degrees: celsius, unit: "C" }),
      encode: ({ degrees }) => ({ celsius: degrees })
    })
  ))
)
// A tool record as a run recorded it before the tool's output schema changed: version 1, as it names none.
const recorded: ToolRecord.ToolRecord = {
  outcome: "success",
  call: { type: "function_call", id: "fc_1", status: "completed", call_id: "c1", name: "weather", arguments: "{}" },
  output: { type: "function_call_output", id: "fco_1", status: "completed", call_id: "c1", output: "{\"celsius\":4}" }
}

describe("RunSteps.result", () => {
  it.effect("a tool record of an older output version is read through the tool's migrations", () =>
    Effect.gen(function*() {
      const result = yield* RunSteps.result(weather({ version: 2, migrations: [toDegrees] }), recorded)
      expect(result).toMatchObject({ outcome: "success", value: { degrees: 4, unit: "C" }, output: recorded.output })
    }))

  it.effect("one no migration reaches becomes a failure the model reads, naming both versions", () =>
    Effect.gen(function*() {
      const result = yield* RunSteps.result(weather({ version: 3 }), recorded)
      expect(result.outcome).toBe("failure")
      expect(result.outcome === "failure" && result.reason).toBe(
        "Tool \"weather\": the output of tool \"weather\" was recorded at version 1, and this app reads version 3: " +
          "no migration leads from version 1 to version 3."
      )
    }))
})
