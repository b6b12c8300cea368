/**
 * What a tool call costs when the tool is behind MCP: 200 sequential calls of
 * `add` through `Toolkit.executeAllSafe` (argument check, span, output), with
 * the connection open before timing starts:
 *
 * - baseline: the plain agentloop tool, in process;
 * - the same tool served by `Mcp.serve` in a child process, over stdio;
 * - the same tool served by `Mcp.serve` over streamable HTTP on loopback;
 * - `get-sum` of `@modelcontextprotocol/server-everything` (the official SDK's server), over stdio.
 */
import { type Item, Toolkit } from "@agentloop/core"
import { Mcp } from "@agentloop/mcp"
import { NodeHttpServer, NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { FetchHttpClient, HttpRouter } from "effect/http"
import * as Http from "node:http"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { add } from "./mcpServer.ts"
import { compare } from "./measure.ts"

const calls = 200

const call = (name: string, index: number): Item.FunctionCall => ({
  type: "function_call",
  id: `fc_${index}`,
  status: "completed",
  call_id: `c${index}`,
  name,
  arguments: JSON.stringify({ a: index, b: 1 })
})

const sequential = (toolkit: Toolkit.Toolkit, name: string) => () =>
  Effect.runPromise(Effect.gen(function*() {
    for (let index = 0; index < calls; index++) {
      const [result] = yield* Toolkit.executeAllSafe(toolkit, [call(name, index)])
      if (result?.outcome !== "success") return yield* Effect.die(new Error(`${name}: ${result?.output.output}`))
    }
  }))

const servedOverHttp = Effect.gen(function*() {
  const server = Http.createServer()
  yield* Layer.build(
    HttpRouter.serve(
      Mcp.serve(Toolkit.make(add), { name: "bench-http", version: "1.0.0" }).pipe(
        Layer.provide(Mcp.layerServerHttp({ path: "/mcp" }))
      ),
      { disableListenLog: true, disableLogger: true }
    ).pipe(Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" })))
  )
  yield* Effect.addFinalizer(() => Effect.sync(() => server.closeAllConnections()))
  const address = server.address()
  return `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/mcp`
})

await Effect.runPromise(
  Effect.gen(function*() {
    const script = fileURLToPath(new URL("./mcpServer.ts", import.meta.url))
    const stdio = yield* Mcp.toolkit(
      Mcp.stdio({ command: process.execPath, args: ["--conditions=@agentloop/source", script, "serve"] })
    )
    const http = yield* Mcp.toolkit(Mcp.http({ url: yield* servedOverHttp }))
    const everything = yield* Mcp.toolkit(Mcp.stdio({
      command: process.execPath,
      args: [createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]
    }))
    yield* Effect.promise(() =>
      compare({
        title: `A tool call behind MCP (${calls} sequential calls of add through Toolkit.executeAllSafe)`,
        units: calls,
        unit: "call",
        baseline: { name: "plain agentloop tool, in process", run: sequential(Toolkit.make(add), "add") },
        cases: [
          { name: "Mcp.serve over stdio, child process", run: sequential(stdio, "add") },
          { name: "Mcp.serve over streamable HTTP, loopback", run: sequential(http, "add") },
          { name: "server-everything get-sum over stdio", run: sequential(everything, "get-sum") }
        ]
      })
    )
  }).pipe(Effect.scoped, Effect.provide(Layer.merge(NodeServices.layer, FetchHttpClient.layer)))
)
