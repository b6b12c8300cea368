/**
 * A user's first program, run by `.ci/install-check` in a fresh project that
 * installed the packed tarballs: an agent that calls a tool and answers,
 * streamed from the scripted model, then from each provider's layer against a
 * loopback server speaking that provider's wire format, then as a durable run
 * on an embedded SQLite runner, then with the tool served over MCP by this same
 * program started again as a stdio server (`node build/main.js mcp-server`). It
 * fails (exit code 1) unless every run streams the answer and ends with `Stop`.
 */
import { Anthropic } from "@agentloop/anthropic"
import { AnthropicWire } from "@agentloop/anthropic/testing"
import { ChatCompletions } from "@agentloop/chat-completions"
import { ChatCompletionsWire } from "@agentloop/chat-completions/testing"
import { AgentLoop, type LanguageModel, type ProviderWire, TokenUsage, Tool, Toolkit } from "@agentloop/core"
import { DurableAgent, DurableRunner } from "@agentloop/durable"
import { Gemini } from "@agentloop/gemini"
import { GeminiWire } from "@agentloop/gemini/testing"
import { Mcp } from "@agentloop/mcp"
import { Responses } from "@agentloop/responses"
import { ResponsesWire } from "@agentloop/responses/testing"
import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Layer, Redacted, Schema, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }) => Effect.succeed(a + b)
})
const toolkit = Toolkit.make(add)
const input = "What is 2 + 3?"
const answer = "2 + 3 = 5"

const script = [
  MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 } }], { model: "gpt-5-mini" }),
  MockLanguageModel.textTurn(answer, { model: "gpt-5-mini", usage: TokenUsage.make(40, 8) })
]

const expect = (what: string, actual: string, expected: string) =>
  actual === expected
    ? Effect.void
    : Effect.die(new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`))

/** Streams the agent's run with `available` tools and checks what it streamed, the tool's output as `results`. */
const askWith = (available: Toolkit.Toolkit, results: string) =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    let text = ""
    const tools: Array<string> = []
    let ended = ""
    yield* agent.stream({ input, toolkit: available }).pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          if (event._tag === "Delta" && event.delta.type === "text_delta") text += event.delta.delta
          if (event._tag === "ToolResult") tools.push(`${event.call.name} -> ${event.output.output}`)
          if (event._tag === "Finished") ended = event.result.termination._tag
        })
      )
    )
    yield* expect("text", text, answer)
    yield* expect("tools", tools.join(), results)
    yield* expect("termination", ended, "Stop")
  })

const onModel = (model: Layer.Layer<LanguageModel.LanguageModel>) =>
  askWith(toolkit, "add -> 5").pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model))))

const providers: ReadonlyArray<
  readonly [string, ProviderWire.ProviderWire, (baseUrl: string) => Layer.Layer<LanguageModel.LanguageModel>]
> = [
  ["responses", ResponsesWire.wire, (baseUrl) => Responses.layer({ apiKey: Redacted.make("key"), baseUrl })],
  ["gemini", GeminiWire.wire, (baseUrl) => Gemini.layer({ apiKey: Redacted.make("key"), baseUrl })],
  ["anthropic", AnthropicWire.wire, (baseUrl) => Anthropic.layer({ apiKey: Redacted.make("key"), baseUrl })],
  // A local server: no key.
  ["chat-completions", ChatCompletionsWire.wire, (baseUrl) => ChatCompletions.layer({ baseUrl, model: "llama3.2" })]
]

const overHttp = (
  wire: ProviderWire.ProviderWire,
  layer: (baseUrl: string) => Layer.Layer<LanguageModel.LanguageModel>
) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    yield* server.reply(...script)
    yield* onModel(layer(server.url))
  }).pipe(Effect.provide(ProviderServer.layerWire(wire)))

const durable = Effect.gen(function*() {
  const agent = DurableAgent.make("adder", { toolkit })
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-consumer-"))
  const runner = agent.layer.pipe(
    Layer.provideMerge(DurableRunner.layerSqlite({ filename: Path.join(dir, "runs.db") })),
    Layer.provide(MockLanguageModel.layer(script))
  )
  const result = yield* agent.run({ runId: "run-1", input }).pipe(
    Effect.provide(runner),
    Effect.ensuring(Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
  )
  yield* expect("durable run", result._tag === "Stopped" ? String(result.output) : result._tag, answer)
})

// The same agent, its tool served over MCP by this program run as a stdio server, from the packages' builds.
const overMcp = Effect.gen(function*() {
  const served = yield* Mcp.toolkit(Mcp.stdio({ command: process.execPath, args: [process.argv[1]!, "mcp-server"] }))
  // An MCP tool's output is the text of its result: the JSON string "5".
  yield* askWith(served, `add -> "5"`).pipe(
    Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(script))))
  )
}).pipe(Effect.scoped, Effect.provide(NodeServices.layer))

const main = Effect.gen(function*() {
  yield* onModel(MockLanguageModel.layer(script))
  console.log("mock: ok")
  for (const [name, wire, layer] of providers) {
    yield* overHttp(wire, layer)
    console.log(`${name} over HTTP: ok`)
  }
  yield* durable
  console.log("durable on SQLite: ok")
  yield* overMcp
  console.log("tool over MCP (stdio): ok")
})

if (process.argv[2] === "mcp-server") {
  const server = Mcp.serve(toolkit, { name: "consumer", version: "1.0.0" }).pipe(
    Layer.provide(Mcp.layerServerStdio()),
    Layer.provide(NodeServices.layer)
  )
  NodeRuntime.runMain(Layer.launch(server))
} else {
  Effect.runPromise(main).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
