import { defineProject } from "vitest/config"

export default defineProject({
  test: { name: "responses", include: ["test/**/*.test.ts"] }
})
