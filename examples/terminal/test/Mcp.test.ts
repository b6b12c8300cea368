// @module-tag slow
import { AgentLoop } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { NodeServices } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { parse } from "../src/Args.ts"
import * as Demo from "../src/Demo.ts"
import * as McpServers from "../src/McpServers.ts"
import * as Tools from "../src/tools.ts"
import { plain } from "./plain.ts"

const everything = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js")
const command = `'${process.execPath}' '${everything}' stdio`

describe("--mcp", () => {
  it("is read from the command line, as often as given", () => {
    expect(parse(["--mcp", "npx server", "How", "far?", "--mcp", "other --flag"], undefined)).toEqual({
      program: "agent",
      mcp: ["npx server", "other --flag"],
      asked: "How far?"
    })
    expect(parse(["--program", "research", "Why?"], undefined)).toEqual({ program: "research", mcp: [], asked: "Why?" })
  })

  it.live("adds the server's tools to the agent's, which the model can call", () =>
    Effect.gen(function*() {
      const { started, toolkit } = yield* McpServers.load([command], Tools.toolkit)
      expect(started[0]!.tools).toContain("echo")
      expect(toolkit.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["calculator", "echo", "get-sum"]))
      let out = ""
      const ended = yield* Demo.run("Echo hello", (text) => Effect.sync(() => out += text), { toolkit })
      expect(ended._tag).toBe("Stop")
      expect(plain(out)).toMatch(/✓ echo \S+ "Echo: hello"/)
    }).pipe(
      Effect.scoped,
      Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer([
        // The demo has a budget: a priced model.
        MockLanguageModel.callsTurn([{ name: "echo", arguments: { message: "hello" } }], { model: "gpt-5-mini" }),
        MockLanguageModel.textTurn("It echoed hello.", { model: "gpt-5-mini" })
      ])))),
      Effect.provide(NodeServices.layer)
    ))

  it.live("with two servers, prefixes each one's tools", () =>
    Effect.gen(function*() {
      const { toolkit } = yield* McpServers.load([command, command], Tools.toolkit)
      const names = toolkit.tools.map((tool) => tool.name)
      expect(names).toEqual(expect.arrayContaining(["mcp1_echo", "mcp2_echo", "calculator"]))
    }).pipe(Effect.scoped, Effect.provide(NodeServices.layer)))

  it.live(
    "the demo prints the server's tools, runs, and exits",
    () =>
      Effect.callback<{ readonly error: unknown; readonly stdout: string }>((resume) => {
        const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))
        execFile(process.execPath, ["--conditions=@agentloop/source", main, "--mcp", command], {
          env: { ...process.env, AGENTLOOP_PROVIDER: "mock" },
          timeout: 60_000
        }, (error, stdout) => resume(Effect.succeed({ error, stdout })))
      }).pipe(Effect.map(({ error, stdout }) => {
        expect(error).toBeNull()
        expect(plain(stdout)).toMatch(/mcp · .+server-everything.+ · \d+ tools: echo, /)
        expect(plain(stdout)).toContain("✓ Stop")
      })),
    90_000
  )

  it.live(
    "a command that starts no MCP server is reported, with status 1",
    () =>
      Effect.callback<{ readonly code: number | null; readonly stderr: string }>((resume) => {
        const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))
        const child = execFile(process.execPath, ["--conditions=@agentloop/source", main, "--mcp", "exit 3"], {
          env: { ...process.env, AGENTLOOP_PROVIDER: "mock" },
          timeout: 60_000
        }, (_error, _stdout, stderr) => resume(Effect.succeed({ code: child.exitCode, stderr })))
      }).pipe(Effect.map(({ code, stderr }) => {
        expect(code).toBe(1)
        expect(stderr).toContain("agentloop demo: MCP")
      })),
    90_000
  )
})
