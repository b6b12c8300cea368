/**
 * Runs the Chat Completions layer against a fresh loopback server, and reads what it streamed.
 */
import type { Item, LanguageModel, Turn, TurnDelta } from "@agentloop/core"
import { LanguageModel as Model } from "@agentloop/core"
import { ProviderServer, SpanRecorder } from "@agentloop/testing"
import { expect } from "@effect/vitest"
import { Cause, Effect, Exit, Redacted, Schedule, Stream } from "effect"
import { HttpClient } from "effect/http"
import { ChatCompletions } from "../src/index.ts"
import { model } from "./fixtures.ts"

export const canary = "sk-cc-CANARY-5f6a7b8c-DO-NOT-LEAK"

/** A secret header value tests configure: it must never show, like the key. */
export const headerCanary = "azure-CANARY-9d0e1f2a-DO-NOT-LEAK"

const noCanary = (label: string, value: unknown): void => {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? String(value)
  for (const secret of [canary, headerCanary]) {
    if (text.includes(secret)) throw new Error(`a secret leaked into ${label}: ${text}`)
  }
}

/**
 * Runs `body` against the Chat Completions layer pointed at a fresh loopback
 * server, keyed with {@link canary}, with header capture on client spans;
 * afterwards, whatever the outcome, no span or error may contain a secret.
 */
export const run = <A, E>(
  body: (server: ProviderServer.ProviderServer["Service"]) => Effect.Effect<A, E, Model.LanguageModel>,
  overrides: Partial<Omit<ChatCompletions.Config, "baseUrl">> = {}
) =>
  Effect.gen(function*() {
    const server = yield* ProviderServer.ProviderServer
    const { spans, tracer } = SpanRecorder.make()
    const exit = yield* body(server).pipe(
      Effect.provide(ChatCompletions.layer({
        apiKey: Redacted.make(canary),
        baseUrl: server.url,
        model,
        retryPolicy: Schedule.recurs(2),
        ...overrides
      })),
      Effect.withTracer(tracer),
      Effect.provideService(HttpClient.TracerHeaderFilter, () => true),
      Effect.exit
    )
    noCanary("a span", SpanRecorder.text(spans))
    if (Exit.isFailure(exit)) {
      noCanary("a failure", Cause.pretty(exit.cause))
      for (const error of Cause.prettyErrors(exit.cause)) noCanary("an error message", error.message)
    }
    return yield* exit
  }).pipe(Effect.provide(ProviderServer.layer))

/** Every delta of a turn. */
export const turn = (history: ReadonlyArray<Item.Item>, options: LanguageModel.TurnOptions = {}) =>
  Effect.flatMap(Model.LanguageModel, (lm) => Stream.runCollect(lm.streamTurn(history, options)))

/** The deltas a turn streamed before it failed, and its error. */
export const failing = (history: ReadonlyArray<Item.Item>, options: LanguageModel.TurnOptions = {}) =>
  Effect.gen(function*() {
    const deltas: Array<TurnDelta.TurnDelta> = []
    const lm = yield* Model.LanguageModel
    const error = yield* Effect.flip(
      Stream.runForEach(lm.streamTurn(history, options), (delta) => Effect.sync(() => deltas.push(delta)))
    )
    return { deltas, error }
  })

/** The turn of `deltas`, checking it is their one and last `turn_complete`. */
export const completed = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): Turn.Turn => {
  const last = deltas[deltas.length - 1]
  if (last?.type !== "turn_complete") {
    throw new Error(`the stream did not end with turn_complete: ${JSON.stringify(last)}`)
  }
  expect(deltas.filter((delta) => delta.type === "turn_complete")).toHaveLength(1)
  return last.turn
}

/** The joined text of the deltas of one kind. */
export const textOf = (
  deltas: ReadonlyArray<TurnDelta.TurnDelta>,
  type: "text_delta" | "reasoning_delta" | "refusal_delta"
) => deltas.flatMap((delta) => delta.type === type ? [delta.delta] : []).join("")

/** The body of the `n`th request the server saw, as a record. */
export const requestBody = (server: ProviderServer.ProviderServer["Service"], n = 0) =>
  Effect.map(server.requests, (requests) => requests[n]?.body as Record<string, unknown>)
