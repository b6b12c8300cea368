/**
 * The names a durable run's steps are recorded under: each name a maker gives
 * says what it is, and a name no maker gives (or with numbers out of bounds)
 * says nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { StepName } from "../src/index.ts"

describe("StepName", () => {
  it("parses each name it makes", () => {
    expect([
      StepName.start,
      StepName.input,
      StepName.turn(3),
      StepName.tool(3, 1),
      StepName.decide(3),
      StepName.edited(3),
      StepName.fork(42)
    ].map(StepName.parse)).toStrictEqual([
      { kind: "start", step: 0, index: 0 },
      { kind: "input", step: 0, index: 0 },
      { kind: "turn", step: 3, index: 0 },
      { kind: "tool", step: 3, index: 1 },
      { kind: "decide", step: 3, index: 0 },
      { kind: "edited", step: 3, index: 0 },
      { kind: "fork", step: 0, index: 0 }
    ])
  })

  it("says nothing of another name", () => {
    const others = ["", "fork", "fork/", "fork/x", `fork/${"9".repeat(16)}`, "turn/1234567890", "tool/1/1234567", "x/1"]
    expect(others.map(StepName.parse)).toStrictEqual(others.map(() => undefined))
  })
})
