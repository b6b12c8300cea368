import { defineProject } from "vitest/config"

export default defineProject({
  // --expose-gc lets the memory tests measure the heap after a full collection.
  test: { name: "core", include: ["test/**/*.test.ts"], execArgv: ["--expose-gc"] }
})
