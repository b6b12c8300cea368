/**
 * Runs a provider layer against the loopback `ProviderServer`, for the
 * provider conformance suite: a provider package's {@link Fixture} says how to
 * build its layer and how to write a turn in its wire format.
 *
 * @since 0.1.0
 */
import type * as AiError from "@agentloop/core/AiError"
import * as Item from "@agentloop/core/Item"
import * as LanguageModel from "@agentloop/core/LanguageModel"
import type * as Provider from "@agentloop/core/provider/Provider"
import * as ProviderRetry from "@agentloop/core/provider/ProviderRetry"
import type * as TokenUsage from "@agentloop/core/TokenUsage"
import type * as Turn from "@agentloop/core/Turn"
import type * as TurnDelta from "@agentloop/core/TurnDelta"
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { FetchHttpClient, type HttpClient } from "effect/http"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { TestClock } from "effect/testing"
import * as assert from "node:assert/strict"
import * as ProviderServer from "./ProviderServer.ts"
import type * as WireTurn from "./WireTurn.ts"

/**
 * One case of the suite. `clock: "test"` cases run under `TestClock` (`it.effect`), the others in real time (`it.live`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Case {
  readonly name: string
  readonly clock: "live" | "test"
  readonly test: Effect.Effect<void, unknown>
  /**
   * Milliseconds after which a case that moves a lot of data in real time
   * counts as hung, when the test runner's default is too short for a busy
   * machine; only a guard against hangs, never a margin the case relies on.
   */
  readonly timeout?: number | undefined
}

/**
 * What a provider package supplies to run the conformance suite.
 *
 * @since 0.1.0
 * @category models
 */
export interface Fixture {
  /** The provider's name in errors. */
  readonly provider: string
  /** The lower-case header that carries the key. */
  readonly credentialHeader: string
  /** The provider's layer with these settings, on the `HttpClient` in context. */
  readonly layer: (
    settings: Provider.Settings
  ) => Layer.Layer<LanguageModel.LanguageModel, never, HttpClient.HttpClient>
  /** The SSE frames of `turn` in the provider's documented wire format; `complete: false` leaves out what ends the turn. */
  readonly frames: (turn: WireTurn.WireTurn, options?: { readonly complete: boolean }) => ReadonlyArray<string>
  /** The frames of a stream that fails, before any delta, with a server error saying `message`. */
  readonly serverError: (message: string) => ReadonlyArray<string>
  /**
   * The usage the provider reports for a turn written with `usage`: `usage`
   * less the counts its wire does not carry (a reasoning count, for an API
   * that reports none). Default: `usage` itself.
   */
  readonly reportedUsage?: ((usage: WireTurn.Usage) => TokenUsage.TokenUsage) | undefined
}

/**
 * The usage `fixture`'s provider must report for a turn written with `usage`; see {@link Fixture.reportedUsage}.
 *
 * @since 0.1.0
 * @category checks
 */
export const reportedUsage = (fixture: Fixture, usage: WireTurn.Usage): TokenUsage.TokenUsage =>
  fixture.reportedUsage?.(usage) ?? usage

/**
 * The API key the harness configures: a canary that must never show up in an error, a delta or a span.
 *
 * @since 0.1.0
 * @category constants
 */
export const canary = "sk-CANARY-7d1f00aa-DO-NOT-LEAK"

/**
 * The history every harness turn sends.
 *
 * @since 0.1.0
 * @category constants
 */
export const hello = [Item.userMessage("Hello")]

/**
 * The loopback server of a harness run.
 *
 * @since 0.1.0
 * @category models
 */
export type Server = ProviderServer.ProviderServer["Service"]

/**
 * The model of a harness run.
 *
 * @since 0.1.0
 * @category models
 */
export type Model = LanguageModel.LanguageModel["Service"]

