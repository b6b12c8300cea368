import * as Loop from "@agentloop/core/Loop"
import { expect, it } from "@effect/vitest"

it("tests run the workspace's packages from their sources, not from a build", () => {
  // A build of Loop.ts would hold JavaScript; the source's own module URL names the .ts file.
  expect(Loop.loop).toBeTypeOf("function")
  expect(import.meta.resolve("@agentloop/core/Loop")).toMatch(/packages\/core\/src\/Loop\.ts$/)
})
