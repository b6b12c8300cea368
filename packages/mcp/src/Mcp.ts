/**
 * MCP for agentloop: an MCP server's tools as a `Toolkit` ({@link toolkit}
 * over {@link stdio} or {@link http}), and a `Toolkit` as an MCP server
 * ({@link serve} on {@link layerServerStdio} or {@link layerServerHttp}).
 *
 * @example
 * ```ts
 * import { AgentLoop } from "@agentloop/core"
 * import { Mcp } from "@agentloop/mcp"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { NodeServices } from "@effect/platform-node"
 * import { Effect, Layer } from "effect"
 * import { createRequire } from "node:module"
 *
 * // An MCP server over stdio (here the reference "everything" server); its tools become a Toolkit.
 * const everything = Mcp.stdio({
 *   command: process.execPath,
 *   args: [createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
 *   env: { LOG_LEVEL: "warn" }
 * })
 *
 * const program = Effect.gen(function*() {
 *   const toolkit = yield* Mcp.toolkit(everything, { timeout: "30 seconds" })
 *   const agent = yield* AgentLoop.AgentLoop
 *   const result = yield* agent.run({ input: "Echo hi", toolkit })
 *   if (result._tag === "Stopped") console.log(result.output) // The server echoed hi.
 * }).pipe(Effect.scoped) // closing the scope ends the server's process
 *
 * const model = MockLanguageModel.layer([
 *   MockLanguageModel.callsTurn([{ name: "echo", arguments: { message: "hi" } }]),
 *   MockLanguageModel.textTurn("The server echoed hi.")
 * ])
 * Effect.runPromise(program.pipe(
 *   Effect.provide(AgentLoop.layer),
 *   Effect.provide(Layer.merge(model, NodeServices.layer))
 * ))
 * ```
 *
 * @since 0.2.0
 */
export { type Http, http, type Requirements, type Server, type Stdio, stdio } from "./McpConnection.ts"
export { type Info, layerServerHttp, layerServerStdio, serve } from "./McpServe.ts"
export { McpToolError, type Options, toolkit } from "./McpToolkit.ts"
