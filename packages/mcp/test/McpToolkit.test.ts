// @module-tag slow
/**
 * `Mcp.toolkit` against a real third-party server: `@modelcontextprotocol/server-everything`
 * over stdio, in a child process.
 */
import { AgentLoop, Approval, Toolkit } from "@agentloop/core"
import { MockLanguageModel, SpanRecorder } from "@agentloop/testing"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import type { Scope } from "effect"
import { Mcp } from "../src/index.ts"
import { call, childPids, everything, everythingScript, isAlive } from "./fixtures.ts"

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | NodeServices.NodeServices>) =>
  effect.pipe(Effect.scoped, Effect.provide(NodeServices.layer))

const one = (toolkit: Toolkit.Toolkit, name: string, args: unknown) =>
  Effect.map(Toolkit.executeAllSafe(toolkit, [call(name, args)]), ([result]) => result!)

describe.concurrent("Mcp.toolkit over stdio", () => {
  it.live("lists the server's tools with their input schemas as the server wrote them", () =>
    run(Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything())
      const names = toolkit.tools.map((tool) => tool.name)
      expect(names).toEqual(expect.arrayContaining(["echo", "get-sum", "get-env", "get-tiny-image"]))
      // A tool the server requires to run as a task cannot be called without tasks.
      expect(names).not.toContain("simulate-research-query")
      expect(toolkit.byName.get("get-sum")?.parameters).toEqual({
        type: "object",
        properties: {
          a: { type: "number", description: "First number" },
          b: { type: "number", description: "Second number" }
        },
        required: ["a", "b"],
        $schema: "http://json-schema.org/draft-07/schema#"
      })
      expect(toolkit.byName.get("echo")?.description).toBe("Echoes back the input string")
    })))

  it.live("prefixes the names", () =>
    run(Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything(), { prefix: "all_" })
      expect(toolkit.byName.has("all_echo")).toBe(true)
      expect(toolkit.byName.has("echo")).toBe(false)
      const result = yield* one(toolkit, "all_echo", { message: "hi" })
      expect(result.output.output).toBe(JSON.stringify("Echo: hi"))
    })))

  it.live("runs an agent whose model calls the server's tools", () =>
    Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything())
      const agent = yield* AgentLoop.AgentLoop
      const events = yield* agent.stream({ input: "Add 2 and 3, then echo hi", toolkit }).pipe(Stream.runCollect)
      const results = events.flatMap((event) => event._tag === "ToolResult" ? [event] : [])
      expect(results.map((result) => [result.call.name, result.outcome, JSON.parse(result.output.output)])).toEqual([
        ["get-sum", "success", "The sum of 2 and 3 is 5."],
        ["echo", "success", "Echo: hi"]
      ])
      const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
      // The model was offered the server's own schema.
      expect(requests[0]!.options.tools?.find((tool) => tool.name === "echo")?.parameters).toMatchObject({
        properties: { message: { type: "string", description: "Message to echo" } },
        required: ["message"]
      })
      expect(events.at(-1)).toMatchObject({ _tag: "Finished", result: { _tag: "Stopped", output: "5, and: Echo: hi" } })
    }).pipe(
      Effect.scoped,
      Effect.provide(AgentLoop.layer),
      Effect.provide(MockLanguageModel.layer([
        MockLanguageModel.callsTurn([{ name: "get-sum", arguments: { a: 2, b: 3 } }]),
        MockLanguageModel.callsTurn([{ name: "echo", arguments: { message: "hi" } }]),
        MockLanguageModel.textTurn("5, and: Echo: hi")
      ])),
      Effect.provide(NodeServices.layer)
    ))

  it.live("refuses arguments that break the schema before any call, with every violation", () =>
    run(Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything())
      const result = yield* one(toolkit, "get-sum", { a: "two" })
      expect(result.outcome).toBe("invalid_arguments")
      const reason = result.outcome === "success" ? "" : result.reason
      expect(reason).toContain(`Instance type "string" is invalid. Expected "number".`)
      expect(reason).toContain(`["a"]`)
      expect(reason).toContain(`required property "b"`)
      // Not JSON, not an object: also mistakes, and the server is still there.
      expect((yield* one(toolkit, "echo", "{not json")).outcome).toBe("invalid_arguments")
      expect((yield* one(toolkit, "echo", [1, 2])).outcome).toBe("invalid_arguments")
      expect((yield* one(toolkit, "echo", { message: "still here" })).output.output).toBe(
        JSON.stringify("Echo: still here")
      )
    })))

  it.live("a result with isError is a failure the model reads", () =>
    run(Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything())
      // The schema says a number; the server wants a positive integer and says so in an error result.
      const result = yield* one(toolkit, "get-resource-reference", { resourceId: 1.5 })
      expect(result.outcome).toBe("failure")
      expect(JSON.parse(result.output.output).error).toContain("Invalid resourceId: 1.5")
      expect(JSON.parse(result.output.output).error).toContain("McpToolError")
    })))

  it.live("an image is attached as an image part of the output's content, and the text says where it was", () =>
    run(Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything())
      const result = yield* one(toolkit, "get-tiny-image", {})
      expect(result.outcome).toBe("success")
      const text: string = JSON.parse(result.output.output)
      const [, size] = /\[image 1 attached: image\/png, (\d+) bytes\]/.exec(text) ?? []
      expect(text).toBe(
        `Here's the image you requested:\n[image 1 attached: image/png, ${size} bytes]\nThe image above is the MCP logo.`
      )
      const [image, ...others] = result.output.content ?? []
      expect(others).toEqual([])
      expect(image?.type).toBe("input_image")
      const url = image?.type === "input_image" ? image.image_url : ""
      expect(url.startsWith("data:image/png;base64,")).toBe(true)
      // The bytes the server sent: a PNG of the size the text gives.
      const bytes = Buffer.from(url.slice("data:image/png;base64,".length), "base64")
      expect(bytes.length).toBe(Number(size))
      expect([...bytes.subarray(0, 8)]).toEqual([137, 80, 78, 71, 13, 10, 26, 10])
      // Not in the output's JSON: the model is shown the image, not its base64.
      expect(result.output.output.length).toBeLessThan(200)
    })))

  it.live("with images: \"describe\", an image is a placeholder in the text and nothing is attached", () =>
    run(Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything(), { images: "describe" })
      const result = yield* one(toolkit, "get-tiny-image", {})
      expect(result.outcome).toBe("success")
      expect(JSON.parse(result.output.output)).toMatch(
        /^Here's the image you requested:\n\[image: image\/png, \d+ bytes\]\n/
      )
      expect(result.output.content).toBeUndefined()
    })))

  it.live("an agent's next request carries the server's image to the model", () =>
    Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything())
      const agent = yield* AgentLoop.AgentLoop
      yield* agent.run({ input: "Show me the logo", toolkit })
      const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
      const output = requests[1]!.history.find((item) => item.type === "function_call_output")
      expect(output?.type === "function_call_output" && output.content?.map((part) => part.type)).toEqual([
        "input_image"
      ])
    }).pipe(
      Effect.scoped,
      Effect.provide(AgentLoop.layer),
      Effect.provide(MockLanguageModel.layer([
        MockLanguageModel.callsTurn([{ name: "get-tiny-image", arguments: {} }]),
        MockLanguageModel.textTurn("It is the MCP logo.")
      ])),
      Effect.provide(NodeServices.layer)
    ))

  it.live("asks for approval as any agentloop tool does", () =>
    run(Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything(), {
        needsApproval: (tool, input) => tool === "echo" && input.message === "rm -rf"
      })
      const seen: Array<string> = []
      const approver = Approval.layer((request) =>
        Effect.sync(() => {
          seen.push(request.tool)
          return Approval.denied("not that")
        })
      )
      const denied = yield* one(toolkit, "echo", { message: "rm -rf" }).pipe(Effect.provide(approver))
      expect(denied.outcome).toBe("denied")
      expect(seen).toEqual(["echo"])
      expect((yield* one(toolkit, "echo", { message: "ls" }).pipe(Effect.provide(approver))).outcome).toBe("success")
      // Without an approver, a call that needs approval is not run.
      const always = yield* Mcp.toolkit(everything(), { needsApproval: true })
      expect((yield* one(always, "echo", { message: "ls" })).outcome).toBe("denied")
      expect((yield* one(always, "echo", { message: "ls" }).pipe(Effect.provide(Approval.allowAll))).outcome).toBe(
        "success"
      )
    })))

  it.live("stops a call at its timeout", () =>
    run(Effect.gen(function*() {
      // The limit holds for the echo after too: far above what an echo takes on a busy machine (200 ms was not), far
      // below the operation's 30 s.
      const toolkit = yield* Mcp.toolkit(everything(), { timeout: "3 seconds" })
      const result = yield* one(toolkit, "trigger-long-running-operation", { duration: 30, steps: 2 })
      expect(result.outcome).toBe("timeout")
      // The server is still answering.
      expect((yield* one(toolkit, "echo", { message: "after" })).outcome).toBe("success")
    })))

  it.live("passes env to the server, and no other variable unless asked", () =>
    run(
      Effect.gen(function*() {
        process.env.AGENTLOOP_MCP_TEST_SECRET = "do-not-leak"
        const env = (toolkit: Toolkit.Toolkit) =>
          Effect.map(one(toolkit, "get-env", {}), (result) => JSON.parse(JSON.parse(result.output.output)))
        const plain = yield* env(yield* Mcp.toolkit(everything({ env: { AGENTLOOP_MCP_MARKER: "m-1" } })))
        expect(plain.AGENTLOOP_MCP_MARKER).toBe("m-1")
        expect(plain.PATH).toBe(process.env.PATH)
        expect(plain.AGENTLOOP_MCP_TEST_SECRET).toBeUndefined()
        const inherited = yield* env(yield* Mcp.toolkit(everything({ env: { A: "b" }, inheritEnv: true })))
        expect(inherited.AGENTLOOP_MCP_TEST_SECRET).toBe("do-not-leak")
        expect(inherited.A).toBe("b")
      }).pipe(Effect.ensuring(Effect.sync(() => delete process.env.AGENTLOOP_MCP_TEST_SECRET)))
    ))

  it.live("a server that cannot start fails the toolkit with a typed error", () =>
    Effect.gen(function*() {
      const error = yield* Mcp.toolkit(Mcp.stdio({ command: "/nonexistent/mcp-server" })).pipe(run, Effect.flip)
      expect(error._tag).toBe("McpClientError")
      expect(error.reason._tag).toBe("TransportError")
    }))

  it.live("each call is an execute_tool span naming the server", () =>
    Effect.gen(function*() {
      const recorder = SpanRecorder.make()
      yield* Effect.gen(function*() {
        const toolkit = yield* Mcp.toolkit(everything())
        yield* one(toolkit, "echo", { message: "traced" })
      }).pipe(run, Effect.withTracer(recorder.tracer))
      const span = recorder.spans.find((span) => span.name === "execute_tool echo")
      expect(span).toBeDefined()
      expect(Object.fromEntries(span!.attributes)).toMatchObject({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "echo",
        "mcp.method.name": "tools/call",
        "mcp.protocol.version": "2025-11-25",
        "network.transport": "pipe",
        "agentloop.mcp.server.name": expect.stringContaining("everything"),
        "agentloop.tool.outcome": "success"
      })
      // Connecting and listing is a span of its own.
      const connecting = recorder.spans.find((span) => span.name === "Mcp.toolkit")
      expect(connecting?.attributes.get("agentloop.mcp.transport")).toBe("Stdio")
      expect(connecting?.attributes.get("agentloop.mcp.tools")).toBeGreaterThan(5)
    }))

  it.live("names the server as told", () =>
    Effect.gen(function*() {
      const recorder = SpanRecorder.make()
      yield* Effect.gen(function*() {
        const toolkit = yield* Mcp.toolkit(everything({ name: "kitchen-sink" }))
        yield* one(toolkit, "echo", { message: "traced" })
      }).pipe(run, Effect.withTracer(recorder.tracer))
      const span = recorder.spans.find((span) => span.name === "execute_tool echo")
      expect(span?.attributes.get("agentloop.mcp.server.name")).toBe("kitchen-sink")
    }))
})