/**
 * Runs `body` with a fresh loopback server and the provider pointed at it,
 * keyed with {@link canary}; no retries unless `settings` asks for them.
 *
 * @example
 * ```ts
 * import { ChatCompletions } from "@agentloop/chat-completions"
 * import { Turn } from "@agentloop/core"
 * import { ProviderHarness, ProviderServer, WireTurn } from "@agentloop/testing"
 * import { Effect } from "effect"
 *
 * // A provider's fixture: its layer, and how its wire writes a turn and a server error.
 * const sse = (value: unknown) => `data: ${JSON.stringify(value)}\n\n`
 * const chunk = (delta: object, finish: string | null = null) =>
 *   sse({ id: "c1", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })
 * const fixture: ProviderHarness.Fixture = {
 *   provider: "chat-completions",
 *   credentialHeader: "authorization",
 *   layer: (settings) => ChatCompletions.layerWithoutHttpClient({ ...settings, baseUrl: settings.baseUrl ?? "", model: "m" }),
 *   frames: (turn, options) => {
 *     const calls = turn.calls ?? []
 *     const body = [
 *       ...(turn.reasoning ?? []).map((reasoning_content) => chunk({ reasoning_content })),
 *       ...(turn.text ?? []).map((content) => chunk({ content })),
 *       ...calls.map((call, index) =>
 *         chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } }] })
 *       )
 *     ]
 *     const usage = {
 *       prompt_tokens: turn.usage.input,
 *       completion_tokens: turn.usage.output,
 *       total_tokens: turn.usage.total,
 *       prompt_tokens_details: { cached_tokens: turn.usage.cachedInput },
 *       completion_tokens_details: { reasoning_tokens: turn.usage.reasoning }
 *     }
 *     return options?.complete === false ? body : [
 *       ...body,
 *       chunk({}, calls.length > 0 ? "tool_calls" : "stop"),
 *       sse({ id: "c1", object: "chat.completion.chunk", model: "m", choices: [], usage }),
 *       "data: [DONE]\n\n"
 *     ]
 *   },
 *   serverError: (message) => [sse({ error: { message, type: "server_error" } })]
 * }
 *
 * // A turn over real loopback HTTP, the server answering in the provider's own wire format.
 * const program = ProviderHarness.run(fixture, (server, model) =>
 *   Effect.gen(function*() {
 *     yield* server.reply(ProviderServer.sse(fixture.frames(WireTurn.text("Hel", "lo"))))
 *     const { deltas } = yield* ProviderHarness.turn(model)
 *     console.log(ProviderHarness.joined(deltas, "text_delta")) // Hello
 *     console.log(Turn.text(ProviderHarness.completed(deltas))) // Hello
 *   }))
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.1.0
 * @category running
 */
export const run = <A, E>(
  fixture: Fixture,
  body: (server: Server, model: Model) => Effect.Effect<A, E, Scope.Scope | HttpClient.HttpClient>,
  settings?: Partial<Provider.Settings>
): Effect.Effect<A, E> =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const model = yield* LanguageModel.LanguageModel.pipe(
      Effect.provide(
        fixture.layer({
          apiKey: Redacted.make(canary),
          baseUrl: server.url,
          retryPolicy: ProviderRetry.none,
          ...settings
        })
      )
    )
    return yield* body(server, model)
  }).pipe(Effect.scoped, Effect.provide(Layer.mergeAll(ProviderServer.layer, FetchHttpClient.layer)))

/**
 * Runs a turn to its end: the deltas and, when it failed, the error. Never fails itself.
 *
 * @since 0.1.0
 * @category running
 */
export const turn = (model: Model, options: LanguageModel.TurnOptions = {}) =>
  Effect.gen(function*() {
    const deltas: Array<TurnDelta.TurnDelta> = []
    const exit = yield* model.streamTurn(hello, options).pipe(
      Stream.runForEachArray((chunk) => Effect.sync(() => deltas.push(...chunk))),
      Effect.exit
    )
    return {
      deltas,
      error: Exit.isFailure(exit) ? Option.getOrUndefined(Cause.findErrorOption(exit.cause)) : undefined
    }
  })

/**
 * The turn that completes `deltas`, checking it is their one and last `turn_complete`.
 *
 * @since 0.1.0
 * @category checks
 */
export const completed = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): Turn.Turn => {
  const ends = deltas.filter((delta) => delta.type === "turn_complete")
  const last = deltas[deltas.length - 1]
  assert.equal(ends.length, 1, "exactly one turn_complete")
  assert.ok(last?.type === "turn_complete", "turn_complete is the last delta")
  return last.turn
}

/**
 * The error a turn failed with, checking it failed.
 *
 * @since 0.1.0
 * @category checks
 */
export const failed = (result: { readonly error: AiError.AiError | undefined }): AiError.AiError => {
  assert.ok(result.error !== undefined, "the turn fails")
  return result.error
}

/**
 * The text of the deltas of one `type`, joined.
 *
 * @since 0.1.0
 * @category checks
 */
export const joined = (deltas: ReadonlyArray<TurnDelta.TurnDelta>, type: "text_delta" | "reasoning_delta"): string =>
  deltas.flatMap((delta) => delta.type === type ? [delta.delta] : []).join("")

// Real time, even under TestClock: lets real I/O run between clock steps.
const realPause = Effect.promise(() => new Promise<void>((resolve) => setTimeout(resolve, 5)))

/**
 * Moves the test clock `step` seconds at a time, letting real I/O run in
 * between, until `fiber` ends or `limit` passes; returns its exit and the seconds moved.
 *
 * @since 0.1.0
 * @category running
 */
export const driveClock = <A, E>(fiber: Fiber.Fiber<A, E>, limit: Duration.Input, step = 1) =>
  Effect.gen(function*() {
    let seconds = 0
    const max = Duration.toSeconds(Duration.fromInputUnsafe(limit))
    while (fiber.pollUnsafe() === undefined && seconds <= max) {
      yield* TestClock.adjust(Duration.seconds(step))
      seconds += step
      yield* realPause
    }
    return { exit: yield* Fiber.await(fiber), seconds }
  })
