import { defineProject } from "vitest/config"

export default defineProject({
  test: { name: "gemini", include: ["test/**/*.test.ts"] }
})
