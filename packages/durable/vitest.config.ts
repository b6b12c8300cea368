import { defineProject } from "vitest/config"
import { maxWorkers, sources } from "../../vitest.shared.ts"

export default defineProject({
  ...sources,
  // Every test runs a durable runner on a real database, some in other processes: allow for a busy machine.
  test: { maxWorkers, name: "durable", include: ["test/**/*.test.ts"], testTimeout: 30_000 }
})
