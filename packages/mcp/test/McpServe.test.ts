// @module-tag slow
/**
 * `Mcp.serve` tested with the official TypeScript SDK's client: over stdio
 * against a child process running `serveStdio.ts`, and over streamable HTTP
 * against a server in this process.
 */
import { Tool } from "@agentloop/core"
import { TestProcess } from "@agentloop/testing"
import { NodeHttpServer } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { spawn } from "node:child_process"
import * as Http from "node:http"
import { fileURLToPath } from "node:url"
import { Mcp } from "../src/index.ts"
import { noise, screenshot, toolkit } from "./servedToolkit.ts"

// The server's processes start from one bundle of its script and the packages' sources.
const server = TestProcess.bundled(fileURLToPath(new URL("./serveStdio.ts", import.meta.url)), {
  conditions: ["@agentloop/source"]
})
const nodeArgs = Effect.map(server.path, (script) => ["--no-warnings", "--enable-source-maps", script])

/** An SDK client connected through `transport`, closed with the scope. */
const connect = (transport: Transport) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "sdk-test-client", version: "1.0.0" })
      await client.connect(transport)
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

const stdioClient = Effect.flatMap(
  nodeArgs,
  (args) => connect(new StdioClientTransport({ command: process.execPath, args, stderr: "ignore" }))
)

