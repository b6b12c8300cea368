/**
 * A tracer that keeps every span it starts, for tests that look at spans: what
 * a run recorded, and that no secret leaked into an attribute, event or exit.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { Headers } from "effect/http"
import * as Tracer from "effect/Tracer"
import * as util from "node:util"

/**
 * The recorded spans, in the order they started, and the tracer that records them.
 *
 * @since 0.1.0
 * @category models
 */
export interface SpanRecorder {
  readonly tracer: Tracer.Tracer
  readonly spans: ReadonlyArray<Tracer.NativeSpan>
}

/**
 * A new recorder; run the code under test with `Effect.withTracer(recorder.tracer)`.
 *
 * @example
 * ```ts
 * import { SpanRecorder } from "@agentloop/testing"
 * import { Effect } from "effect"
 *
 * const recorder = SpanRecorder.make()
 * const program = Effect.void.pipe(Effect.withSpan("chat gpt-5-mini", { attributes: { "gen_ai.request.model": "gpt-5-mini" } }))
 *
 * Effect.runPromise(program.pipe(Effect.withTracer(recorder.tracer))).then(() => {
 *   console.log(recorder.spans.map((span) => span.name)) // [ 'chat gpt-5-mini' ]
 *   // Everything the spans hold, as text: assert that no secret is in it.
 *   console.log(SpanRecorder.text(recorder.spans).includes("sk-")) // false
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (): SpanRecorder => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span: (options) => {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { tracer, spans }
}

/**
 * What a span exporter sends of the spans, as one text to search for a leaked
 * secret: names, attributes, events, and the causes of failed spans. A
 * successful span's value is not exported, and is not included.
 *
 * @since 0.1.0
 * @category getters
 */
export const text = (spans: ReadonlyArray<Tracer.NativeSpan>): string =>
  JSON.stringify(spans.map((span) => [
    span.name,
    [...span.attributes].map(([key, value]) => [key, String(value)]),
    span.events,
    span.status._tag === "Ended" && Exit.isFailure(span.status.exit) ? Cause.pretty(span.status.exit.cause) : ""
  ]))

/**
 * The spans as anything may print them whole, exits included: `util.inspect`
 * and `JSON.stringify`, where no header name is redacted (an exporter's fiber,
 * a logger with a list of its own). A secret must not be in them at all.
 *
 * @since 0.2.0
 * @category inspection
 */
export const printed = (spans: ReadonlyArray<Tracer.NativeSpan>): Effect.Effect<string> =>
  Effect.sync(() =>
    util.inspect(spans, { depth: Infinity }) +
    JSON.stringify(spans, (_, value) => typeof value === "bigint" ? String(value) : value)
  ).pipe(Effect.provideService(Headers.CurrentRedactedNames, []))
