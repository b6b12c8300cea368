/**
 * `npm run web` when it cannot start: the process says what failed and what to
 * do, and exits with status 1.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { fileURLToPath } from "node:url"

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))

/** Runs the web demo's main with `env` until it exits (it never does when it starts). */
const start = (env: Record<string, string>) =>
  Effect.callback<{ readonly code: number | null; readonly stderr: string }>((resume) => {
    const child = execFile(process.execPath, ["--conditions=@agentloop/source", main], {
      env: { ...process.env, ...env },
      timeout: 30_000
    }, (_, __, stderr) => resume(Effect.succeed({ code: child.exitCode, stderr })))
  })

describe("the web demo that cannot start", () => {
  it.live("on a port another program holds, names the port and how to choose another", () =>
    Effect.gen(function*() {
      const holder = yield* Effect.acquireRelease(
        Effect.callback<Http.Server>((resume) => {
          const server = Http.createServer()
          server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
        }),
        (server) => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
      )
      const port = (holder.address() as AddressInfo).port
      const ended = yield* start({ AGENTLOOP_WEB_PORT: String(port) })
      expect(ended.stderr).toBe(
        `agentloop web demo: 127.0.0.1:${port} is already in use by another program: ` +
          "stop it, or choose a free port with AGENTLOOP_WEB_PORT=<port>\n"
      )
      expect(ended.code).toBe(1)
    }), 60_000)
})
