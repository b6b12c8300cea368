import { AgentLoop, AiError, Toolkit } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { evaluate } from "../src/Arithmetic.ts"
import * as Demo from "../src/Demo.ts"
import { question, script } from "../src/script.ts"
import { toolkit } from "../src/tools.ts"
import { plain } from "./plain.ts"

const demo = (replies: ReadonlyArray<MockLanguageModel.Reply>) =>
  Effect.gen(function*() {
    let out = ""
    const ended = yield* Demo.run(question, (text) => Effect.sync(() => out += text))
    return { out: plain(out), ended }
  }).pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(replies)))))

describe("the terminal demo", () => {
  it.effect("streams the answer, every tool call and result, and how the run ended", () =>
    Effect.gen(function*() {
      const { out, ended } = yield* demo(script)
      expect(ended._tag).toBe("Stop")
      expect(out).toContain("→ convert_units {\"value\":26.2,\"from\":\"mi\",\"to\":\"km\"}")
      expect(out).toMatch(/✓ convert_units \d+\.\ds \{"value":42\.1648128,"unit":"km"\}/)
      expect(out).toMatch(/✓ calculator \d+\.\ds \{"expression":"\(3\.5 \+ 1\.25\) \* 4","value":19\}/)
      expect(out).toMatch(
        /✗ convert_units \d+\.\ds failure: Tool "convert_units" failed: ToolFailure: cannot convert temperature \(F\) to mass \(kg\)/
      )
      expect(out).toContain("[turn 3 · 671 in / 58 out tokens · $0.000284 · so far $0.000810]")
      expect(out).toMatch(
        /✓ Stop: the model answered without calling a tool\n {2}3 turns · 1681 in \/ 195 out tokens · \$0\.000810 · /
      )
      // Not a terminal: no spinner.
      expect(out).not.toContain("\r")
    }))

  it.effect("prints a termination instead of failing", () =>
    Effect.gen(function*() {
      const { out, ended } = yield* demo([
        new AiError.AuthFailed({ provider: "openai", status: 401, message: "bad key" })
      ])
      expect(out).toContain("✗ ProviderAuth (fatal): provider openai rejected the credentials (HTTP 401)")
      expect(ended._tag).toBe("ProviderAuth")
    }))
})

describe("the demo's tools", () => {
  const call = (name: string, args: unknown) => ({
    type: "function_call" as const,
    id: "fc",
    status: "completed" as const,
    call_id: "c",
    name,
    arguments: JSON.stringify(args)
  })
  const run = (name: string, args: unknown) =>
    Effect.map(Toolkit.executeAllSafe(toolkit, [call(name, args)]), ([result]) => result!)

  it("evaluates arithmetic with precedence, powers, functions and constants", () => {
    expect(evaluate("2 + 3 * 4")).toBe(14)
    expect(evaluate("(2 + 3) * 4")).toBe(20)
    expect(evaluate("2 ^ 3 ^ 2")).toBe(512)
    expect(evaluate("-2 ^ 2")).toBe(-4)
    expect(evaluate("sqrt(16) + abs(-1) + 7 % 4")).toBe(8)
    expect(evaluate("round(pi * 100)")).toBe(314)
  })

  it("rejects malformed expressions with where they go wrong", () => {
    expect(() => evaluate("2 +")).toThrow("unexpected end")
    expect(() => evaluate("2 + (3")).toThrow("expected \")\"")
    expect(() => evaluate("2 $ 3")).toThrow("unexpected \"$\"")
    expect(() => evaluate("foo(1)")).toThrow("unknown \"foo\"")
    expect(() => evaluate("1 / 0")).toThrow("not a finite number")
  })

  it.effect("converts units within a dimension and refuses across dimensions", () =>
    Effect.gen(function*() {
      const km = yield* run("convert_units", { value: 1, from: "mi", to: "km" })
      expect(km.outcome).toBe("success")
      expect(JSON.parse(km.output.output)).toStrictEqual({ value: 1.609344, unit: "km" })
      const celsius = yield* run("convert_units", { value: 212, from: "F", to: "C" })
      expect(JSON.parse(celsius.output.output).value).toBeCloseTo(100, 10)
      const wrong = yield* run("convert_units", { value: 1, from: "kg", to: "km" })
      expect(wrong.outcome).toBe("failure")
      expect(JSON.parse(wrong.output.output)).toStrictEqual({
        error: { _tag: "ToolFailure", message: "cannot convert mass (kg) to length (km)" }
      })
      const unknownUnit = yield* run("convert_units", { value: 1, from: "parsec", to: "km" })
      expect(unknownUnit.outcome).toBe("invalid_arguments")
    }))

  it.effect("the calculator reports a bad expression to the model", () =>
    Effect.gen(function*() {
      const result = yield* run("calculator", { expression: "2 * (" })
      expect(result.outcome).toBe("failure")
      expect(
        Schema.decodeUnknownSync(
          Schema.fromJsonString(Schema.Struct({ error: Schema.Struct({ message: Schema.String }) }))
        )(
          result.output.output
        ).error.message
      ).toContain("unexpected end")
    }))
})
