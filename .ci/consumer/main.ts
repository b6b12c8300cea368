/**
 * A user's first program, run by `.ci/install-check` in a fresh project that
 * installed the packed tarballs: an agent that calls a tool and answers,
 * streamed from the scripted model, then from each provider's layer against a
 * loopback server speaking that provider's wire format. It fails (exit code 1)
 * unless every run streams the answer and ends with `Stop`.
 */
import { AgentLoop, TokenUsage, Tool, Toolkit } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { Effect, Layer, Schema, Stream } from "effect"

const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }) => Effect.succeed(a + b)
})

const script = [
  MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 } }], { model: "gpt-5-mini" }),
  MockLanguageModel.textTurn("2 + 3 = 5", { model: "gpt-5-mini", usage: TokenUsage.make(40, 8) })
]

const ask = Effect.gen(function*() {
  const agent = yield* AgentLoop.AgentLoop
  let text = ""
  const tools: Array<string> = []
  let ended = ""
  yield* agent.stream({ input: "What is 2 + 3?", toolkit: Toolkit.make(add) }).pipe(
    Stream.runForEach((event) =>
      Effect.sync(() => {
        if (event._tag === "Delta" && event.delta.type === "text_delta") text += event.delta.delta
        if (event._tag === "ToolResult") tools.push(`${event.call.name} -> ${event.output.output}`)
        if (event._tag === "Finished") ended = event.result.termination._tag
      })
    )
  )
  if (text !== "2 + 3 = 5" || tools.join() !== "add -> 5" || ended !== "Stop") {
    return yield* Effect.die(new Error(`unexpected run: text ${JSON.stringify(text)}, tools ${tools.join()}, ended ${ended}`))
  }
  return `${tools.join()}; "${text}"; ${ended}`
})

const mock = ask.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(script)))))

const main = Effect.gen(function*() {
  console.log(`mock: ${yield* mock}`)
})

Effect.runPromise(main).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
