import { defineProject } from "vitest/config"

export default defineProject({
  test: { name: "anthropic", include: ["test/**/*.test.ts"] }
})
