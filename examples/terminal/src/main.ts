/**
 * `npm run demo [question]`: the terminal demo. It exits with status 1 when the
 * run ends with an error termination (or cannot start), 0 when it ends well.
 *
 * `npm run demo -- --program research [question]` (or `AGENTLOOP_PROGRAM=research`)
 * runs the step program of `Research.ts` instead: three searching sub-agents at
 * once, then a writer checked by a verifier.
 *
 * `npm run demo -- --mcp "npx -y @modelcontextprotocol/server-everything" [question]`
 * adds the tools of that MCP server (any command that starts one on stdio) to
 * the agent's; `--mcp` may be given more than once.
 */
import { AgentLoop, Termination } from "@agentloop/core"
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { parse } from "./Args.ts"
import * as Demo from "./Demo.ts"
import * as McpServers from "./McpServers.ts"
import * as Provider from "./Provider.ts"
import * as Research from "./Research.ts"
import { question } from "./script.ts"
import * as Startup from "./Startup.ts"
import * as Tools from "./tools.ts"

const { asked, mcp, program: chosen } = parse(process.argv.slice(2), process.env["AGENTLOOP_PROGRAM"])

const write = (text: string) => Effect.sync(() => process.stdout.write(text))

const banner = (provider: string, what: string) =>
  write(
    `agentloop demo · ${what} · provider: ${provider}${
      provider === "mock" ? " (scripted: set AGENTLOOP_PROVIDER to use a real model)" : ""
    }\n`
  )

const agent = Effect.gen(function*() {
  yield* banner(yield* Provider.name, "agent")
  const { started, toolkit } = yield* McpServers.load(mcp, Tools.toolkit)
  yield* write(McpServers.describe(started))
  const ended = yield* Demo.run(asked === "" ? question : asked, write, {
    isTerminal: process.stdout.isTTY === true,
    toolkit
  })
  if (Termination.isError(ended)) process.exitCode = 1
}).pipe(
  // The MCP servers end with the scope, before the program exits.
  Effect.scoped,
  Effect.provide(AgentLoop.layer.pipe(Layer.provide(Provider.layer))),
  Effect.provide(NodeServices.layer)
)

const research = Effect.gen(function*() {
  yield* banner(yield* Provider.name, "research program")
  const report = yield* Research.run(asked === "" ? Research.question : asked, write)
  if (report instanceof Error) process.exitCode = 1
}).pipe(Effect.provide(Provider.layerWith(Research.mock)))

const programs = { agent, research }

const main = chosen === "agent" || chosen === "research"
  ? programs[chosen]
  : Effect.sync(() => {
    process.stderr.write(`agentloop demo: no program named ${JSON.stringify(chosen)} (try agent or research)\n`)
    process.exitCode = 1
  })

main.pipe(
  Effect.catch((error) =>
    Effect.sync(() => {
      process.stderr.write(`agentloop demo: ${Startup.explain(error)}\n`)
      process.exitCode = 1
    })
  ),
  NodeRuntime.runMain
)
