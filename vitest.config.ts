import { defineConfig } from "vitest/config"
import projects from "./vitest.workspace.ts"

export default defineConfig({
  test: {
    projects,
    // Vitest's default is one worker fewer than the cores: one, on a two-core machine. Much of the
    // suite waits (child processes, a browser, sockets, real-time servers), so two workers keep
    // both cores busy.
    maxWorkers: 2
  }
})
