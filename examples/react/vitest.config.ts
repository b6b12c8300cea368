import { defineProject } from "vitest/config"
import { sources } from "../../vitest.shared.ts"

export default defineProject({
  ...sources,
  test: { name: "example-react", include: ["test/**/*.test.ts"] }
})
