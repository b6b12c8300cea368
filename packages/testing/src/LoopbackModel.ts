/**
 * A `LanguageModel` that asks a loopback `ProviderServer` for each turn over
 * HTTP, in no vendor's format: the server answers with the turn as JSON
 * ({@link reply}), and the model replays it as the mock would. Tests across
 * processes use it: every process's requests reach the one server, which
 * counts (and records) them all, so a crash test can prove no turn was asked
 * twice. It imports no more than it needs, for child processes.
 *
 * @since 0.1.0
 */
import * as AiError from "@agentloop/core/AiError"
import * as LanguageModel from "@agentloop/core/LanguageModel"
import * as Turn from "@agentloop/core/Turn"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as MockLanguageModel from "./MockLanguageModel.ts"
import * as ProviderServer from "./ProviderServer.ts"

const provider = "loopback"

const decodeTurn = Schema.decodeUnknownEffect(Schema.fromJsonString(Turn.Turn))

/**
 * Asks `url` for turns, saying it is `runner` in the `x-runner` header.
 *
 * @example
 * ```ts
 * import { AgentLoop } from "@agentloop/core"
 * import { LoopbackModel, MockLanguageModel, ProviderServer } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 *
 * // A model whose turns a loopback server answers: processes (a crashed one, its successor) share the server's script.
 * const program = Effect.gen(function*() {
 *   const server = yield* ProviderServer.ProviderServer
 *   yield* server.reply(LoopbackModel.reply(MockLanguageModel.textTurn("Hello from the server")))
 *   const model = LoopbackModel.layer(server.url, "runner-1")
 *   const result = yield* Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run({ input: "Hi" })).pipe(
 *     Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))
 *   )
 *   if (result._tag === "Stopped") console.log(result.output) // Hello from the server
 *   console.log((yield* server.requests).length) // 1
 * })
 * Effect.runPromise(program.pipe(Effect.provide(ProviderServer.layer)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
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

/**
 * The server's reply that answers a request of this model with `turn`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reply = (turn: Turn.Turn): ProviderServer.Reply =>
  ProviderServer.status(200, Schema.encodeSync(Turn.Turn)(turn))
