/**
 * What a step's type promises, checked by the compiler: `npm run check`
 * type-checks this file, and each `@ts-expect-error` fails it if the error
 * it expects goes away. The runtime assertions only keep the values in use.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema, Stream } from "effect"
import type { CompactionError } from "../src/Compactor.ts"
import type { InvalidOptions } from "../src/InvalidOptions.ts"
import type { LanguageModel } from "../src/LanguageModel.ts"
import { ExecutionContext } from "../src/step/ExecutionContext.ts"
import * as Step from "../src/step/Step.ts"
import type * as StepError from "../src/step/StepError.ts"
import * as Until from "../src/Until.ts"

class Missing extends Schema.TaggedError<Missing>()("Missing", {}) {}
class Broken extends Schema.TaggedError<Broken>()("Broken", {}) {}

type Equals<A, B> = [A] extends [B] ? [B] extends [A] ? true : false : false
const same = <A, B>(_: Equals<A, B>) => true

const parse = Step.run({ id: "parse", execute: (text: string) => Number(text) })
const lookup = Step.run({
  id: "lookup",
  execute: (n: number) => n > 0 ? Effect.succeed({ n }) : Effect.fail(new Missing())
})
const check = Step.run({ id: "check", execute: () => Effect.fail(new Broken()) })

describe("step types", () => {
  it("a loop takes its first step's input, gives its last step's output, and fails with every step's errors", () => {
    const pipeline = Step.loop({
      id: "pipeline",
      steps: [parse, lookup, Step.run({ id: "show", execute: ({ n }: { n: number }) => `#${n}` })],
      prepareNext: (shown) => shown.slice(1),
      until: Until.maxSteps(1)
    })
    expect(same<Step.Input<typeof pipeline>, string>(true)).toBe(true)
    expect(same<Step.Output<typeof pipeline>, string>(true)).toBe(true)
    expect(same<Extract<Step.Error<typeof pipeline>, Missing>, Missing>(true)).toBe(true)
    expect(same<Step.Services<typeof pipeline>, never>(true)).toBe(true)
  })

  it("a loop whose steps do not fit does not compile", () => {
    // @ts-expect-error lookup gives { n }, parse takes a string
    const misfit = Step.loop({ id: "misfit", steps: [lookup, parse], prepareNext: () => 1, until: Until.maxSteps(1) })
    // @ts-expect-error without prepareNext, parse's number output would be its next input, a string
    const noWayBack = Step.loop({ id: "back", steps: [parse], until: Until.maxSteps(1) })
    expect([misfit, noWayBack]).toHaveLength(2)
  })

  it("forks and branches collect their paths' errors; a path must take the fork's input", () => {
    const both = Step.fork({ id: "both", mode: "race", paths: (_: number) => [lookup, check] })
    expect(same<Extract<Step.Error<typeof both>, Missing | Broken>, Missing | Broken>(true)).toBe(true)
    expect(same<Step.Output<typeof both>, { n: number }>(true)).toBe(true)
    // @ts-expect-error parse takes a string, the fork gives numbers
    const wrongInput = Step.fork({ id: "wrong", mode: "race", paths: (_: number) => [parse] })
    const routed = Step.branch({ id: "route", route: (n: number) => n > 0 ? lookup : null })
    expect(same<Step.Output<typeof routed>, { n: number } | number>(true)).toBe(true)
    expect(wrongInput.kind).toBe("fork")
  })

  it("an llm step needs a LanguageModel; execute needs what the steps need, the context aside", () => {
    const talk = Step.llm({ id: "talk" })
    expect(same<Extract<Step.Services<typeof talk>, LanguageModel>, LanguageModel>(true)).toBe(true)
    const usesContext = Step.run({
      id: "ctx",
      execute: () => Effect.map(Effect.service(ExecutionContext), (ctx) => ctx.id)
    })
    const running = Step.execute(usesContext, undefined)
    expect(same<Effect.Services<typeof running>, never>(true)).toBe(true)
    expect(
      same<
        Effect.Error<typeof running>,
        | StepError.StepFailed
        | StepError.InvalidStep
        | StepError.Aborted
        | StepError.ExecutionCheckpointFailed
        | InvalidOptions
      >(true)
    ).toBe(true)
  })

  it("a program whose steps read a typed state must be given one", () => {
    const counter = Step.run({
      id: "count",
      execute: (_: unknown, ctx: ExecutionContext<{ readonly count: number }>) => ctx.state.count
    })
    // A step written for any state fits it.
    const both = Step.loop({
      id: "both",
      steps: [counter, Step.run({ id: "any", execute: (n: number) => n })],
      prepareNext: () => 0,
      until: Until.maxSteps(1)
    })
    expect(same<Step.State<typeof both>, { readonly count: number }>(true)).toBe(true)
    // @ts-expect-error the state is missing
    const missing = Step.execute(both, 0)
    // @ts-expect-error the state has the wrong type
    const wrong = Step.execute(both, 0, { state: { count: "one" } })
    const given = Step.execute(both, 0, { state: { count: 1 } })
    expect([missing, wrong, given]).toHaveLength(3)
  })

  it("a program on a thread may fail with its thread's CompactionError; one on none may not", () => {
    const alone = Step.execute(parse, "1")
    const onThread = Step.execute(parse, "1", { thread: "user-42" })
    const compacted = Step.stream(parse, "1", { thread: { id: "user-42", maxItems: 100 } })
    const options: Step.Options<never> = { id: "job" }
    const given = Step.execute(parse, "1", options)
    expect(same<Extract<Effect.Error<typeof alone>, CompactionError>, never>(true)).toBe(true)
    expect(same<Extract<Effect.Error<typeof onThread>, CompactionError>, CompactionError>(true)).toBe(true)
    expect(same<Extract<Stream.Error<typeof compacted>, CompactionError>, CompactionError>(true)).toBe(true)
    // Options typed apart may hold a thread: their program may fail with it.
    expect(same<Extract<Effect.Error<typeof given>, CompactionError>, CompactionError>(true)).toBe(true)
  })
})
