import { defineProject } from "vitest/config"
import { maxWorkers, sources } from "../../vitest.shared.ts"

export default defineProject({
  ...sources,
  // Every test runs a durable runner on a real database, some in other processes: allow for a busy machine. The
  // test files share their workers: importing effect, the cluster and the sources once per worker, not once per file
  // (a third of the project's CPU time).
  test: { maxWorkers, name: "durable", include: ["test/**/*.test.ts"], testTimeout: 30_000, isolate: false }
})
