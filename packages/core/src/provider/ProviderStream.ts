/**
 * The decode half of a provider layer: a response body of Server-Sent Events
 * in, `TurnDelta`s out. A provider supplies a {@link Decoder} (its wire
 * schemas and turn assembly); the pull loop, the pending error and the end of
 * the body are handled here, once for every provider.
 *
 * The loop is fused: bytes are decoded to text, split into events, parsed,
 * decoded by `Schema` and assembled in one synchronous pass per network chunk,
 * so a long stream costs a few stream steps per chunk rather than per event.
 *
 * @since 0.1.0
 */
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Function from "effect/Function"
import * as Pull from "effect/Pull"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as Stream from "effect/Stream"
import * as AiError from "../AiError.ts"
import type * as Item from "../Item.ts"
import * as TokenUsage from "../TokenUsage.ts"
import type * as Turn from "../Turn.ts"
import type * as TurnDelta from "../TurnDelta.ts"
import * as SseParser from "./SseParser.ts"
import * as WireDecoder from "./WireDecoder.ts"

/**
 * The wire format of one provider for one turn: what each event means, and
 * what the end of the body means. Decoders are stateful; make one per request.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decoder {
  /**
   * Handles one event (`name` is its SSE `event:` field, or `"message"`),
   * pushing the deltas it makes to `out`. Returns the error that ends the turn, if any.
   */
  readonly event: (name: string, data: string, out: Array<TurnDelta.TurnDelta>) => AiError.AiError | undefined
  /** Whether the turn is complete: nothing more is read, and the request is closed. */
  readonly complete: boolean
  /**
   * The body ended before the turn was complete: pushes the closing deltas, or
   * returns the error (usually `AiError.IncompleteTurn`).
   */
  readonly end: (out: Array<TurnDelta.TurnDelta>) => AiError.AiError | undefined
  /** How the provider's servers bend the event-stream rules, if they do (see `SseParser.Dialect`). */
  readonly dialect?: SseParser.Dialect | undefined
}

/**
 * The longest event, in UTF-16 code units (16 MiB: a final event repeats the whole answer, so it can be long).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultMaxEventSize = 16 * 1024 * 1024

/**
 * The longest response body, in UTF-16 code units (128 Mi: a turn of 128K
 * output tokens streams some 40 MiB of events, its final event included).
 *
 * @since 0.2.0
 * @category constants
 */
export const defaultMaxResponseSize = 128 * 1024 * 1024

/**
 * How {@link decode} bounds what it reads.
 *
 * @since 0.2.0
 * @category decoding
 */
export interface DecodeOptions {
  readonly provider: string
  /** The longest event (default {@link defaultMaxEventSize}). */
  readonly maxEventSize?: number | undefined
  /** The longest body, all events together (default {@link defaultMaxResponseSize}). */
  readonly maxResponseSize?: number | undefined
}

