import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema, Stream } from "effect"
import * as AgentEvent from "../src/agent/AgentEvent.ts"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Item from "../src/Item.ts"
import * as EventStream from "../src/stream/EventStream.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"

const png = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13])
const screenshot = Item.imageFromBytes(png, "image/png", { detail: "low" })

const capture = Tool.make({
  name: "capture",
  description: "Takes a screenshot of a page",
  input: Schema.Struct({ url: Schema.String }),
  output: Schema.Struct({ width: Schema.Finite, height: Schema.Finite }),
  execute: () => Effect.succeed({ width: 1, height: 1 }),
  content: (size) => [{ type: "input_text", text: `${size.width}x${size.height}:` }, screenshot]
})

const input = [
  Item.userMessage([
    { type: "input_text", text: "Does the page match this design?" },
    Item.fileFromBytes(new TextEncoder().encode("%PDF-1.7"), "application/pdf", { filename: "design.pdf" }),
    Item.imageUrl("https://example.com/mockup.png")
  ])
]

describe("images and files in an agent run", () => {
  it.effect("a tool's content rides in its output item to the next request, and every event crosses the SSE wire exactly", () =>
    Effect.gen(function*() {
      const agent = yield* AgentLoop.AgentLoop
      const events = yield* Stream.runCollect(agent.stream({ input, toolkit: Toolkit.make(capture) }))
      const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
      expect(requests[0]!.history).toStrictEqual(input)
      const output = requests[1]!.history.at(-1)
      expect(output).toStrictEqual({
        type: "function_call_output",
        id: "fco_call_0",
        status: "completed",
        call_id: "call_0",
        output: "{\"width\":1,\"height\":1}",
        content: [{ type: "input_text", text: "1x1:" }, screenshot]
      })
      const result = events.find((event) => event._tag === "ToolResult")
      expect(result?._tag === "ToolResult" && result.output).toStrictEqual(output)
      // What a browser reads back from the server's bytes: the same events, images and files included.
      const read = yield* Stream.runCollect(
        EventStream.decode(EventStream.agent)(EventStream.encodeBytes(EventStream.agent)(Stream.fromIterable(events)))
      )
      expect(read).toStrictEqual(events)
      expect(
        Schema.decodeUnknownSync(Schema.Array(AgentEvent.AgentEvent))(
          JSON.parse(JSON.stringify(Schema.encodeSync(Schema.Array(AgentEvent.AgentEvent))(events)))
        )
      ).toStrictEqual(events)
    }).pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer([
      MockLanguageModel.callsTurn([{ name: "capture", arguments: { url: "https://example.com" } }]),
      MockLanguageModel.textTurn("It matches.")
    ]))))))
})

describe("Tool content", () => {
  it.effect("is left out when a tool shows nothing, and a content function that throws is the tool's defect", () =>
    Effect.gen(function*() {
      const broken = Tool.make({
        name: "broken",
        description: "Shows nothing it can",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => Effect.succeed("done"),
        content: () => {
          throw new Error("no renderer")
        }
      })
      const plain = Tool.make({
        name: "plain",
        description: "Shows nothing",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => Effect.succeed("done")
      })
      const call = (name: string): Item.FunctionCall => ({
        type: "function_call",
        id: `fc_${name}`,
        status: "completed",
        call_id: name,
        name,
        arguments: "{}"
      })
      const [fails, succeeds] = yield* Toolkit.executeAllSafe(Toolkit.make(broken, plain), [
        call("broken"),
        call("plain")
      ])
      expect(fails).toMatchObject({ outcome: "defect", reason: expect.stringContaining("no renderer") })
      expect(succeeds?.output).toStrictEqual({
        type: "function_call_output",
        id: "fco_plain",
        status: "completed",
        call_id: "plain",
        output: "\"done\""
      })
    }))
})
