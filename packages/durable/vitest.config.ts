import { defineProject } from "vitest/config"

export default defineProject({
  test: { name: "durable", include: ["test/**/*.test.ts"] }
})
