import { describe, expect, it } from "@effect/vitest"
import { Config, ConfigProvider, Effect } from "effect"
import * as Provider from "../src/Provider.ts"
import * as Startup from "../src/Startup.ts"

describe("what a demo that cannot start says", () => {
  it.effect("names the setting that is not valid, and what the settings must be", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Provider.name.pipe(
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { AGENTLOOP_PROVIDER: "claude" } })))
        )
      )
      expect(error).toBeInstanceOf(Config.ConfigError)
      const said = Startup.explain(error)
      expect(said).toMatch(/^a setting in the environment is not valid \(.*AGENTLOOP_PROVIDER.*\): fix it or unset it/)
      expect(said).not.toContain("\n")
    }))

  it("says how to give a missing key, or to go without one", () => {
    const said = Startup.explain(
      new Provider.MissingApiKey({ message: "AGENTLOOP_PROVIDER=gemini needs GEMINI_API_KEY" })
    )
    expect(said).toBe(
      "AGENTLOOP_PROVIDER=gemini needs GEMINI_API_KEY: set it, or unset AGENTLOOP_PROVIDER to use the scripted model"
    )
  })

  it("says anything else is a bug, with its tag and message, or its text when it has no message", () => {
    expect(Startup.explain({ _tag: "Boom", message: "" })).toBe(
      "Boom (this is a bug of the demo: please report it with this message)"
    )
    expect(Startup.explain(new Error("oops"))).toBe(
      "oops (this is a bug of the demo: please report it with this message)"
    )
  })
})
