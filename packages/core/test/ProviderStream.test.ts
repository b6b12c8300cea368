import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Redacted, Result, Schema, Stream } from "effect"
import * as AiError from "../src/AiError.ts"
import * as ProviderStream from "../src/provider/ProviderStream.ts"
import type * as TurnDelta from "../src/TurnDelta.ts"

const encoder = new TextEncoder()

/** A decoder of a toy wire: `text` events are text, `done` completes, `fail` fails; the end of the body closes with `usage`. */
const toy = (): ProviderStream.Decoder & { readonly seen: Array<string> } => {
  const seen: Array<string> = []
  const decoder = {
    seen,
    complete: false,
    event: (name: string, data: string, out: Array<TurnDelta.TurnDelta>) => {
      seen.push(name)
      if (name === "text") out.push({ type: "text_delta", delta: data })
      if (name === "done") decoder.complete = true
      return name === "fail" ? new AiError.Unavailable({ provider: "toy", message: data }) : undefined
    },
    end: (out: Array<TurnDelta.TurnDelta>) => {
      out.push({ type: "usage", usage: { input: 1, output: 1, total: 2 } })
      return undefined
    }
  }
  return decoder
}

const bytes = (...texts: ReadonlyArray<string>) => Stream.fromIterable(texts.map((text) => encoder.encode(text)))

const run = (
  body: Stream.Stream<Uint8Array>,
  decoder: ProviderStream.Decoder,
  maxEventSize?: number,
  maxResponseSize?: number
) =>
  Effect.gen(function*() {
    const deltas: Array<TurnDelta.TurnDelta> = []
    const exit = yield* body.pipe(
      ProviderStream.decode(decoder, { provider: "toy", maxEventSize, maxResponseSize }),
      Stream.runForEach((delta) => Effect.sync(() => deltas.push(delta))),
      Effect.exit
    )
    return { deltas, exit }
  })

