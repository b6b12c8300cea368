/**
 * A small arithmetic evaluator for the calculator tool: numbers, + - * / ^ %,
 * parentheses, unary minus, and a few functions. It parses; it never `eval`s.
 */

const functions: Readonly<Record<string, (x: number) => number>> = {
  sqrt: Math.sqrt,
  abs: Math.abs,
  ln: Math.log,
  log10: Math.log10,
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  round: Math.round
}

const constants: Readonly<Record<string, number>> = { pi: Math.PI, e: Math.E }

/** Why an expression could not be evaluated, with the position of the problem. */
export class ArithmeticError extends Error {}

/** Evaluates `expression`; throws an {@link ArithmeticError} saying what is wrong and where. */
export const evaluate = (expression: string): number => {
  const tokens = expression.match(/\d+(\.\d+)?(e[+-]?\d+)?|[a-z_][a-z0-9_]*|\S/gi) ?? []
  let position = 0
  const peek = (): string | undefined => tokens[position]
  const fail = (message: string): never => {
    throw new ArithmeticError(`${message} at token ${position + 1} of "${expression}"`)
  }
  const expect = (token: string) => {
    if (peek() !== token) fail(`expected "${token}"`)
    position++
  }

  const primary = (): number => {
    const token = peek()
    if (token === undefined) return fail("unexpected end")
    position++
    if (/^\d/.test(token)) return Number(token)
    if (token === "(") {
      const value = sum()
      expect(")")
      return value
    }
    if (token === "-") return -power()
    if (token === "+") return power()
    const lower = token.toLowerCase()
    const constant = constants[lower]
    if (constant !== undefined) return constant
    const fn = functions[lower]
    if (fn !== undefined) {
      expect("(")
      const value = sum()
      expect(")")
      return fn(value)
    }
    return fail(`unknown "${token}"`)
  }
  const power = (): number => {
    const base = primary()
    if (peek() !== "^") return base
    position++
    return base ** power()
  }
  const product = (): number => {
    let value = power()
    for (let op = peek(); op === "*" || op === "/" || op === "%"; op = peek()) {
      position++
      const right = power()
      value = op === "*" ? value * right : op === "/" ? value / right : value % right
    }
    return value
  }
  const sum = (): number => {
    let value = product()
    for (let op = peek(); op === "+" || op === "-"; op = peek()) {
      position++
      const right = product()
      value = op === "+" ? value + right : value - right
    }
    return value
  }

  const value = sum()
  if (position < tokens.length) fail(`unexpected "${peek()}"`)
  if (!Number.isFinite(value)) fail("the result is not a finite number")
  return value
}
