/**
 * A child process serving `servedToolkit` as an MCP server over stdio, as a
 * user's program would: `node --conditions=@agentloop/source serveStdio.ts`.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Layer from "effect/Layer"
import * as Mcp from "../src/Mcp.ts"
import { toolkit } from "./servedToolkit.ts"

const server = Mcp.serve(toolkit, { name: "agentloop-test", version: "1.0.0" }).pipe(
  Layer.provide(Mcp.layerServerStdio()),
  Layer.provide(NodeServices.layer)
)

NodeRuntime.runMain(Layer.launch(server))
