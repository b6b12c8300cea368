import { ProviderConformance } from "@agentloop/testing"
import { describe, it } from "@effect/vitest"
import { conformance } from "./fixtures.ts"

describe("Gemini conformance", () => {
  for (const c of ProviderConformance.cases(conformance)) {
    ;(c.clock === "test" ? it.effect : it.live)(c.name, () => c.test, c.timeout)
  }
})
