/**
 * The demo agent's tools: a calculator and a unit converter.
 */
import { Tool, Toolkit } from "@agentloop/core"
import { Effect, Schema } from "effect"
import { ArithmeticError, evaluate } from "./Arithmetic.ts"

/** A tool failure the model can read and act on. */
export class ToolFailure extends Schema.TaggedError<ToolFailure>()("ToolFailure", { message: Schema.String }) {}

export const calculator = Tool.make({
  name: "calculator",
  description:
    "Evaluates an arithmetic expression: numbers, + - * / % ^, parentheses, pi, e, and sqrt abs ln log10 sin cos tan round.",
  input: Schema.Struct({ expression: Schema.String }),
  output: Schema.Struct({ expression: Schema.String, value: Schema.Finite }),
  failure: ToolFailure,
  execute: ({ expression }) =>
    Effect.try({
      try: () => ({ expression, value: evaluate(expression) }),
      catch: (error) => new ToolFailure({ message: error instanceof ArithmeticError ? error.message : String(error) })
    })
})

interface Unit {
  readonly dimension: "length" | "mass" | "volume" | "temperature"
  /** To the dimension's base unit (metre, kilogram, litre, kelvin). */
  readonly toBase: (value: number) => number
  readonly fromBase: (value: number) => number
}

const linear = (dimension: Unit["dimension"], factor: number): Unit => ({
  dimension,
  toBase: (value) => value * factor,
  fromBase: (value) => value / factor
})

const units = {
  mm: linear("length", 0.001),
  cm: linear("length", 0.01),
  m: linear("length", 1),
  km: linear("length", 1000),
  in: linear("length", 0.0254),
  ft: linear("length", 0.3048),
  yd: linear("length", 0.9144),
  mi: linear("length", 1609.344),
  g: linear("mass", 0.001),
  kg: linear("mass", 1),
  oz: linear("mass", 0.028349523125),
  lb: linear("mass", 0.45359237),
  ml: linear("volume", 0.001),
  l: linear("volume", 1),
  cup: linear("volume", 0.2365882365),
  gal: linear("volume", 3.785411784),
  C: { dimension: "temperature", toBase: (c) => c + 273.15, fromBase: (k) => k - 273.15 },
  F: { dimension: "temperature", toBase: (f) => (f - 32) * 5 / 9 + 273.15, fromBase: (k) => (k - 273.15) * 9 / 5 + 32 },
  K: linear("temperature", 1)
} satisfies Record<string, Unit>

type UnitName = keyof typeof units

const UnitName = Schema.Literals(Object.keys(units) as Array<UnitName>)

export const convertUnits = Tool.make({
  name: "convert_units",
  description: `Converts a value between units of length, mass, volume or temperature. Units: ${
    Object.keys(units).join(", ")
  }.`,
  input: Schema.Struct({ value: Schema.Finite, from: UnitName, to: UnitName }),
  output: Schema.Struct({ value: Schema.Finite, unit: UnitName }),
  failure: ToolFailure,
  execute: ({ from, to, value }) => {
    const source = units[from]
    const target = units[to]
    return source.dimension === target.dimension
      ? Effect.succeed({ value: target.fromBase(source.toBase(value)), unit: to })
      : Effect.fail(
        new ToolFailure({ message: `cannot convert ${source.dimension} (${from}) to ${target.dimension} (${to})` })
      )
  }
})

/** The demo's toolkit. */
export const toolkit = Toolkit.make(calculator, convertUnits)
