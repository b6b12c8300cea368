/**
 * A stream in a span of its own, in one channel layer: what `Stream.withSpan`
 * around another stream operator does in three (an acquire-use-release, a
 * service provided on every pull, the operator), with a generator kept for
 * the stream's life. A run and each of its turns are such streams: at 100,000
 * runs in flight, each layer is heap per run, and each pull's frames are work
 * per event.
 *
 * @internal
 */
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Channel from "effect/Channel"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Pull from "effect/Pull"
import * as References from "effect/References"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"

/**
 * What a span stream may be given besides its span: services to provide, and
 * what to record of a failure.
 */
export interface Options<P, E> {
  /**
   * Provided to `open` and to every pull along with the span, as
   * `Stream.provideContext` would provide them (a copy of the context on
   * every pull).
   */
  readonly provided?: Context.Context<P> | undefined
  /** Called with the span and the error the stream fails with (not an interruption or a defect), before the span ends. */
  readonly onError?: ((span: Tracer.Span, error: E) => void) | undefined
}

/**
 * The stream whose pull `open` makes, in a span named `name`: the span is
 * made in a scope of the stream's own and ended with the stream's exit (its
 * pull's end or failure, or the stream's scope closed), as `Stream.withSpan`
 * ends it, and it is the parent span of `open` and of every pull. `open` is
 * given the span, the scope to open other streams in
 * (`Channel.toPullScoped`), and `ended`, which ends the span as the stream's
 * end does: for a stream that knows it has ended before it is pulled again
 * (its consumer may not pull it again).
 */
export const make = <A, E, R, E2, R2, P = never>(
  name: string,
  span: Tracer.SpanOptionsNoTrace,
  open: (
    span: Tracer.Span,
    scope: Scope.Scope,
    ended: () => void
  ) => Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<A>, E, void, R>, E2, R2>,
  options: Options<P, Pull.ExcludeDone<E> | E2> = {}
): Stream.Stream<A, Pull.ExcludeDone<E> | E2, Exclude<R | R2, Tracer.ParentSpan | P>> =>
  Stream.fromChannel(Channel.fromTransform((_, scope) =>
    Effect.suspend(() => {
      const spanScope = Scope.forkUnsafe(scope)
      return Effect.flatMap(makeSpanIn(name, span, spanScope), (made) => {
        const onError = options.onError
        // Called with the failure the stream's pull ended with: its end (a `Done`) ends the span as a success.
        // Read in place, not through `Cause.findError` and `Pull.doneExitFromCause` (a `Result` and an `Exit` made
        // for each span an interruption ends).
        const end = (failure: Exit.Failure<unknown, unknown>) => {
          if (onError !== undefined) {
            const error = errorOf(failure.cause)
            if (error !== undefined) onError(made, error.error as Pull.ExcludeDone<E> | E2)
          }
          // The span's scope holds its span's finalizer alone, which ends the span here and now: the `Effect.void`
          // it returns is nothing left to run.
          Scope.closeUnsafe(spanScope, Pull.isDoneCause(failure.cause) ? Exit.void : failure)
        }
        const inSpan = inContext(made, options.provided, end)
        return Effect.map(inSpan(open(made, scope, () => Scope.closeUnsafe(spanScope, Exit.void))), inSpan)
      })
    })
  ))

/** The first error of `cause` other than a stream's end (`Done`), if it has one. */
const errorOf = (cause: Cause.Cause<unknown>): Cause.Fail<unknown> | undefined => {
  for (const reason of cause.reasons) {
    if (reason._tag === "Fail" && !Cause.isDone(reason.error)) return reason
  }
  return undefined
}

/**
 * A span ended when `scope` closes, as `Effect.makeSpanScoped` ends it, but
 * by its finalizer itself rather than by an effect the finalizer returns:
 * `Scope.closeUnsafe` ends it there and then. A stream's unwinding (an
 * interrupted run's) runs no operation of its own for the span.
 */
const makeSpanIn = (name: string, options: Tracer.SpanOptionsNoTrace, scope: Scope.Scope): Effect.Effect<Tracer.Span> =>
  Effect.uninterruptible(Effect.flatMap(Effect.makeSpan(name, options), (made) =>
    Effect.withFiber((fiber) => {
      const clock = fiber.getRef(Clock.Clock)
      const timed = fiber.getRef(References.TracerTimingEnabled)
      const end = (exit: Exit.Exit<unknown, unknown>) => {
        if (made.status._tag !== "Ended") made.end(timed ? clock.currentTimeNanosUnsafe() : 0n, exit)
        return Effect.void
      }
      return Effect.as(Scope.addFinalizerExit(scope, end), made)
    })))

/**
 * Runs an effect with `span` as its parent span, the services of `provided`,
 * and `end` called with its failure, in one frame: the fiber's context with
 * them is derived once per context it is run in (a stream's pulls run in the
 * same one), where `Effect.provideService` would copy the context on every
 * pull.
 */
const inContext = <P>(
  span: Tracer.Span,
  provided: Context.Context<P> | undefined,
  end: (failure: Exit.Failure<unknown, unknown>) => void
) => {
  let outer: Context.Context<never> | undefined
  let inner: Context.Context<never> | undefined
  return <X, EX, RX>(effect: Effect.Effect<X, EX, RX>): Effect.Effect<X, EX, Exclude<RX, Tracer.ParentSpan | P>> =>
    Effect.withFiber((fiber) => {
      const context = fiber.context
      if (context !== outer) {
        outer = context
        const services = provided === undefined ? context : Context.merge(context, provided)
        inner = Context.add(services, Tracer.ParentSpan, span)
      }
      fiber.setContext(inner!)
      // A finalizer with nothing left to run returns no effect: a pull that succeeds (or a failure whose span
      // is ended there and then) runs no operation for the frame.
      return Effect.onExitPrimitive(effect as Effect.Effect<X, EX>, (exit: Exit.Exit<X, EX>) => {
        fiber.setContext(context)
        if (exit._tag === "Failure") end(exit)
        return undefined
      })
    })
}
