import { defineProject } from "vitest/config"
import { maxWorkers, sources, testTimeout } from "./vitest.shared.ts"

// Two projects: the docs' snippets (see docs/vitest.config.ts), and every package's and example's tests in one.
// A worker serves the files of one project only, and starting one (a Node process importing effect and the sources)
// costs some 1.3 s of CPU: as a project each, the packages and examples started some forty workers a run, one
// project starts three. Its files share their workers: effect, the cluster and the sources are imported once per
// worker, not once per file. (The whole suite, the machine shared: 150 s of CPU as twelve projects, 125 s as two.)
export default [
  "docs",
  defineProject({
    ...sources,
    test: {
      name: "packages",
      include: ["packages/*/test/**/*.test.ts", "examples/*/test/**/*.test.ts"],
      maxWorkers,
      testTimeout,
      isolate: false
    }
  })
]
