import { fileURLToPath } from "node:url"
import { defineConfig } from "vitest/config"
import { SlowFirst } from "./vitest.sequencer.ts"
import { maxWorkers } from "./vitest.shared.ts"
import projects from "./vitest.workspace.ts"

// Many tests start Node processes that load the packages' sources (crash tests, the docs' snippets, the
// demos): Node's compile cache, shared by them all, saves each one most of its start-up.
process.env["NODE_COMPILE_CACHE"] ??= fileURLToPath(new URL("./node_modules/.cache/node-compile", import.meta.url))

export default defineConfig({
  test: {
    projects,
    maxWorkers,
    // `npx vitest run --tags-filter='!slow'` runs only the others.
    tags: [{ name: "slow", description: "takes seconds: starts processes or a browser, or runners on a database" }],
    sequence: { sequencer: SlowFirst }
  }
})
