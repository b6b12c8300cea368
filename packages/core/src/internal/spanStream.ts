/**
 * A stream in a span of its own, in one channel layer: what `Stream.withSpan`
 * around another stream operator does in three (an acquire-use-release, a
 * service provided on every pull, the operator), with a generator kept for
 * the stream's life. A run and each of its turns are such streams: at 100,000
 * runs in flight, each layer is heap per run.
 *
 * @internal
 */
import type * as Arr from "effect/Array"
import * as Channel from "effect/Channel"
import * as Effect from "effect/Effect"
import type * as Pull from "effect/Pull"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"

/**
 * The stream whose pull `open` makes, in a span named `name`: the span is
 * made in the stream's own scope and ended with the stream's exit, as
 * `Stream.withSpan` ends it, and it is the parent span of `open` and of every
 * pull. `open` is given the span and the scope to open other streams in
 * (`Channel.toPullScoped`).
 */
export const make = <A, E, R, E2, R2>(
  name: string,
  options: Tracer.SpanOptionsNoTrace,
  open: (
    span: Tracer.Span,
    scope: Scope.Scope
  ) => Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<A>, E, void, R>, E2, R2>
): Stream.Stream<A, Pull.ExcludeDone<E> | E2, Exclude<R | R2, Tracer.ParentSpan>> =>
  Stream.fromChannel(Channel.fromTransformBracket((_, scope, spanScope) =>
    Effect.flatMap(
      Scope.provide(Effect.makeSpanScoped(name, options), spanScope),
      (span) =>
        Effect.map(
          Effect.provideService(open(span, scope), Tracer.ParentSpan, span),
          (pull) => Effect.provideService(pull, Tracer.ParentSpan, span)
        )
    )
  ))
