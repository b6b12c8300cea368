import { defineProject } from "vitest/config"
import { sources } from "../vitest.shared.ts"

export default defineProject({
  ...sources,
  test: { name: "docs", include: ["snippets.test.ts", "errors.test.ts"] }
})
