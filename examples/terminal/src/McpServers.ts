/**
 * `--mcp "<command>"`: MCP servers whose tools join the demo agent's. Each
 * command runs in `/bin/sh` (so it is written as in a terminal, quotes and
 * all) as a stdio MCP server, for as long as the demo runs. With several
 * servers, each one's tools are prefixed `mcp1_`, `mcp2_`… so that their names
 * cannot collide.
 */
import { Tool, Toolkit } from "@agentloop/core"
import { Mcp } from "@agentloop/mcp"
import { Effect } from "effect"
import type { Scope } from "effect"
import type { McpClientError } from "effect/ai"
import type { ChildProcessSpawner } from "effect/process"

/** A started server: its command and the names of its tools. */
export interface Started {
  readonly command: string
  readonly tools: ReadonlyArray<string>
}

/** Starts the servers and gives `base` with their tools added, and what was started. */
export const load = (
  commands: ReadonlyArray<string>,
  base: Toolkit.Toolkit
): Effect.Effect<
  { readonly toolkit: Toolkit.Toolkit; readonly started: ReadonlyArray<Started> },
  McpClientError.McpClientError,
  Scope.Scope | ChildProcessSpawner.ChildProcessSpawner
> =>
  Effect.gen(function*() {
    const tools: Array<Tool.Any<never>> = [...base.tools]
    const started: Array<Started> = []
    for (const [index, command] of commands.entries()) {
      const server = Mcp.stdio({ command: "/bin/sh", args: ["-c", `exec ${command}`], name: command })
      const toolkit = yield* Mcp.toolkit(server, commands.length > 1 ? { prefix: `mcp${index + 1}_` } : {})
      tools.push(...toolkit.tools)
      started.push({ command, tools: toolkit.tools.map((tool) => tool.name) })
    }
    return { toolkit: Toolkit.make(...tools), started }
  })

/** The lines the demo prints about the servers it started. */
export const describe = (started: ReadonlyArray<Started>): string =>
  started.map((server) => `mcp · ${server.command} · ${server.tools.length} tools: ${server.tools.join(", ")}\n`).join(
    ""
  )
