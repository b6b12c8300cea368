import { defineProject } from "vitest/config"

export default defineProject({
  // The test files share their workers: importing effect and the sources once per worker, not once per file.
  test: { name: "core", include: ["test/**/*.test.ts"], isolate: false }
})
