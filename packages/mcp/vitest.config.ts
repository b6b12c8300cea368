import { defineProject } from "vitest/config"
import { maxWorkers, sources } from "../../vitest.shared.ts"

export default defineProject({
  ...sources,
  // Every test talks to MCP servers in child processes: allow for a busy machine.
  test: { maxWorkers, name: "mcp", include: ["test/**/*.test.ts"], testTimeout: 30_000 }
})
