import { defineProject } from "vitest/config"
import { maxWorkers, sources } from "../../vitest.shared.ts"

export default defineProject({
  ...sources,
  test: { maxWorkers, name: "example-react", include: ["test/**/*.test.ts"] }
})
