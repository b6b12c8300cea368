import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Schema, Sink, Stream } from "effect"
import * as Stdio from "effect/Stdio"
import { TestClock } from "effect/testing"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Step from "../src/step/Step.ts"
import * as Reporter from "../src/stream/Reporter.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Until from "../src/Until.ts"
import { addCall, answer, model, pricing, usage } from "./agentFixtures.ts"
import { add } from "./fixtures.ts"

const slow = Tool.make({
  name: "slow",
  description: "Takes a second and a half",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.as(Effect.sleep("1500 millis"), "done")
})

const toolkit = Toolkit.make(add, slow)

const agent = (replies: ReadonlyArray<MockLanguageModel.Reply>, limits?: AgentLoop.Options["limits"]) =>
  Stream.unwrap(Effect.map(AgentLoop.AgentLoop, (loop) => loop.stream({ input: "Add 2 and 3", toolkit, limits })))
    .pipe(Stream.provide(Layer.merge(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(replies))), pricing)))

/** Runs `stream` through the reporter into a string, as a terminal (`isTerminal`) or a pipe would get it. */
const report = <
  A extends Parameters<typeof Reporter.pretty>[0] extends Stream.Stream<infer T, any, any> ? T : never,
  E
>(
  stream: Stream.Stream<A, E>,
  isTerminal: boolean
) =>
  Effect.gen(function*() {
    let out = ""
    const events = yield* Stream.runCollect(Reporter.pretty(stream)).pipe(
      Effect.provide(Reporter.layer((text) => Effect.sync(() => out += text), { isTerminal })),
      Effect.result
    )
    return { out, events }
  })

const esc = String.fromCharCode(27)
/** A spinner frame (cyan) before a dim status `text` (a regular expression's source). */
const spinner = (text: string) => new RegExp(`${esc}\\[36m[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]${esc}\\[39m ${esc}\\[2m${text}`)

describe("Reporter.pretty", () => {
  it.effect("not a terminal: plain lines, no spinner, no colours; money rounded to a millionth", () =>
    Effect.gen(function*() {
      const { events, out } = yield* report(agent([addCall(2, 3), answer("2 + 3 = 5.")]), false)
      expect(out).not.toContain("\x1b")
      expect(out).not.toContain("\r")
      expect(out).toBe(
        [
          "── turn 1 ──",
          "  → add {\"a\":2,\"b\":3}",
          "  [turn 1 · 20 in / 10 out tokens · $0.000040 · so far $0.000040]",
          "  ✓ add 0.0s 5",
          "── turn 2 ──",
          "2 + 3 = 5.",
          "  [turn 2 · 20 in / 10 out tokens · $0.000040 · so far $0.000080]",
          "✓ Stop: the model answered without calling a tool",
          "  2 turns · 40 in / 20 out tokens · $0.000080 · 0.0s",
          ""
        ].join("\n")
      )
      // The events pass through unchanged.
      expect(events._tag === "Success" && events.success.map((event) => event._tag).at(-1)).toBe("Finished")
    }))

  it.effect("a terminal: a spinner while the model thinks and a tool runs, then the tool's duration", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(report(
        agent([MockLanguageModel.callsTurn([{ name: "slow", arguments: {} }], { model, usage }), answer("Done.")]),
        true
      ))
      yield* TestClock.adjust("1 second")
      yield* TestClock.adjust("1 second")
      const { out } = yield* Fiber.join(fiber)
      expect(out).toMatch(spinner("waiting for the model · 0\\.0s"))
      expect(out).toMatch(spinner("slow · 0\\.0s"))
      expect(out).toMatch(spinner("slow · 1\\.0s"))
      // The status line is cleared before the result is printed.
      expect(out).toContain("\r\x1b[2K  \x1b[32m✓\x1b[39m slow \x1b[2m1.5s\x1b[22m \"done\"\n")
      expect(out).toContain("Done.")
    }))

  it.effect("a failed run prints its termination and fails with it, unchanged", () =>
    Effect.gen(function*() {
      const { events, out } = yield* report(agent([addCall(2, 3), answer("5")], { maxTurns: 1 }), false)
      expect(events._tag === "Failure" && events.failure._tag).toBe("MaxTurns")
      expect(out).toContain("✗ MaxTurns (capacity): reached the limit of 1 turns\n  1 turn · 20 in / 10 out tokens")
    }))

  it.effect("a step program: its turns, and a sub-agent's lines named after it", () =>
    Effect.gen(function*() {
      const program = Step.spawn({
        id: "helper",
        child: Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model })], until: Until.noToolCalls() })
      })
      const events = Step.stream(program, "Add 2 and 3", { toolkit, id: "root" }).pipe(
        Stream.provide(Layer.merge(MockLanguageModel.layer([addCall(2, 3), answer("5")]), pricing))
      )
      const { out } = yield* report(events, false)
      expect(out).toContain("◆ helper started")
      expect(out).toMatch(/ {2}✓ helper: add 0\.0s 5\n/)
      expect(out).toContain("✓ done")
    }))

  it.effect("layerStdio writes to effect's Stdio, plain when its standard output is not a terminal", () =>
    Effect.gen(function*() {
      let out = ""
      const stdio = Stdio.layerTest({
        stdoutIsTerminal: Effect.succeed(false),
        stdout: () => Sink.forEach((text: string | Uint8Array) => Effect.sync(() => out += String(text)))
      })
      yield* Stream.runDrain(Reporter.pretty(agent([answer("Hi.")]))).pipe(
        Effect.provide(Reporter.layerStdio.pipe(Layer.provide(stdio)))
      )
      expect(out).toContain("── turn 1 ──\nHi.\n")
      expect(out).not.toContain(String.fromCharCode(27))
    }))

  it("prints money rounded, never as a float's tail", () => {
    expect(Reporter.usd(0.00031999999999999997)).toBe("$0.000320")
    expect(Reporter.usd(1.5)).toBe("$1.500000")
    expect(Reporter.usd(null)).toBe("cost unknown")
  })
})
