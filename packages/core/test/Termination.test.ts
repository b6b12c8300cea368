import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { Accounting } from "../src/Accounting.ts"
import * as AiError from "../src/AiError.ts"
import * as Item from "../src/Item.ts"
import * as Termination from "../src/Termination.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import * as Until from "../src/Until.ts"

const accounting: Accounting = {
  usage: TokenUsage.make(1200, 340, { cachedInput: 1000 }),
  cost: 0.0123,
  elapsedMs: 4567,
  steps: 3,
  lastItems: [Item.userMessage("hi"), Item.assistantMessage("hello")]
}

const stuckCall: Item.FunctionCall = {
  type: "function_call",
  id: "fc1",
  status: "completed",
  call_id: "c1",
  name: "search",
  arguments: "{\"q\":\"same\"}"
}

const Answer = Schema.Struct({ answer: Schema.NumberFromString })

const diagnostic = Termination.diagnose({
  target: "structured_output",
  name: "Answer",
  error: Schema.decodeUnknownExit(Answer)({ answer: 42 }).pipe((exit) => {
    if (exit._tag === "Success") throw new Error("expected a decoding failure")
    const error = exit.cause.reasons[0]
    if (error?._tag !== "Fail") throw new Error("expected a typed failure")
    return error.error
  }),
  raw: "{\"answer\":42}"
})

/** One of every termination, in the order of `Termination.all`. */
const samples: ReadonlyArray<Termination.Termination<typeof Answer.Type>> = [
  Termination.stop({ reason: "the model answered without calling a tool", accounting }),
  Termination.submitted({ tool: "submit", value: { answer: 42 }, accounting }),
  new Termination.MaxTurns({ maxTurns: 3, accounting }),
  new Termination.MaxBudgetUsd({ maxBudgetUsd: 0.01, accounting }),
  new Termination.UnpricedModel({
    model: "my-local-model",
    maxBudgetUsd: 0.5,
    accounting: { ...accounting, cost: null }
  }),
  new Termination.MaxDuration({ maxDurationMs: 60_000, accounting }),
  new Termination.DuringExecution({
    message: "until predicate threw: boom",
    cause: new Until.PredicateFailed({ message: "until predicate threw: boom", cause: new Error("boom") }),
    accounting
  }),
  new Termination.MaxStructuredOutputRetries({ maxRetries: 2, diagnostic, accounting }),
  new Termination.ConsecutiveMistakes({
    maxConsecutiveMistakes: 3,
    mistakes: ["unknown tool \"serach\"", "arguments did not decode", "tool timed out"],
    accounting
  }),
  new Termination.Halted({ reason: "user pressed stop", source: "ui", accounting }),
  new Termination.CompactionFailed({
    message: "summary call failed",
    cause: new AiError.Unavailable({ provider: "openai", status: 503, message: "overloaded" }),
    accounting
  }),
  new Termination.PromptTooLong({
    cause: new AiError.ContextLengthExceeded({ provider: "openai", message: "context is 128k tokens" }),
    accounting
  }),
  new Termination.NoProgress({ iterations: 3, stuck: [stuckCall, stuckCall, stuckCall], accounting }),
  new Termination.SchemaValidation({ diagnostic, accounting }),
  new Termination.ProviderAuth({
    cause: new AiError.AuthFailed({ provider: "gemini", status: 403, message: "forbidden" }),
    accounting
  }),
  new Termination.ProviderQuota({
    cause: new AiError.QuotaExceeded({ provider: "openai", status: 429, message: "You exceeded your current quota" }),
    accounting
  }),
  new Termination.CheckpointFailed({ message: "the run's checkpoint failed: disk full", accounting }),
  new Termination.InvalidOptions({
    field: "limits.maxTurns",
    value: "-1",
    expected: "a positive integer",
    accounting
  })
]

const TerminationOfAnswer = Termination.schema(Answer)

