/**
 * What the MCP tests share: the third-party "everything" server over stdio,
 * calls to send through a toolkit, and the processes a test started.
 */
import type { Item } from "@agentloop/core"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import { createRequire } from "node:module"
import { Mcp } from "../src/index.ts"

const require = createRequire(import.meta.url)

/** The entry point of `@modelcontextprotocol/server-everything`. */
export const everythingScript = require.resolve("@modelcontextprotocol/server-everything/dist/index.js")

/** The everything server, started with the repository's Node. */
export const everything = (options: Omit<Parameters<typeof Mcp.stdio>[0], "command" | "args"> = {}) =>
  Mcp.stdio({ command: process.execPath, args: [everythingScript, "stdio"], ...options })

/** A model's call of `name` with `args` as its JSON arguments. */
export const call = (name: string, args: unknown, callId = "c1"): Item.FunctionCall => ({
  type: "function_call",
  id: `fc_${callId}`,
  status: "completed",
  call_id: callId,
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args)
})

/** The ids of this process's children whose command line contains `marker`. */
export const childPids = (marker: string): Effect.Effect<ReadonlyArray<number>> =>
  Effect.sync(() => {
    const out = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(process.pid)], { encoding: "utf8" })
      .toString()
    return out.split("\n").filter((line) => line.includes(marker)).map((line) => Number.parseInt(line.trim(), 10))
  }).pipe(Effect.orElseSucceed((): ReadonlyArray<number> => []))

/** Whether a process with this id exists. */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
