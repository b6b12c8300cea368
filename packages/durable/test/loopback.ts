/**
 * A `LanguageModel` that asks the test's loopback `ProviderServer` for each
 * turn over HTTP: the server answers with the turn as JSON (see `turnReply`
 * in `fixtures.ts`), so the test can count (and read) every request any
 * process made. The child processes load it: it imports no more than it needs.
 */
import * as AiError from "@agentloop/core/AiError"
import * as LanguageModel from "@agentloop/core/LanguageModel"
import * as MockLanguageModel from "@agentloop/core/testing/MockLanguageModel"
import * as Turn from "@agentloop/core/Turn"
import { Effect, Layer, Schema, Stream } from "effect"

const provider = "loopback"

const decodeTurn = Schema.decodeUnknownEffect(Schema.fromJsonString(Turn.Turn))

/** Asks `url` for turns, saying it is `runner` in the `x-runner` header. */
export const layer = (url: string, runner: string): Layer.Layer<LanguageModel.LanguageModel> =>
  Layer.succeed(LanguageModel.LanguageModel, {
    provider,
    streamTurn: (history) =>
      Stream.unwrap(Effect.gen(function*() {
        const unavailable = (error: unknown) => new AiError.Unavailable({ provider, message: String(error) })
        const response = yield* Effect.tryPromise({
          try: (signal) =>
            fetch(`${url}/turn`, {
              method: "POST",
              headers: { "content-type": "application/json", "x-runner": runner },
              body: JSON.stringify({ history }),
              signal
            }),
          catch: unavailable
        })
        const text = yield* Effect.tryPromise({ try: () => response.text(), catch: unavailable })
        if (!response.ok) return yield* new AiError.Unavailable({ provider, status: response.status, message: text })
        const turn = yield* decodeTurn(text).pipe(
          Effect.mapError((error) => new AiError.MalformedEvent({ provider, event: text, message: error.message }))
        )
        return Stream.fromIterable(MockLanguageModel.deltas(turn))
      }))
  })
