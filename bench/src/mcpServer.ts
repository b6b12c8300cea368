/**
 * The stdio MCP server of the MCP benchmark: one `add` tool, served by `Mcp.serve`.
 */
import { Tool, Toolkit } from "@agentloop/core"
import { Mcp } from "@agentloop/mcp"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"

export const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }) => Effect.succeed(a + b)
})

if (process.argv[2] === "serve") {
  NodeRuntime.runMain(Layer.launch(
    Mcp.serve(Toolkit.make(add), { name: "bench", version: "1.0.0" }).pipe(
      Layer.provide(Mcp.layerServerStdio()),
      Layer.provide(NodeServices.layer)
    )
  ))
}
