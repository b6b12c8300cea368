import { defineProject } from "vitest/config"
import { maxWorkers, sources, testTimeout } from "../../vitest.shared.ts"

export default defineProject({
  ...sources,
  // The test files share their workers: importing effect and the sources once per worker, not once per file.
  test: { maxWorkers, testTimeout, name: "core", include: ["test/**/*.test.ts"], isolate: false }
})
