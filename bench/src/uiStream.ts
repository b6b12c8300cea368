/**
 * Encoding a run's events for a browser: the UI message stream against the
 * floor of framing the same events as JSON, and against agentloop's typed SSE.
 *
 * - baseline: `JSON.stringify` of each event into a `data:` frame, one string per chunk of events;
 * - `EventStream.encode(EventStream.agent)`: each event encoded with its Schema;
 * - `UIMessageStream.encode`: each event mapped to UI chunks (text deltas, tool parts, data parts) and framed;
 * - `ResumableStream`: a run executed by the server's registry (`LiveRuns`), the client attached to it, each
 *   recorded event keyed and sent with its SSE id; a connection's fixed costs included (the run's options'
 *   fingerprint, its log read, the run started). The run's `AgentLoop` stands in: it streams the same events,
 *   recording nothing, on an empty log in memory.
 *
 * The run: turns of 200 text deltas and a tool call each, delivered in chunks of 64 events as a provider's
 * decoder delivers them.
 */
import {
  AgentLoop,
  Checkpointer,
  EventStream,
  Item,
  LiveRuns,
  ResumableStream,
  TokenUsage,
  UIMessageStream
} from "@agentloop/core"
import { Duration, Effect, Layer, Scope, Stream } from "effect"
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

// The server's side of a resumable run: a registry for the server's lifetime (a scope never closed), and an agent
// that streams the run.
const server = await Effect.runPromise(Layer.buildWithScope(
  Layer.mergeAll(
    LiveRuns.layer,
    Checkpointer.layerMemory,
    Layer.succeed(
      AgentLoop.AgentLoop,
      // The run's events hold no `Finished`: they are those of a run of any output.
      AgentLoop.AgentLoop.of({ stream: () => source as Stream.Stream<never>, run: () => Effect.never })
    )
  ),
  Effect.runSync(Scope.make())
))
let runs = 0
const resumable = () =>
  Effect.runPromise(
    Effect.flatMap(
      ResumableStream.events({ input: "bench", runId: `bench-${runs++}` }),
      (entries) => Stream.runDrain(ResumableStream.encode(entries, EventStream.agent, never))
    ).pipe(Effect.provide(server))
  )

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
    { name: "UIMessageStream.encode (AI SDK UI messages)", run: run(UIMessageStream.encode(source, never)) },
    { name: "ResumableStream (a run served by LiveRuns, with ids)", run: resumable }
  ]
})