describe("ProviderStream.decode", () => {
  it.effect("decodes events split anywhere, multi-byte characters included, and closes with the decoder's end", () =>
    Effect.gen(function*() {
      const text = "event: text\ndata: ünï ✓\n\nevent: text\ndata: 🎉\n\n"
      const all = encoder.encode(text)
      const pieces = Array.from(all, (_, i) => all.subarray(i, i + 1))
      const { deltas, exit } = yield* run(Stream.fromIterable(pieces), toy())
      expect(exit).toStrictEqual(Exit.void)
      expect(deltas).toStrictEqual([
        { type: "text_delta", delta: "ünï ✓" },
        { type: "text_delta", delta: "🎉" },
        { type: "usage", usage: { input: 1, output: 1, total: 2 } }
      ])
    }))

  it.effect("delivers the deltas before a failure, then fails, reading nothing more", () =>
    Effect.gen(function*() {
      const decoder = toy()
      const { deltas, exit } = yield* run(
        bytes(
          "event: text\ndata: a\n\nevent: fail\ndata: boom\n\nevent: text\ndata: b\n\n",
          "event: text\ndata: c\n\n"
        ),
        decoder
      )
      expect(deltas).toStrictEqual([{ type: "text_delta", delta: "a" }])
      expect(exit).toStrictEqual(Exit.fail(new AiError.Unavailable({ provider: "toy", message: "boom" })))
      expect(decoder.seen).toStrictEqual(["text", "fail"])
    }))

  it.effect("stops pulling the body once the decoder is complete, without calling end", () =>
    Effect.gen(function*() {
      let pulled = 0
      const body = bytes(
        "event: text\ndata: a\n\nevent: done\ndata: {}\n\nevent: text\ndata: b\n\n",
        "event: text\ndata: c\n\n"
      )
        .pipe(Stream.tap(() => Effect.sync(() => pulled++)))
      const { deltas, exit } = yield* run(body, toy())
      expect(exit).toStrictEqual(Exit.void)
      expect(deltas).toStrictEqual([{ type: "text_delta", delta: "a" }])
      expect(pulled).toBe(1)
    }))

  it.effect("drops an event the body did not finish, and fails one longer than maxEventSize", () =>
    Effect.gen(function*() {
      const decoder = toy()
      yield* run(bytes("event: text\ndata: a\n\nevent: text\ndata: never finished"), decoder)
      expect(decoder.seen).toStrictEqual(["text"])
      const { exit } = yield* run(bytes("event: text\ndata: ", "x".repeat(100)), toy(), 64)
      expect(exit).toStrictEqual(Exit.fail(
        new AiError.MalformedEvent({
          provider: "toy",
          event: "(too large)",
          message: "an event is longer than 64 characters"
        })
      ))
    }))
  it.effect("fails a body longer than maxResponseSize, however small its events, and stops reading it", () =>
    Effect.gen(function*() {
      // A server streaming small deltas for as long as the turn lasts: generated as it is read.
      let pulled = 0
      const endless = Stream.fromIterable({
        *[Symbol.iterator]() {
          while (true) {
            pulled++
            yield encoder.encode(`event: text\ndata: ${"x".repeat(1000)}\n\n`)
          }
        }
      })
      const { deltas, exit } = yield* run(endless, toy(), undefined, 1024 * 1024)
      expect(exit).toStrictEqual(Exit.fail(
        new AiError.MalformedEvent({
          provider: "toy",
          event: "(too large)",
          message: `the response is longer than ${1024 * 1024} characters`
        })
      ))
      expect(deltas.length).toBeLessThan(1100)
      // One chunk of the iterable (4096 events) is pulled, no more.
      expect(pulled).toBeLessThanOrEqual(4096)
    }))

  it.effect("reads the body in the decoder's dialect: field lines as events, and the last event without its blank line", () =>
    Effect.gen(function*() {
      const decoder = Object.assign(toy(), { dialect: { fieldEvents: ["fail"] } })
      const failed = yield* run(bytes("event: text\ndata: a\n\nfail: the server broke\n\n"), decoder)
      expect(failed.deltas).toStrictEqual([{ type: "text_delta", delta: "a" }])
      expect(failed.exit).toStrictEqual(
        Exit.fail(new AiError.Unavailable({ provider: "toy", message: "the server broke" }))
      )
      const last = Object.assign(toy(), { dialect: { dispatchAtEnd: (data: string) => data === "b" } })
      const ended = yield* run(bytes("event: text\ndata: a\n\nevent: text\ndata: b"), last)
      expect(last.seen).toStrictEqual(["text", "text"])
      // The last event is read before the decoder's end, which still closes the turn.
      expect(ended.deltas.map((d) => d.type)).toStrictEqual(["text_delta", "text_delta", "usage"])
      // An event that completes the turn at the end leaves the decoder's end uncalled.
      const done = Object.assign(toy(), { dialect: { dispatchAtEnd: () => true } })
      const completed = yield* run(bytes("event: text\ndata: a\n\nevent: done\ndata: x\n"), done)
      expect(completed.deltas.map((d) => d.type)).toStrictEqual(["text_delta"])
    }))
})

describe("ProviderStream.jsonDecoder", () => {
  const decode = ProviderStream.jsonDecoder(
    "toy",
    Schema.Struct({
      item_id: Schema.String,
      content_index: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
      parts: Schema.Array(Schema.Struct({ text: Schema.String }))
    })
  )

  it("decodes the JSON data of an event", () => {
    expect(decode("e", "{\"item_id\":\"a\",\"content_index\":2,\"parts\":[]}")).toStrictEqual(
      Result.succeed({ item_id: "a", content_index: 2, parts: [] })
    )
  })

  it("names the event and the field that did not decode, and says when data is not JSON", () => {
    const failure = (data: string) => {
      const result = decode("response.x", data)
      return Result.isFailure(result) ? result.failure : undefined
    }
    expect(failure("{\"item_id\":\"a\",\"content_index\":-1,\"parts\":[]}")).toMatchObject({
      _tag: "MalformedEvent",
      event: "response.x",
      message: "content_index: Expected a value greater than or equal to 0"
    })
    expect(failure("{\"item_id\":\"a\",\"content_index\":0,\"parts\":[{\"text\":1}]}")?.message)
      .toBe("parts[0].text: Expected string")
    expect(failure("{\"content_index\":0,\"parts\":[]}")?.message).toBe("item_id: Missing key")
    expect(failure("{\"item_id\":")?.message).toMatch(/^data is not JSON/)
  })
})

