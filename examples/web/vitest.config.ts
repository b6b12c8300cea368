import { defineProject } from "vitest/config"
import { maxWorkers, sources, testTimeout } from "../../vitest.shared.ts"

export default defineProject({
  ...sources,
  test: { maxWorkers, testTimeout, name: "example-web", include: ["test/**/*.test.ts"] }
})