describe("Termination", () => {
  it("all lists every termination, one each", () => {
    expect(Termination.all).toStrictEqual(samples.map((t) => t._tag))
    expect(new Set(Termination.all).size).toBe(18)
  })

  it("categorises every termination as in the design table", () => {
    expect(Object.fromEntries(samples.map((t) => [t._tag, Termination.category(t)]))).toStrictEqual({
      Stop: "success",
      Submitted: "success",
      MaxTurns: "capacity",
      MaxBudgetUsd: "capacity",
      UnpricedModel: "fatal",
      MaxDuration: "capacity",
      DuringExecution: "retryable",
      MaxStructuredOutputRetries: "capacity",
      ConsecutiveMistakes: "capacity",
      Halted: "fatal",
      CompactionFailed: "fatal",
      PromptTooLong: "capacity",
      NoProgress: "capacity",
      SchemaValidation: "retryable",
      ProviderAuth: "fatal",
      ProviderQuota: "fatal",
      CheckpointFailed: "retryable",
      InvalidOptions: "fatal"
    })
    expect(Termination.all.map(Termination.category)).toStrictEqual(samples.map(Termination.category))
  })

  it("takes each error's category from its class", () => {
    for (const t of samples.filter(Termination.isError)) expect(Termination.category(t)).toBe(t.category)
    const decoded = samples.map((t) =>
      Schema.decodeUnknownSync(TerminationOfAnswer)(Schema.encodeSync(TerminationOfAnswer)(t))
    )
    expect(decoded.map(Termination.category)).toStrictEqual(samples.map(Termination.category))
  })

  it("tells successes from errors", () => {
    expect(samples.filter(Termination.isSuccess).map((t) => t._tag)).toStrictEqual(["Stop", "Submitted"])
    expect(samples.filter(Termination.isError)).toHaveLength(16)
    for (const t of samples.filter(Termination.isError)) expect(t).toBeInstanceOf(Error)
  })

  it("round-trips every termination through JSON", () => {
    for (const termination of samples) {
      const json = JSON.stringify(Schema.encodeSync(TerminationOfAnswer)(termination))
      const decoded = Schema.decodeUnknownSync(TerminationOfAnswer)(JSON.parse(json))
      expect(decoded).toStrictEqual(termination)
      expect(decoded.accounting).toStrictEqual(termination.accounting)
    }
  })

  it("encodes a submitted value with its own schema", () => {
    const encoded = Schema.encodeSync(TerminationOfAnswer)(samples[1]!)
    expect(encoded).toMatchObject({ _tag: "Submitted", tool: "submit", value: { answer: "42" } })
  })

  it("keeps the typed cause of DuringExecution and the message of a thrown error across JSON", () => {
    const json = JSON.parse(JSON.stringify(Schema.encodeSync(Termination.Error)(samples[6] as Termination.Error)))
    const decoded = Schema.decodeUnknownSync(Termination.Error)(json)
    if (decoded._tag !== "DuringExecution") throw new Error("expected DuringExecution")
    expect(decoded.cause).toBeInstanceOf(Until.PredicateFailed)
    const cause = decoded.cause instanceof Until.PredicateFailed ? decoded.cause.cause : undefined
    expect(cause).toBeInstanceOf(Error)
    expect(cause instanceof Error ? cause.message : undefined).toBe("boom")
  })

  it("rejects encoded terminations that are malformed", () => {
    const decode = Schema.decodeUnknownExit(TerminationOfAnswer)
    const good = JSON.parse(JSON.stringify(Schema.encodeSync(TerminationOfAnswer)(samples[2]!)))
    expect(decode(good)._tag).toBe("Success")
    expect(decode({ ...good, _tag: "Exploded" })._tag).toBe("Failure")
    expect(decode({ ...good, accounting: { ...good.accounting, steps: -1 } })._tag).toBe("Failure")
    expect(decode({ ...good, accounting: { ...good.accounting, cost: "unknown" } })._tag).toBe("Failure")
    expect(decode({ _tag: "Submitted", tool: "submit", value: { answer: 42 }, accounting: good.accounting })._tag)
      .toBe("Failure")
  })

  it("gives every error a message a person can read", () => {
    expect(samples.filter(Termination.isError).map((t) => t.message)).toStrictEqual([
      "reached the limit of 3 turns",
      "cost $0.0123 reached the budget of $0.01",
      "the budget of $0.5 cannot be enforced: model \"my-local-model\" has no price. " +
      "Price it with Pricing.layer({ \"my-local-model\": { input, cachedInput, output } }) (USD per million tokens)",
      "reached the deadline of 60000 ms",
      "until predicate threw: boom",
      `structured output still invalid after 2 repair attempts: ${diagnostic.message}`,
      "3 consecutive mistakes",
      "halted by ui: user pressed stop",
      "summary call failed",
      "prompt too long: context is 128k tokens",
      "no progress in 3 iterations",
      `invalid structured output: ${diagnostic.message}`,
      "provider gemini rejected the credentials (HTTP 403)",
      "provider openai has no quota left: You exceeded your current quota",
      "the run's checkpoint failed: disk full",
      "limits.maxTurns must be a positive integer, not -1"
    ])
  })

  it.effect("errors are yieldable and caught by tag", () =>
    Effect.gen(function*() {
      const run: Effect.Effect<Termination.Success, Termination.Error> = Effect.fail(
        new Termination.MaxBudgetUsd({ maxBudgetUsd: 1, accounting })
      )
      const caught = yield* run.pipe(
        Effect.catchTag("MaxBudgetUsd", (e) => Effect.succeed(Termination.stop({ reason: e.message, accounting })))
      )
      expect(caught._tag).toBe("Stop")
    }))
})

describe("Termination.diagnose", () => {
  it("lists each failing path with its message and keeps the raw output", () => {
    expect(diagnostic.target).toBe("structured_output")
    expect(diagnostic.name).toBe("Answer")
    expect(diagnostic.raw).toBe("{\"answer\":42}")
    expect(diagnostic.issues).toHaveLength(1)
    expect(diagnostic.issues[0]?.path).toStrictEqual(["answer"])
    expect(diagnostic.issues[0]?.message).toMatch(/string/)
    expect(Schema.is(Termination.Diagnostic)(diagnostic)).toBe(true)
  })
})
