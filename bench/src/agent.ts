/**
 * What `AgentLoop` adds per delta: one model turn of 100,000 text deltas from the
 * mock model (no HTTP), consumed
 *
 * - baseline: straight from `LanguageModel.streamTurn`;
 * - through `Loop.loop` + `TurnStream.streamUntilComplete` written by hand (the seed's pattern);
 * - through `AgentLoop.stream` (events, accounting, the stop predicate).
 */
import { AgentLoop, Item, LanguageModel, Loop, TurnStream } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { Effect, Layer, Stream } from "effect"
import { compare } from "./measure.ts"

const deltas = 100_000
const turn = MockLanguageModel.textTurn("x".repeat(deltas))
const input = [Item.userMessage("go")]

const run = <E>(stream: Stream.Stream<unknown, E, LanguageModel.LanguageModel | AgentLoop.AgentLoop>) => () =>
  Effect.runPromise(
    Stream.runDrain(stream).pipe(
      Effect.provide(AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer([turn], { chunkSize: 1 }))))
    )
  )

const model = Stream.unwrap(LanguageModel.LanguageModel.useSync((lm) => lm.streamTurn(input, {})))

await compare({
  title: `AgentLoop per delta: one turn of ${deltas.toLocaleString("en-US")} text deltas from the mock model`,
  units: deltas,
  unit: "delta",
  baseline: { name: "LanguageModel.streamTurn alone", run: run(model) },
  cases: [
    {
      name: "Loop.loop + streamUntilComplete",
      run: run(Loop.loop(0, () => model.pipe(TurnStream.streamUntilComplete(() => Loop.stop))))
    },
    {
      name: "AgentLoop.stream",
      run: run(Stream.unwrap(AgentLoop.AgentLoop.useSync((agent) => agent.stream({ input }))))
    }
  ]
})