// These find the server's process by its command line: one server at a time.
describe("Mcp.toolkit over stdio, its server's process", () => {
  it.live("closing the scope ends the server's process", () =>
    Effect.gen(function*() {
      const pids = yield* Effect.gen(function*() {
        const toolkit = yield* Mcp.toolkit(everything())
        expect((yield* one(toolkit, "echo", { message: "x" })).outcome).toBe("success")
        return yield* childPids(everythingScript)
      }).pipe(run)
      expect(pids).toHaveLength(1)
      expect(isAlive(pids[0]!)).toBe(false)
      expect(yield* childPids(everythingScript)).toEqual([])
    }))

  it.live("a server killed mid-run fails its calls with a readable mistake; the next toolkit reconnects", () =>
    run(Effect.gen(function*() {
      const toolkit = yield* Mcp.toolkit(everything())
      const [pid] = yield* childPids(everythingScript)
      const running = yield* Effect.forkChild(
        one(toolkit, "trigger-long-running-operation", { duration: 30, steps: 30 })
      )
      yield* Effect.sleep("100 millis")
      process.kill(pid!, "SIGKILL")
      const cut = yield* Fiber.join(running)
      expect(cut.outcome).toBe("failure")
      expect(JSON.parse(cut.output.output).error).toMatch(/MCP process exited|MCP server closed stdout/)
      const after = yield* one(toolkit, "echo", { message: "anyone?" })
      expect(after.outcome).toBe("failure")
      const again = yield* Mcp.toolkit(everything())
      expect((yield* one(again, "echo", { message: "back" })).output.output).toBe(JSON.stringify("Echo: back"))
    })))
})
