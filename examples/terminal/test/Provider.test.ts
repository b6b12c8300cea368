import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { AgentLoop } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import * as Demo from "../src/Demo.ts"
import { plain } from "./plain.ts"
import * as Provider from "../src/Provider.ts"

const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env }))


const demoWith = (env: Record<string, string>) =>
  Effect.gen(function*() {
    let out = ""
    yield* Demo.run("Hi", (text) => Effect.sync(() => out += text))
    return plain(out)
  }).pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(Provider.layer), Layer.provide(withEnv(env)))))

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

  for (const [provider, variable, path] of [
    ["responses", "OPENAI_API_KEY", "/responses"],
    ["gemini", "GEMINI_API_KEY", "/models/m:streamGenerateContent?alt=sse"],
    ["anthropic", "ANTHROPIC_API_KEY", "/v1/messages"]
  ] as const) {
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

  it.live("runs the agent on Claude: a tool call over the Messages stream, its result sent back, then the answer", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const event = (type: string, fields: Record<string, unknown>) => ProviderServer.sseEvent({ type, ...fields }, type)
      const message = (id: string, blocks: ReadonlyArray<string>, stopReason: string) =>
        ProviderServer.sse([
          event("message_start", { message: { id, model: "claude-haiku-4-5-20251001", usage: { input_tokens: 40, output_tokens: 1 } } }),
          ...blocks,
          event("message_delta", { delta: { stop_reason: stopReason }, usage: { output_tokens: 12 } }),
          event("message_stop", {})
        ], { chunkSize: 16 })
      yield* server.reply(
        message("msg_1", [
          event("content_block_start", { index: 0, content_block: { type: "tool_use", id: "toolu_1", name: "calculator", input: {} } }),
          event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: "{\"expression\":" } }),
          event("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: "\"6 * 7\"}" } }),
          event("content_block_stop", { index: 0 })
        ], "tool_use"),
        message("msg_2", [
          event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
          event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "It is 42." } }),
          event("content_block_stop", { index: 0 })
        ], "end_turn")
      )
      const out = yield* demoWith({ AGENTLOOP_PROVIDER: "anthropic", ANTHROPIC_API_KEY: "test-key", AGENTLOOP_BASE_URL: server.url })
      expect(out).toContain("→ calculator {\"expression\":\"6 * 7\"}")
      expect(out).toContain("← calculator {\"expression\":\"6 * 7\",\"value\":42}")
      expect(out).toContain("It is 42.")
      expect(out).toContain("✓ Stop")
      const [, second] = yield* server.requests
      expect(JSON.stringify(second?.body)).toContain("\"tool_result\",\"tool_use_id\":\"toolu_1\"")
    }).pipe(Effect.provide(ProviderServer.layer)))

  it.live("the demo process exits with status 1 when the run ends in an error termination", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      yield* server.reply(ProviderServer.status(401, { error: { message: "key rejected" } }))
      const main = fileURLToPath(new URL("../src/main.ts", import.meta.url))
      const ended = yield* Effect.callback<{ readonly code: number | null; readonly stdout: string }>((resume) => {
        const child = execFile(process.execPath, [main], {
          env: { ...process.env, AGENTLOOP_PROVIDER: "responses", OPENAI_API_KEY: "test-key", AGENTLOOP_BASE_URL: server.url },
          timeout: 30_000
        }, (error, stdout) => resume(Effect.succeed({ code: error === null ? 0 : child.exitCode, stdout })))
      })
      expect(plain(ended.stdout)).toContain("✗ ProviderAuth (fatal)")
      expect(ended.code).toBe(1)
    }).pipe(Effect.provide(ProviderServer.layer)), 60_000)
})
