import { defineProject } from "vitest/config"
import { maxWorkers, sources, testTimeout } from "../vitest.shared.ts"

export default defineProject({
  ...sources,
  // Each snippet is a process of its own, most of whose life is spent waiting (a durable runner's
  // shutdown, a server's sockets): more of them at once than vitest's default of five.
  test: { maxWorkers, testTimeout, name: "docs", include: ["snippets.test.ts", "errors.test.ts"], maxConcurrency: 10 }
})