/**
 * Decodes a response body into turn deltas with `decoder`. Deltas decoded
 * before a failure reach the consumer first; the failure follows on the next
 * pull. The stream ends as soon as the decoder is complete. An event longer
 * than `maxEventSize` (default {@link defaultMaxEventSize}), or a body longer
 * than `maxResponseSize` (default {@link defaultMaxResponseSize}: a server
 * streaming deltas for as long as the turn lasts), fails the stream with
 * `AiError.MalformedEvent` instead of buffering without bound.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode: {
  (decoder: Decoder, options: DecodeOptions): <E, R>(
    body: Stream.Stream<Uint8Array, E, R>
  ) => Stream.Stream<TurnDelta.TurnDelta, E | AiError.AiError, R>
  <E, R>(
    body: Stream.Stream<Uint8Array, E, R>,
    decoder: Decoder,
    options: DecodeOptions
  ): Stream.Stream<TurnDelta.TurnDelta, E | AiError.AiError, R>
} = Function.dual(3, <E, R>(
  body: Stream.Stream<Uint8Array, E, R>,
  decoder: Decoder,
  options: DecodeOptions
): Stream.Stream<TurnDelta.TurnDelta, E | AiError.AiError, R> =>
  Stream.transformPull(body, (upstream) =>
    Effect.sync(() => {
      const maxEventSize = options.maxEventSize ?? defaultMaxEventSize
      const maxResponseSize = options.maxResponseSize ?? defaultMaxResponseSize
      let read = 0
      const text = new TextDecoder()
      let out: Array<TurnDelta.TurnDelta> = []
      let failure: AiError.AiError | undefined
      let ended = false
      const parser = SseParser.make({
        maxEventSize,
        dialect: decoder.dialect,
        onEvent: (name, data) => {
          failure = decoder.event(name, data, out)
          return failure === undefined && !decoder.complete
        }
      })
      const feed = (piece: string): void => {
        read += piece.length
        if (read > maxResponseSize) {
          failure = new AiError.MalformedEvent({
            provider: options.provider,
            event: "(too large)",
            message: `the response is longer than ${maxResponseSize} characters`
          })
        } else if (piece.length > 0 && parser.feed(piece) === "too-large") {
          failure = new AiError.MalformedEvent({
            provider: options.provider,
            event: "(too large)",
            message: `an event is longer than ${maxEventSize} characters`
          })
        }
      }
      const upstreamOrEnd = Pull.catchDone(upstream, () => Effect.succeed(undefined))
      type Next = Pull.Pull<Arr.NonEmptyReadonlyArray<TurnDelta.TurnDelta>, E | AiError.AiError>
      const flush = (): Next => {
        if (Arr.isArrayNonEmpty(out)) {
          const deltas = out
          out = []
          return Effect.succeed(deltas)
        }
        return next
      }
      // `next` recurses as the last step of a flatMap, so a run of chunks without a delta costs no stack.
      const next: Next = Effect.suspend((): Next => {
        if (failure !== undefined) return Effect.fail(failure)
        if (ended || decoder.complete) return Cause.done()
        return Effect.flatMap(upstreamOrEnd, (chunk): Next => {
          if (chunk === undefined) {
            ended = true
            feed(text.decode())
            // An event the body did not finish with a blank line is dropped, as the SSE rules say, unless the dialect reads it.
            if (failure === undefined && !decoder.complete) parser.end()
            if (failure === undefined && !decoder.complete) failure = decoder.end(out)
            return flush()
          }
          for (const bytes of chunk) {
            feed(text.decode(bytes, { stream: true }))
            if (failure !== undefined || decoder.complete) break
          }
          return flush()
        })
      })
      return next
    })))

/**
 * What a decoder knows of its turn when it completes it (see {@link complete}).
 *
 * @since 0.2.0
 * @category models
 */
export interface Completion {
  readonly items: ReadonlyArray<Item.Item>
  /** The usage the stream reported; `undefined` when it reported none (the turn's usage is then `TokenUsage.empty`). */
  readonly usage: TokenUsage.TokenUsage | undefined
  readonly stopReason: Turn.StopReason
  readonly model?: string | undefined
  readonly responseId?: string | undefined
  readonly providerStopReason?: string | undefined
  /** The cost the provider reported, if it did. */
  readonly cost?: number | undefined
}

/**
 * Completes a decoder's turn: pushes to `out` a `usage` delta when the stream
 * reported usage, then the turn's one `turn_complete`, whose `Turn` carries
 * `model`, `responseId`, `providerStopReason` and `cost` when they are known.
 *
 * @example
 * ```ts
 * import { ProviderStream, TokenUsage, TurnDelta } from "@agentloop/core"
 *
 * const out: Array<TurnDelta.TurnDelta> = []
 * ProviderStream.complete(out, { items: [], usage: TokenUsage.make(3, 5), stopReason: "stop", model: "m" })
 * console.log(out.map((delta) => delta.type)) // [ 'usage', 'turn_complete' ]
 * ```
 *
 * @since 0.2.0
 * @category decoding
 */
export const complete = (out: Array<TurnDelta.TurnDelta>, completion: Completion): void => {
  const { cost, model, providerStopReason, responseId } = completion
  const usage = completion.usage ?? TokenUsage.empty
  if (completion.usage !== undefined) out.push({ type: "usage", usage })
  out.push({
    type: "turn_complete",
    turn: {
      items: completion.items,
      usage,
      stopReason: completion.stopReason,
      ...(model === undefined ? {} : { model }),
      ...(responseId === undefined ? {} : { responseId }),
      ...(providerStopReason === undefined ? {} : { providerStopReason }),
      ...(cost === undefined ? {} : { cost })
    }
  })
}

const formatIssue = SchemaIssue.makeFormatterStandardSchemaV1()