describe("ProviderStream.sanitizeErrors", () => {
  const secret = "sk-canary-DO-NOT-LEAK"

  it.effect("cuts secrets out of every kind of error and shortens long messages, keeping the other fields", () =>
    Effect.gen(function*() {
      const errors: ReadonlyArray<AiError.AiError> = [
        new AiError.AuthFailed({ provider: "p", status: 401, message: `bad ${secret}` }),
        new AiError.RateLimited({ provider: "p", message: secret, retryAfter: Duration.seconds(2) }),
        new AiError.Timeout({ provider: "p", message: secret }),
        new AiError.ContextLengthExceeded({ provider: "p", message: secret }),
        new AiError.InvalidRequest({ provider: "p", status: 400, message: secret }),
        new AiError.Unavailable({ provider: "p", message: `${secret}${secret}` }),
        new AiError.MalformedEvent({ provider: "p", event: "e", message: secret }),
        new AiError.QuotaExceeded({ provider: "p", status: 429, message: secret }),
        new AiError.IncompleteTurn({ message: secret })
      ]
      for (const error of errors) {
        const clean = yield* Effect.flip(
          Stream.runDrain(ProviderStream.sanitizeErrors(Stream.fail(error), [Redacted.make(secret)]))
        )
        expect(clean._tag).toBe(error._tag)
        expect(clean.message).not.toContain(secret)
        expect(clean.message).toContain("<redacted>")
        expect({ ...clean, message: "" }).toStrictEqual({ ...error, message: "" })
      }
      const long = new AiError.Unavailable({ provider: "p", message: "x".repeat(50_000) })
      const short = yield* Effect.flip(Stream.runDrain(ProviderStream.sanitizeErrors(Stream.fail(long), [])))
      expect(short.message).toBe(`${"x".repeat(ProviderStream.maxMessageLength)}… (50000 characters)`)
      const untouched = new AiError.Timeout({ provider: "p", message: "fine" })
      expect(yield* Effect.flip(Stream.runDrain(ProviderStream.sanitizeErrors(Stream.fail(untouched), [])))).toBe(
        untouched
      )
    }))
})

describe("ProviderStream.complete", () => {
  it("pushes the usage delta only when usage was reported, then one turn_complete without the unknown fields", () => {
    const reported: Array<TurnDelta.TurnDelta> = []
    const usage = { input: 3, output: 5, total: 8 }
    ProviderStream.complete(reported, {
      items: [],
      usage,
      stopReason: "max_tokens",
      model: "m",
      responseId: "r",
      providerStopReason: "length",
      cost: 0.5
    })
    expect(reported).toStrictEqual([
      { type: "usage", usage },
      {
        type: "turn_complete",
        turn: {
          items: [],
          usage,
          stopReason: "max_tokens",
          model: "m",
          responseId: "r",
          providerStopReason: "length",
          cost: 0.5
        }
      }
    ])
    const unreported: Array<TurnDelta.TurnDelta> = []
    ProviderStream.complete(unreported, { items: [], usage: undefined, stopReason: "stop", model: undefined })
    expect(unreported).toStrictEqual([
      { type: "turn_complete", turn: { items: [], usage: { input: 0, output: 0, total: 0 }, stopReason: "stop" } }
    ])
  })
})
