// @module-tag slow
import { AnthropicWire } from "@agentloop/anthropic/testing"
import { ChatCompletionsWire } from "@agentloop/chat-completions/testing"
import { AgentLoop, type ProviderWire } from "@agentloop/core"
import { GeminiWire } from "@agentloop/gemini/testing"
import { ResponsesWire } from "@agentloop/responses/testing"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import * as Demo from "../src/Demo.ts"
import * as Provider from "../src/Provider.ts"
import { question, script } from "../src/script.ts"
import { plain } from "./plain.ts"

const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env }))

const demoWith = (env: Record<string, string>, input = "Hi") =>
  Effect.gen(function*() {
    let out = ""
    yield* Demo.run(input, (text) => Effect.sync(() => out += text))
    return plain(out)
  }).pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(Provider.layer), Layer.provide(withEnv(env)))))

/** The demo's output without the run's elapsed time and the tools' durations, what differs between two runs. */
const timeless = (out: string) => out.replace(/ · [\d.]+ ?m?s\n*$/, "").replace(/([✓✗] \S+) \d+\.\ds /g, "$1 ")

const providers: ReadonlyArray<readonly [string, string, ProviderWire.ProviderWire]> = [
  ["responses", "OPENAI_API_KEY", ResponsesWire.wire],
  ["gemini", "GEMINI_API_KEY", GeminiWire.wire],
  ["anthropic", "ANTHROPIC_API_KEY", AnthropicWire.wire],
  ["chat-completions", "CHAT_COMPLETIONS_API_KEY", ChatCompletionsWire.wire]
]

describe("the demo's provider choice", () => {
  it.effect("is the scripted mock by default", () =>
    Effect.gen(function*() {
      expect(yield* Provider.name.pipe(Effect.provide(withEnv({})))).toBe("mock")
    }))

  it.effect("says which key is missing", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(demoWith({ AGENTLOOP_PROVIDER: "gemini" }))
      expect(error).toMatchObject({
        _tag: "MissingApiKey",
        message: "AGENTLOOP_PROVIDER=gemini needs GEMINI_API_KEY in the environment"
      })
    }))

  it.effect("says chat-completions needs AGENTLOOP_BASE_URL", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(demoWith({ AGENTLOOP_PROVIDER: "chat-completions" }))
      expect(error).toMatchObject({ _tag: "MissingBaseUrl", message: expect.stringContaining("AGENTLOOP_BASE_URL") })
    }))

  it.live("talks to a chat-completions server that needs no key, sending none", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.status(401, { error: { message: "key rejected" } }))
      const out = yield* demoWith({ AGENTLOOP_PROVIDER: "chat-completions", AGENTLOOP_BASE_URL: server.url })
      expect(out).toContain("✗ ProviderAuth (fatal)")
      const [request] = yield* server.requests
      expect([request?.url, request?.headers.authorization]).toStrictEqual(["/chat/completions", undefined])
    }).pipe(Effect.provide(ProviderServer.layer)))

  for (
    const [provider, variable, path] of [
      ["responses", "OPENAI_API_KEY", "/responses"],
      ["gemini", "GEMINI_API_KEY", "/models/m:streamGenerateContent?alt=sse"],
      ["anthropic", "ANTHROPIC_API_KEY", "/v1/messages"],
      ["chat-completions", "CHAT_COMPLETIONS_API_KEY", "/chat/completions"]
    ] as const
  ) {
    it.live(`talks to ${provider} at AGENTLOOP_BASE_URL with AGENTLOOP_MODEL`, () =>
      Effect.gen(function*() {
        const server = yield* ProviderServer.ProviderServer
        yield* server.reply(ProviderServer.status(401, { error: { message: "key rejected" } }))
        const out = yield* demoWith({
          AGENTLOOP_PROVIDER: provider,
          [variable]: "test-key",
          AGENTLOOP_BASE_URL: server.url,
          AGENTLOOP_MODEL: "m"
        })
        expect(out).toContain("✗ ProviderAuth (fatal)")
        const [request] = yield* server.requests
        expect(request?.url).toBe(path)
      }).pipe(Effect.provide(ProviderServer.layer)))
  }

  it.live(
    "the demo process exits with status 1 when the run ends in an error termination",
    () =>
      Effect.gen(function*() {
        const server = yield* ProviderServer.ProviderServer
        yield* server.reply(ProviderServer.status(401, { error: { message: "key rejected" } }))
        const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))
        const ended = yield* Effect.callback<{ readonly code: number | null; readonly stdout: string }>((resume) => {
          const child = execFile(process.execPath, ["--conditions=@agentloop/source", main], {
            env: {
              ...process.env,
              AGENTLOOP_PROVIDER: "responses",
              OPENAI_API_KEY: "test-key",
              AGENTLOOP_BASE_URL: server.url
            },
            timeout: 30_000
          }, (error, stdout) => resume(Effect.succeed({ code: error === null ? 0 : child.exitCode, stdout })))
        })
        expect(plain(ended.stdout)).toContain("✗ ProviderAuth (fatal)")
        expect(ended.code).toBe(1)
      }).pipe(Effect.provide(ProviderServer.layer)),
    60_000
  )
})

describe("the demo's scripted conversation, over every provider", () => {
  // What the demo prints on the mock, paced like a real model: run once, compared with every provider.
  const onMockOnce = Effect.runSync(Effect.cached(demoWith({}, question)))
  for (const [provider, variable, wire] of providers) {
    it.live(`on ${provider}, streamed in its wire format, prints what it prints on the mock`, () =>
      Effect.gen(function*() {
        const onMock = yield* onMockOnce
        const server = yield* ProviderServer.ProviderServer
        yield* server.reply(...script)
        const out = yield* demoWith({
          AGENTLOOP_PROVIDER: provider,
          [variable]: "test-key",
          AGENTLOOP_BASE_URL: server.url
        }, question)
        expect(timeless(out)).toBe(timeless(onMock))
        expect(out).toContain("A marathon is about 42.16 km.")
        expect(out).toContain("✓ Stop")
        // Each turn after the first sent the model the results of the calls before it.
        const requests = yield* server.requests
        expect(requests).toHaveLength(script.length)
        expect(JSON.stringify(requests[1]?.body)).toContain("call_marathon")
        expect(JSON.stringify(requests[2]?.body)).toContain("call_fever_retry")
      }).pipe(Effect.provide(ProviderServer.layerWire(wire))))
  }
})
