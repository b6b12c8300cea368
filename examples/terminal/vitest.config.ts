import { defineProject } from "vitest/config"

export default defineProject({
  test: { name: "example-terminal", include: ["test/**/*.test.ts"] }
})
