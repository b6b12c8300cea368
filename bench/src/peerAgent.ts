/**
 * What an agent iteration costs: a model turn that calls one tool, and the
 * tool's run. Every framework runs the script of `agentScript.ts` (runs of
 * ten turns, nine calling `add`, then the answer) on its own mock model fed
 * the same deltas, in process, so the figures are the frameworks' own cost:
 *
 * - baseline: the AI SDK's `generateText` (no streaming) — issue 20's goal 4
 *   holds `AgentLoop`'s streaming iteration to at most its cost;
 * - the AI SDK's `streamText`, its full stream read part by part;
 * - LangGraph.js's prebuilt ReAct agent, `invoke`, and `stream` in `messages`
 *   mode (the model's chunks as they come);
 * - `AgentLoop.stream`, its events read one by one, and `AgentLoop.run`.
 */
import { AgentLoop } from "@agentloop/core"
import type { AgentEvent } from "@agentloop/core"
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import { checkLast, checkResult, model, options, turns } from "./agentScript.ts"
import * as AiSdk from "./aiSdkModel.ts"
import * as LangGraph from "./langchainModel.ts"
import { compare } from "./measure.ts"

const runs = 20

const runtime = ManagedRuntime.make(AgentLoop.layer.pipe(Layer.provide(model)))

const agentloopStream = () =>
  runtime.runPromise(Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    let last: AgentEvent.AgentEvent | undefined
    yield* Stream.runForEach(agent.stream(options), (event) => Effect.sync(() => (last = event)))
    checkLast(last)
  }))

const agentloopRun = () =>
  runtime.runPromise(Effect.map(AgentLoop.AgentLoop.use((agent) => agent.run(options)), checkResult))

const graph = LangGraph.agent()

const times = (once: () => Promise<void>) => async () => {
  for (let i = 0; i < runs; i++) await once()
}

const names = {
  generateText: "AI SDK generateText",
  streamText: "AI SDK streamText (fullStream read)",
  langgraphInvoke: "LangGraph.js ReAct agent, invoke",
  langgraphStream: "LangGraph.js ReAct agent, stream (messages)",
  stream: "agentloop AgentLoop.stream (events read)",
  run: "agentloop AgentLoop.run"
}

try {
  await compare({
    title: `agent iteration: runs of ${turns} turns (a call of one tool each but the last), mock models, ${runs} runs`,
    label: "agent iteration (a turn with one tool call)",
    units: runs * turns,
    unit: "turn",
    rounds: 7,
    baseline: { name: names.generateText, run: times(AiSdk.generateRun) },
    cases: [
      { name: names.streamText, run: times(() => AiSdk.streamRun()) },
      { name: names.langgraphInvoke, run: times(() => LangGraph.invokeRun(graph)) },
      { name: names.langgraphStream, run: times(() => LangGraph.streamRun(graph)) },
      { name: names.stream, run: times(agentloopStream) },
      { name: names.run, run: times(agentloopRun) }
    ],
    ratios: [
      { of: names.stream, to: names.generateText, goal: { atMost: 1, source: "issue 20 goal 4; 1.9–2x quoted" } },
      { of: names.stream, to: names.streamText, goal: { atMost: 1, source: "issue 20: stays ahead; 0.5x quoted" } },
      {
        of: names.stream,
        to: names.langgraphStream,
        goal: { atMost: 1, source: "issue 20: stays ahead; 0.25x quoted" }
      },
      { of: names.run, to: names.generateText },
      { of: names.run, to: names.langgraphInvoke }
    ]
  })
} finally {
  await runtime.dispose()
}
