import { AiError, Item, LanguageModel, ProviderRetry } from "@agentloop/core"
import type { TurnDelta } from "@agentloop/core"
import { LoopbackModel, MockLanguageModel, ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { Anthropic } from "../src/index.ts"
import { AnthropicWire } from "../src/testing/index.ts"
import { event, messageStart } from "./fixtures.ts"

/**
 * Claude on a loopback server in Anthropic's wire format, falling back to
 * another provider (the testing kit's loopback model) on a second server.
 */
const fallbackOver = <A, E>(
  body: (
    claude: ProviderServer.ProviderServer["Service"],
    backup: ProviderServer.ProviderServer["Service"]
  ) => Effect.Effect<A, E, LanguageModel.LanguageModel>
) =>
  Effect.gen(function*() {
    const claude = yield* ProviderServer.make({ wire: AnthropicWire.wire })
    const backup = yield* ProviderServer.make()
    const model = LanguageModel.fallback(
      {
        layer: Anthropic.layerWithoutHttpClient({
          apiKey: Redacted.make("sk-ant-test"),
          baseUrl: claude.url,
          retryPolicy: ProviderRetry.none
        }).pipe(Layer.provide(FetchHttpClient.layer)),
        model: "claude-sonnet-4-5"
      },
      { layer: LoopbackModel.layer(backup.url, "backup"), model: "backup-model" }
    )
    return yield* body(claude, backup).pipe(Effect.provide(model))
  }).pipe(Effect.scoped)

const ask = Effect.flatMap(
  LanguageModel.LanguageModel,
  (model) => Stream.runCollect(model.streamTurn([Item.userMessage("Hello")], {}))
)

describe("Anthropic with a fallback, over loopback HTTP", () => {
  it.live("an overloaded Claude (529) hands the turn to the next provider, which the turn names", () =>
    fallbackOver((claude, backup) =>
      Effect.gen(function*() {
        yield* claude.reply(
          new AiError.Unavailable({ provider: "anthropic", status: 529, message: "Overloaded" }),
          MockLanguageModel.textTurn("Claude again", { model: "claude-sonnet-4-5-20250929" })
        )
        yield* backup.reply(LoopbackModel.reply(MockLanguageModel.textTurn("Hello from the backup")))
        const first = (yield* ask).at(-1)
        expect(first?.type === "turn_complete" && [first.turn.provider, first.turn.model]).toStrictEqual([
          "loopback",
          "backup-model"
        ])
        // The next turn starts from the first step again.
        const second = (yield* ask).at(-1)
        expect(second?.type === "turn_complete" && [second.turn.provider, second.turn.model]).toStrictEqual([
          "anthropic",
          "claude-sonnet-4-5-20250929"
        ])
        expect((yield* claude.requests).map((r) => (r.body as { model: string }).model)).toStrictEqual([
          "claude-sonnet-4-5",
          "claude-sonnet-4-5"
        ])
        expect(yield* backup.requests).toHaveLength(1)
      })
    ))

  it.live("a Claude overloaded after its first delta fails the turn as it would alone: nothing is replayed", () =>
    fallbackOver((claude, backup) =>
      Effect.gen(function*() {
        yield* claude.reply(ProviderServer.sse([
          messageStart("msg_cut"),
          event("content_block_start", { index: 0, content_block: { type: "text", text: "" } }),
          event("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Hel" } }),
          event("error", { error: { type: "overloaded_error", message: "Overloaded" } })
        ]))
        const deltas: Array<TurnDelta.TurnDelta> = []
        const exit = yield* Effect.exit(Effect.flatMap(LanguageModel.LanguageModel, (model) =>
          Stream.runForEach(
            model.streamTurn([Item.userMessage("Hello")], {}),
            (delta) => Effect.sync(() => deltas.push(delta))
          )))
        expect(Exit.isFailure(exit) && exit.cause.reasons[0]).toMatchObject({ error: { _tag: "Unavailable" } })
        expect(deltas).toStrictEqual([{ type: "text_delta", delta: "Hel" }])
        expect(yield* backup.requests).toHaveLength(0)
      })
    ))
})