/** Serves the toolkit over streamable HTTP on a random local port for the scope; returns the endpoint. */
const serveHttp = (options: Omit<Parameters<typeof Mcp.layerServerHttp>[0], "path"> = {}) =>
  Effect.gen(function*() {
    const nodeServer = Http.createServer()
    yield* Layer.build(
      HttpRouter.serve(
        Mcp.serve(toolkit, { name: "agentloop-http-test", version: "1.0.0" }).pipe(
          Layer.provide(Mcp.layerServerHttp({ ...options, path: "/mcp" }))
        ),
        { disableLogger: true, disableListenLog: true }
      ).pipe(Layer.provide(NodeHttpServer.layer(() => nodeServer, { port: 0, host: "127.0.0.1" })))
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
    const address = nodeServer.address()
    return new URL(`http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/mcp`)
  })

const httpClient = Effect.flatMap(serveHttp(), (url) => connect(new StreamableHTTPClientTransport(url)))

const text = (result: Awaited<ReturnType<Client["callTool"]>>): string => {
  const content = result.content as ReadonlyArray<{ readonly type: string; readonly text?: string }>
  return content.map((block) => block.text ?? "").join("")
}

// The same behaviour over both transports.
for (const [transport, client] of [["stdio", stdioClient], ["HTTP", httpClient]] as const) {
  describe(`Mcp.serve over ${transport}, with the SDK's client`, () => {
    it.live("lists the tools with their schemas", () =>
      Effect.gen(function*() {
        const sdk = yield* client
        const { tools } = yield* Effect.promise(() => sdk.listTools())
        expect(tools.map((tool) => tool.name)).toEqual(toolkit.tools.map((tool) => tool.name))
        const add = tools.find((tool) => tool.name === "add")!
        expect(add.description).toBe("Adds two numbers")
        expect(add.inputSchema).toEqual(Tool.toParameters(toolkit.byName.get("add")!.input))
        expect(add.outputSchema).toBeUndefined()
        // Only an output that is an object declares a schema.
        expect(tools.find((tool) => tool.name === "weather")!.outputSchema).toMatchObject({
          type: "object",
          required: ["city", "celsius"]
        })
        // A tool without arguments still has an object root, as MCP requires.
        expect(tools.find((tool) => tool.name === "shout")!.inputSchema.type).toBe("object")
      }).pipe(Effect.scoped))

    it.live("answers calls: text, and structured content where the tool declares an object output", () =>
      Effect.gen(function*() {
        const sdk = yield* client
        const sum = yield* Effect.promise(() => sdk.callTool({ name: "add", arguments: { a: 2, b: 3 } }))
        expect(sum.isError).toBeFalsy()
        expect(text(sum)).toBe("5")
        // The SDK's client checks structured content against the declared output schema.
        const weather = yield* Effect.promise(() => sdk.callTool({ name: "weather", arguments: { city: "Oslo" } }))
        expect(weather.structuredContent).toEqual({ city: "Oslo", celsius: 21 })
        expect(JSON.parse(text(weather))).toEqual({ city: "Oslo", celsius: 21 })
        const shouted = yield* Effect.promise(() => sdk.callTool({ name: "shout", arguments: {} }))
        expect(text(shouted)).toBe("shouted")
      }).pipe(Effect.scoped))

    it.live("sends what a tool attached after its text: images, embedded files and links", () =>
      Effect.gen(function*() {
        const sdk = yield* client
        const snapped = yield* Effect.promise(() => sdk.callTool({ name: "snap", arguments: {} }))
        expect(snapped.isError).toBeFalsy()
        expect(snapped.content).toEqual([
          { type: "text", text: "snapped" },
          { type: "text", text: "The page:" },
          { type: "image", mimeType: "image/png", data: Buffer.from(screenshot).toString("base64") },
          {
            type: "resource",
            resource: { uri: "page.pdf", mimeType: "application/pdf", blob: Buffer.from("%PDF-1.7").toString("base64") }
          },
          {
            type: "resource_link",
            uri: "https://example.com/static/logo.webp",
            name: "logo.webp",
            mimeType: "image/webp"
          },
          { type: "text", text: "[input_image 5 not sent: its data URL's content is not base64]" }
        ])
      }).pipe(Effect.scoped))

    it.live("a failure, bad arguments and a denied approval are isError results; the server goes on", () =>
      Effect.gen(function*() {
        const sdk = yield* client
        const failed = yield* Effect.promise(() => sdk.callTool({ name: "order", arguments: { item: "tea" } }))
        expect(failed.isError).toBe(true)
        expect(text(failed)).toBe(`Tool "order" failed: no tea left`)
        const bad = yield* Effect.promise(() => sdk.callTool({ name: "add", arguments: { a: "two" } }))
        expect(bad.isError).toBe(true)
        expect(text(bad)).toContain(`The arguments of tool "add" do not match its parameters`)
        expect(text(bad)).toContain(`["b"]`)
        // No approver in the server: its approval still applies, and denies.
        const erased = yield* Effect.promise(() => sdk.callTool({ name: "erase", arguments: { path: "/etc" } }))
        expect(erased.isError).toBe(true)
        expect(text(erased)).toContain("requires approval")
        // An unknown tool is a protocol error.
        const unknown = yield* Effect.promise(() => sdk.callTool({ name: "nope", arguments: {} })).pipe(
          Effect.catchDefect((error) => Effect.succeed(String(error)))
        )
        expect(unknown).toContain("nope")
        const sum = yield* Effect.promise(() => sdk.callTool({ name: "add", arguments: { a: 1, b: 1 } }))
        expect(text(sum)).toBe("2")
      }).pipe(Effect.scoped))
  })
}

describe("Mcp.serve over stdio", () => {
  it.live("writes nothing but protocol to standard output", () =>
    Effect.flatMap(
      nodeArgs,
      (args) =>
        Effect.promise(() =>
          new Promise<{ readonly stdout: string; readonly stderr: string }>((resolve, reject) => {
            const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"] })
            let stdout = ""
            let stderr = ""
            child.stdout.on("data", (chunk) => (stdout += String(chunk)))
            child.stderr.on("data", (chunk) => (stderr += String(chunk)))
            child.on("error", reject)
            child.on("exit", () => resolve({ stdout, stderr }))
            const send = (message: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`)
            send({
              id: 1,
              method: "initialize",
              params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
            })
            send({ method: "notifications/initialized" })
            send({ id: 2, method: "tools/call", params: { name: "shout", arguments: {} } })
            send({ id: 3, method: "tools/call", params: { name: "add", arguments: [1] } })
            send({ id: 4, method: "tools/call", params: { name: "add", arguments: { a: 1, b: 2 } } })
            const check = setInterval(() => {
              if (stdout.includes(`"id":4`)) {
                clearInterval(check)
                child.stdin.end()
                child.kill("SIGTERM")
              }
            }, 20)
          })
        ).pipe(Effect.map(({ stderr, stdout }) => {
          const lines = stdout.split("\n").filter((line) => line !== "")
          expect(lines.map((line) => JSON.parse(line).jsonrpc)).toEqual(["2.0", "2.0", "2.0", "2.0"])
          expect(stdout).not.toContain(noise)
          // What the tool printed went to standard error.
          expect(stderr).toContain(noise)
          // Arguments that are not an object are refused by the protocol layer, and the server answers the next call.
          expect(JSON.parse(lines[2]!).error.code).toBe(-32602)
          expect(JSON.parse(lines[3]!).result.content[0].text).toBe("3")
        }))
    ))
})

describe("Mcp.serve over HTTP, against a hostile client", () => {
  /** Posts `body` as a JSON-RPC message; the response's status, or the transport's failure when the server hung up. */
  const post = (url: URL, body: string, headers: Record<string, string> = {}) =>
    Effect.promise(() =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body
      }).then(async (response) => ({ status: response.status, text: await response.text() }), (error) => ({
        status: 0,
        text: String(error)
      }))
    )

  const initialize = (clientName: string) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: clientName, version: "1" } }
    })

  it.live("refuses a request body larger than maxBodySize without reading it all; the server goes on", () =>
    Effect.gen(function*() {
      const url = yield* serveHttp({ maxBodySize: "64 KiB" })
      const huge = yield* post(url, initialize("x".repeat(256 * 1024)))
      // Answered as a body that is not JSON (or the connection cut), never initialized.
      expect(huge.text).not.toContain("agentloop-http-test")
      expect(huge.status === 0 || huge.text.includes("-32700"), huge.text.slice(0, 200)).toBe(true)
      const small = yield* post(url, initialize("raw"))
      expect(small.status).toBe(200)
      expect(small.text).toContain("agentloop-http-test")
    }).pipe(Effect.scoped))

  it.live("arguments nested too deep to be written back are an isError result; the server goes on", () =>
    Effect.gen(function*() {
      const url = yield* serveHttp({})
      const response = yield* Effect.promise(() =>
        fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: initialize("raw")
        })
      )
      yield* Effect.promise(() => response.text())
      const headers = {
        "mcp-session-id": response.headers.get("mcp-session-id")!,
        "mcp-protocol-version": "2025-11-25"
      }
      const depth = 100_000
      // 200 KB: an argument JSON.stringify cannot write back (it overflows the stack a few thousand levels down).
      const deep = yield* post(
        url,
        `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":${"[".repeat(depth)}${
          "]".repeat(depth)
        },"b":1}}}`,
        headers
      )
      expect(deep.status, deep.text.slice(0, 300)).toBe(200)
      expect(deep.text.length).toBeLessThan(4_000)
      expect(deep.text).toContain(`"isError":true`)
      const add = yield* post(
        url,
        JSON.stringify({
          jsonrpc: "2.0",
          id: 3,
          method: "tools/call",
          params: { name: "add", arguments: { a: 1, b: 2 } }
        }),
        headers
      )
      expect(add.text).toContain(`"text":"3"`)
    }).pipe(Effect.scoped))

  it.live("keeps at most maxSessions sessions, ending the least recently used; an initialize is bounded to 64 KiB", () =>
    Effect.gen(function*() {
      const url = yield* serveHttp({ maxSessions: 2 })
      const open = Effect.gen(function*() {
        const response = yield* Effect.promise(() =>
          fetch(url, {
            method: "POST",
            headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
            body: initialize("raw")
          })
        )
        yield* Effect.promise(() => response.text())
        return response.headers.get("mcp-session-id")!
      })
      const list = (session: string) =>
        post(url, JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }), {
          "mcp-session-id": session,
          "mcp-protocol-version": "2025-11-25"
        })
      const first = yield* open
      // A DELETE refused for its origin ends nothing, and frees no place.
      const refused = yield* Effect.promise(() =>
        fetch(url, { method: "DELETE", headers: { "mcp-session-id": first, origin: "https://evil.example" } })
      )
      expect(refused.status).toBe(403)
      const second = yield* open
      expect((yield* list(first)).text).toContain(`"add"`)
      // The first was used last: opening a third ends the second.
      const third = yield* open
      expect((yield* list(second)).status).toBe(404)
      expect((yield* list(first)).text).toContain(`"add"`)
      expect((yield* list(third)).text).toContain(`"add"`)
      // What a session keeps of its initialize is bounded: a client name of 100 KiB is refused.
      const big = yield* post(url, initialize("x".repeat(100 * 1024)))
      expect(big.text).not.toContain("agentloop-http-test")
    }).pipe(Effect.scoped))
})
