import { AiError, Item, LanguageModel, ProviderRetry, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { ChatCompletions } from "../src/index.ts"
import { delta, done, finish, role, usage } from "./fixtures.ts"

/** Two loopback Chat Completions servers, and a fallback from the first to the second. */
const servers = Effect.gen(function*() {
  const primary = yield* ProviderServer.make()
  const backup = yield* ProviderServer.make()
  const layer = LanguageModel.fallback(
    {
      layer: ChatCompletions.layerWithoutHttpClient({
        baseUrl: primary.url,
        model: "local-model",
        retryPolicy: ProviderRetry.none
      })
    },
    { layer: ChatCompletions.layerWithoutHttpClient({ baseUrl: backup.url }), model: "backup-model" }
  ).pipe(Layer.provide(FetchHttpClient.layer))
  return { primary, backup, layer }
})

const ask = (layer: Layer.Layer<LanguageModel.LanguageModel>, history: ReadonlyArray<Item.Item>) =>
  Effect.flatMap(LanguageModel.LanguageModel, (model) => Stream.runCollect(model.streamTurn(history, {}))).pipe(
    Effect.provide(layer)
  )

describe("ChatCompletions in LanguageModel.fallback", () => {
  it.live("a 402 (credits gone) moves on to the next server, which answers", () =>
    Effect.gen(function*() {
      const { backup, layer, primary } = yield* servers
      yield* primary.reply(ProviderServer.status(402, { error: { message: "Insufficient credits", code: 402 } }))
      yield* backup.reply(
        ProviderServer.sse([role, delta({ content: "From the backup" }), finish("stop"), usage(), done])
      )
      const deltas = yield* ask(layer, [Item.userMessage("Hello")])
      const last = deltas.at(-1)
      if (last?.type !== "turn_complete") throw new Error("no turn_complete")
      expect(Turn.text(last.turn)).toBe("From the backup")
      expect(last.turn.provider).toBe("chat-completions")
      expect((yield* primary.requests).map((request) => (request.body as { model: string }).model)).toEqual([
        "local-model"
      ])
      expect((yield* backup.requests).map((request) => (request.body as { model: string }).model)).toEqual([
        "backup-model"
      ])
    }).pipe(Effect.scoped))

  it.live("a refused image ends the turn on the first step: no server is asked", () =>
    Effect.gen(function*() {
      const { backup, layer, primary } = yield* servers
      const error = yield* ask(layer, [Item.userMessage([Item.imageFromBytes(new Uint8Array([1]), "image/tiff")])])
        .pipe(Effect.flip)
      expect(error).toBeInstanceOf(AiError.InvalidRequest)
      expect(error.message).toContain("chat-completions does not take images of type image/tiff")
      expect((yield* primary.requests).length + (yield* backup.requests).length).toBe(0)
    }).pipe(Effect.scoped))
})
