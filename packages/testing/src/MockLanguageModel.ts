/**
 * A scripted `LanguageModel` for tests, demos and examples.
 *
 * It answers request after request with the next entry of its script: a `Turn`
 * is replayed as realistic deltas (text in small pieces, each function call as a
 * start, argument pieces and a done), paced by the Effect clock so `TestClock`
 * controls it; an `AiError` fails the request. Every request is recorded.
 *
 * @since 0.1.0
 */
import * as AiError from "@agentloop/core/AiError"
import * as Item from "@agentloop/core/Item"
import { LanguageModel } from "@agentloop/core/LanguageModel"
import type { TurnOptions } from "@agentloop/core/LanguageModel"
import { pieces } from "@agentloop/core/provider/ProviderWire"
import * as TokenUsage from "@agentloop/core/TokenUsage"
import type { StopReason, Turn } from "@agentloop/core/Turn"
import type { TurnDelta } from "@agentloop/core/TurnDelta"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"

/**
 * A reply that streams the first `after` deltas of `turn` (never its `turn_complete`), then fails with `error`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Partial {
  readonly _tag: "Partial"
  readonly turn: Turn
  readonly after: number
  readonly error: AiError.AiError
}

/**
 * A reply that breaks off: the first `after` deltas of `turn` (text in pieces,
 * calls started…), then the request fails with `error`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const partial = (turn: Turn, after: number, error: AiError.AiError): Partial => ({
  _tag: "Partial",
  turn,
  after,
  error
})

/**
 * A reply that streams the first `after` deltas of `turn`, waits for `until`, then streams the rest.
 *
 * @since 0.3.0
 * @category models
 */
export interface Held {
  readonly _tag: "Held"
  readonly turn: Turn
  readonly after: number
  readonly until: Effect.Effect<void>
}

/**
 * A reply that stops in the middle of its turn: the first `after` deltas of
 * `turn`, then nothing until `until` completes (a `Deferred` the test
 * holds), then the rest. A test acts while the turn is in progress, at a
 * place it knows: a client that goes away, a cancel.
 *
 * @example
 * ```ts
 * import { AgentLoop } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Deferred, Effect, Fiber, Layer, Stream } from "effect"
 *
 * const open = Deferred.makeUnsafe<void>()
 * const model = MockLanguageModel.layer([
 *   MockLanguageModel.held(MockLanguageModel.textTurn("Hello there"), 1, Deferred.await(open))
 * ], { chunkSize: 5 })
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   const seen: Array<string> = []
 *   const run = yield* Effect.forkChild(
 *     Stream.runForEach(agent.stream({ input: "Hi" }), (event) => Effect.sync(() => seen.push(event._tag)))
 *   )
 *   // The turn stops after its first delta, until the gate opens.
 *   yield* Effect.yieldNow.pipe(Effect.repeat({ until: () => seen.length === 2 }))
 *   console.log(seen) // [ 'TurnStarted', 'Delta' ]
 *   yield* Deferred.succeed(open, undefined)
 *   yield* Fiber.join(run)
 *   console.log(seen.at(-1)) // Finished
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))))
 * ```
 *
 * @since 0.3.0
 * @category constructors
 */
export const held = (turn: Turn, after: number, until: Effect.Effect<void>): Held => ({
  _tag: "Held",
  turn,
  after,
  until
})

/**
 * What one request answers with: a turn to replay, an error to fail with, a
 * turn that breaks off, or one that stops in the middle until told to go on.
 *
 * @since 0.1.0
 * @category models
 */
export type Reply = Turn | AiError.AiError | Partial | Held

/**
 * A request the mock received.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly history: ReadonlyArray<Item.Item>
  readonly options: TurnOptions
}

/**
 * How the mock cuts and paces its deltas.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Characters per text, reasoning, refusal or argument delta (default 8). */
  readonly chunkSize?: number | undefined
  /** Pause before each delta, on the Effect clock (default none). */
  readonly delay?: Duration.Input | undefined
}

