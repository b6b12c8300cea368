/**
 * Encoding a run's events for a browser: the UI message stream against the
 * floor of framing the same events as JSON, and against agentloop's typed SSE.
 *
 * - baseline: `JSON.stringify` of each event into a `data:` frame, one string per chunk of events;
 * - `EventStream.encode(EventStream.agent)`: each event encoded with its Schema;
 * - `UIMessageStream.encode`: each event mapped to UI chunks (text deltas, tool parts, data parts) and framed.
 *
 * The run: turns of 200 text deltas and a tool call each, delivered in chunks of 64 events as a provider's
 * decoder delivers them.
 */
import { EventStream, Item, TokenUsage, UIMessageStream } from "@agentloop/core"
import type { AgentLoop } from "@agentloop/core"
import { Duration, Effect, Stream } from "effect"
import { compare } from "./measure.ts"

const turns = 50
const deltas = 200

const call: Item.FunctionCall = {
  type: "function_call",
  id: "fc_1",
  status: "completed",
  call_id: "call_1",
  name: "add",
  arguments: "{\"a\":2,\"b\":3}"
}

const usage = TokenUsage.make(20, 10)
const accounting = { usage, cost: 0.00004, elapsedMs: 10, steps: 1, lastItems: [] }

const turn = (step: number): ReadonlyArray<AgentLoop.AgentEvent> => [
  { _tag: "TurnStarted", step },
  ...Array.from({ length: deltas }, (): AgentLoop.AgentEvent => ({
    _tag: "Delta",
    step,
    delta: { type: "text_delta", delta: "word " }
  })),
  {
    _tag: "Delta",
    step,
    delta: { type: "function_call_done", call_id: call.call_id, name: call.name, arguments: call.arguments }
  },
  {
    _tag: "TurnCompleted",
    step,
    turn: { items: [Item.assistantMessage("word ".repeat(deltas)), call], usage, stopReason: "tool_calls" },
    cost: 0.00004,
    accounting
  },
  {
    _tag: "ToolResult",
    step,
    outcome: "success",
    call,
    output: { type: "function_call_output", id: "fco_1", status: "completed", call_id: call.call_id, output: "5" }
  }
]

const events = Array.from({ length: turns }, (_, i) => turn(i + 1)).flat()
const source = Stream.fromIterable(events).pipe(Stream.rechunk(64))
const never = { keepAlive: Duration.infinity }

const run = (stream: Stream.Stream<string>) => () => Effect.runPromise(Stream.runDrain(stream))

await compare({
  title: `a run's events to a browser: ${events.length.toLocaleString("en-US")} events`,
  units: events.length,
  unit: "event",
  baseline: {
    name: "JSON.stringify into data: frames (floor)",
    run: run(
      source.pipe(Stream.mapArray((chunk) => [chunk.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("")] as const))
    )
  },
  cases: [
    {
      name: "EventStream.encode (typed SSE, Schema per event)",
      run: run(EventStream.encode(EventStream.agent, never)(source))
    },
    { name: "UIMessageStream.encode (AI SDK UI messages)", run: run(UIMessageStream.encode(source, never)) }
  ]
})