const pathText = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string =>
  path.map((segment, i) => {
    const key = typeof segment === "object" ? segment.key : segment
    return typeof key === "number" ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`
  }).join("")

/**
 * Parses an event's `data` as JSON; on failure the `AiError.MalformedEvent` names the event.
 *
 * @since 0.1.0
 * @category decoding
 */
export const parseJson = (
  provider: string,
  event: string,
  data: string
): Result.Result<unknown, AiError.MalformedEvent> => {
  try {
    return Result.succeed(JSON.parse(data))
  } catch (cause) {
    return Result.fail(
      new AiError.MalformedEvent({
        provider,
        event,
        message: `data is not JSON: ${cause instanceof Error ? cause.message : String(cause)}`
      })
    )
  }
}

/**
 * A decoder of a parsed event (or a part of one, found at path `at`) with
 * `schema` (through `WireDecoder`). On failure the `AiError.MalformedEvent`
 * names the event and the fields that did not match, e.g.
 * `content_index: Expected an integer`.
 *
 * @since 0.1.0
 * @category decoding
 */
export const valueDecoder = <A>(provider: string, schema: Schema.Decoder<A>) => {
  const decode = WireDecoder.make(schema)
  return (event: string, value: unknown, at?: string): Result.Result<A, AiError.MalformedEvent> => {
    const decoded = decode(value)
    if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
    const message = formatIssue(decoded.failure).issues
      .map(({ message, path }) => {
        const where = [at, path === undefined || path.length === 0 ? undefined : pathText(path)]
          .filter((part) => part !== undefined).join(".")
        return where.length === 0 ? message : `${where}: ${message}`
      })
      .join("; ")
    return Result.fail(new AiError.MalformedEvent({ provider, event, message }))
  }
}

/**
 * A decoder of an event's JSON `data` with `schema`: {@link parseJson}, then {@link valueDecoder}.
 *
 * @example
 * ```ts
 * import { ProviderStream } from "@agentloop/core"
 * import { Result, Schema } from "effect"
 *
 * // An event's `data` parsed and decoded; what does not decode is an AiError.MalformedEvent naming the event.
 * const decode = ProviderStream.jsonDecoder("example", Schema.Struct({ delta: Schema.String }))
 * console.log(decode("delta", "{\"delta\":\"Hi\"}")) // { _id: 'Result', _tag: 'Success', value: { delta: 'Hi' } }
 * const bad = decode("delta", "{\"delta\":42}")
 * if (Result.isFailure(bad)) console.log(bad.failure._tag) // MalformedEvent
 * ```
 *
 * @since 0.1.0
 * @category decoding
 */
export const jsonDecoder = <A>(provider: string, schema: Schema.Decoder<A>) => {
  const decodeValue = valueDecoder(provider, schema)
  return (event: string, data: string): Result.Result<A, AiError.MalformedEvent> => {
    const json = parseJson(provider, event, data)
    return Result.isSuccess(json) ? decodeValue(event, json.success) : Result.fail(json.failure)
  }
}

/**
 * Error messages are cut to this many characters (4,000): a peer can send megabytes of message.
 *
 * @since 0.1.0
 * @category constants
 */
export const maxMessageLength = 4000

const scrub = (secrets: ReadonlyArray<Redacted.Redacted<string>>, text: string): string => {
  let out = text
  for (const secret of secrets) {
    const value = Redacted.value(secret)
    if (value.length > 0 && out.includes(value)) out = out.split(value).join("<redacted>")
  }
  return out.length > maxMessageLength ? `${out.slice(0, maxMessageLength)}… (${out.length} characters)` : out
}

/**
 * Cuts `secrets` out of the message of any error the stream fails with, and
 * shortens a message longer than {@link maxMessageLength}. Apply it last in a
 * provider's pipeline: providers echo keys back in error bodies and in stream
 * events, not only in HTTP errors.
 *
 * @since 0.1.0
 * @category errors
 */
export const sanitizeErrors: {
  (secrets: ReadonlyArray<Redacted.Redacted<string>>): <A, R>(
    self: Stream.Stream<A, AiError.AiError, R>
  ) => Stream.Stream<A, AiError.AiError, R>
  <A, R>(
    self: Stream.Stream<A, AiError.AiError, R>,
    secrets: ReadonlyArray<Redacted.Redacted<string>>
  ): Stream.Stream<A, AiError.AiError, R>
} = Function.dual(
  2,
  <A, R>(self: Stream.Stream<A, AiError.AiError, R>, secrets: ReadonlyArray<Redacted.Redacted<string>>) =>
    Stream.mapError(self, (error) => AiError.withMessage(error, scrub(secrets, error.message)))
)