/**
 * The recorder of a running mock: the requests it saw, and how many replies it has left (unbounded for a `Respond` function).
 *
 * @since 0.1.0
 * @category services
 */
export class MockLanguageModel extends Context.Service<MockLanguageModel, {
  readonly requests: Effect.Effect<ReadonlyArray<Request>>
  readonly remaining: Effect.Effect<number>
}>()("@agentloop/testing/MockLanguageModel") {}

const provider = "mock"

/**
 * The deltas a provider would stream for `turn`, ending with its `turn_complete`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const deltas = (turn: Turn, chunkSize = 8): ReadonlyArray<TurnDelta> => {
  const out: Array<TurnDelta> = []
  for (const item of turn.items) {
    switch (item.type) {
      case "message": {
        for (const part of item.content) {
          // Images and files have no delta: they arrive whole, with the turn.
          if (part.type === "refusal") {
            for (const delta of pieces(part.refusal, chunkSize)) out.push({ type: "refusal_delta", delta })
          } else if (part.type === "input_text" || part.type === "output_text") {
            for (const delta of pieces(part.text, chunkSize)) out.push({ type: "text_delta", delta })
            // A part's citations follow its text, as providers stream them.
            if (part.type === "output_text") {
              for (const citation of part.annotations ?? []) out.push({ type: "citation", citation })
            }
          }
        }
        break
      }
      case "reasoning": {
        for (const part of item.summary ?? item.content) {
          const text = part.type === "refusal" ? part.refusal : Item.partText(part)
          for (const delta of pieces(text, chunkSize)) out.push({ type: "reasoning_delta", delta })
        }
        break
      }
      case "function_call": {
        out.push({ type: "function_call_start", call_id: item.call_id, name: item.name })
        for (const delta of pieces(item.arguments, chunkSize)) {
          out.push({ type: "function_call_arguments_delta", call_id: item.call_id, delta })
        }
        out.push({ type: "function_call_done", call_id: item.call_id, name: item.name, arguments: item.arguments })
        break
      }
      default:
        break
    }
  }
  out.push({ type: "usage", usage: turn.usage })
  out.push({ type: "turn_complete", turn })
  return out
}

/**
 * Answers a request from what it asks (its history and options) and its number
 * (0 for the first): for programs whose requests come in no fixed order, such
 * as agents running at once in a fork.
 *
 * @since 0.1.0
 * @category models
 */
export type Respond = (request: Request, index: number) => Reply

