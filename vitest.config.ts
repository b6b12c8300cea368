import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import projects from "./vitest.workspace.ts"

// Many tests start Node processes that load the packages' sources (crash tests, the docs' snippets, the
// demos): Node's compile cache, shared by them all, saves each one most of its start-up.
process.env["NODE_COMPILE_CACHE"] ??= fileURLToPath(new URL("./node_modules/.cache/node-compile", import.meta.url))

export default defineConfig({
  test: {
    projects,
    // Vitest's default is one worker fewer than the cores: one, on a two-core machine. Much of the
    // suite waits (child processes, a browser, sockets, real-time servers), so two workers keep
    // both cores busy.
    maxWorkers: 2
  }
})