/**
 * A mock `LanguageModel` answering with `script`, one entry per request, or
 * with what a {@link Respond} function says, plus its recorder.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(script: ReadonlyArray<Reply> | Respond, options: Options = {}) {
  const requests = yield* Ref.make<ReadonlyArray<Request>>([])
  const chunkSize = Math.max(1, options.chunkSize ?? 8)
  const delay = options.delay === undefined ? undefined : Duration.fromInputUnsafe(options.delay)
  const pace = <A>(stream: Stream.Stream<A>): Stream.Stream<A> =>
    delay === undefined || Duration.isZero(delay) ? stream : Stream.tap(stream, () => Effect.sleep(delay))

  const streamTurn = (history: ReadonlyArray<Item.Item>, turnOptions: TurnOptions) =>
    Stream.unwrap(
      Ref.modify(requests, (seen) => [seen.length, [...seen, { history, options: turnOptions }]]).pipe(
        Effect.map((index): Stream.Stream<TurnDelta, AiError.AiError> => {
          const reply = typeof script === "function" ? script({ history, options: turnOptions }, index) : script[index]
          if (reply === undefined) {
            return Stream.fail(
              new AiError.InvalidRequest({
                provider,
                message: `MockLanguageModel: the script has ${script.length} ${
                  script.length === 1 ? "reply" : "replies"
                } and request ${index + 1} asked for another`
              })
            )
          }
          if (!("_tag" in reply)) return pace(Stream.fromIterable(deltas(reply, chunkSize)))
          if (reply._tag === "Held") {
            const all = deltas(reply.turn, chunkSize)
            return Stream.concat(
              pace(Stream.fromIterable(all.slice(0, reply.after))),
              Stream.unwrap(Effect.as(reply.until, pace(Stream.fromIterable(all.slice(reply.after)))))
            )
          }
          if (reply._tag !== "Partial") return Stream.fail(reply)
          const all = deltas(reply.turn, chunkSize)
          // Never the turn_complete: the turn breaks off before it.
          const streamed = all.slice(0, Math.min(reply.after, all.length - 1))
          return Stream.concat(pace(Stream.fromIterable(streamed)), Stream.fail(reply.error))
        })
      )
    )

  const model = LanguageModel.of({ provider, streamTurn })
  const recorder = MockLanguageModel.of({
    requests: Ref.get(requests),
    remaining: Effect.map(
      Ref.get(requests),
      (seen) => typeof script === "function" ? Number.POSITIVE_INFINITY : Math.max(0, script.length - seen.length)
    )
  })
  return { model, recorder }
})

/**
 * Provides `LanguageModel` from `script` (or a {@link Respond} function), and the `MockLanguageModel` recorder.
 *
 * @example
 * ```ts
 * import { AgentLoop, AiError } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 *
 * // A scripted model: one reply per turn it is asked for, in order; an AiError fails that turn.
 * const model = MockLanguageModel.layer([
 *   MockLanguageModel.callsTurn([{ name: "lookup", arguments: { q: "hi" } }]),
 *   new AiError.Unavailable({ provider: "mock", status: 529, message: "Overloaded" })
 * ])
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   const termination = yield* Effect.flip(agent.run({ input: "Hi" }))
 *   console.log(termination._tag) // DuringExecution
 *   // What the agent sent, turn by turn.
 *   const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
 *   console.log(requests.length, requests[1]?.history.at(-1)?.type) // 2 function_call_output
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provideMerge(model)))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  script: ReadonlyArray<Reply> | Respond,
  options?: Options
): Layer.Layer<LanguageModel | MockLanguageModel> =>
  Layer.effectContext(
    Effect.map(make(script, options), ({ model, recorder }) =>
      Context.make(LanguageModel, model).pipe(Context.add(MockLanguageModel, recorder)))
  )

/**
 * A finished assistant turn that says `text`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const textTurn = (text: string, options: {
  readonly usage?: TokenUsage.TokenUsage | undefined
  readonly model?: string | undefined
  readonly stopReason?: StopReason | undefined
} = {}): Turn => ({
  items: [{
    type: "message",
    id: "msg_mock",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text }]
  }],
  usage: options.usage ?? TokenUsage.make(10, Array.from(text).length),
  stopReason: options.stopReason ?? "stop",
  ...(options.model === undefined ? {} : { model: options.model })
})

/**
 * A finished turn that calls tools, each `arguments` given as a value to JSON-encode, optionally after some text.
 *
 * @since 0.1.0
 * @category constructors
 */
export const callsTurn = (
  calls: ReadonlyArray<{ readonly name: string; readonly arguments: unknown; readonly callId?: string | undefined }>,
  options: {
    readonly text?: string | undefined
    readonly usage?: TokenUsage.TokenUsage | undefined
    readonly model?: string | undefined
  } = {}
): Turn => ({
  items: [
    ...(options.text === undefined ? [] : textTurn(options.text).items),
    ...calls.map((call, index): Item.FunctionCall => ({
      type: "function_call",
      id: `fc_mock_${index}`,
      status: "completed",
      call_id: call.callId ?? `call_${index}`,
      name: call.name,
      arguments: JSON.stringify(call.arguments)
    }))
  ],
  usage: options.usage ?? TokenUsage.make(20, 10),
  stopReason: "tool_calls",
  ...(options.model === undefined ? {} : { model: options.model })
})
