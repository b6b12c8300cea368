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
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Pull from "effect/Pull"
import * as Result from "effect/Result"
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
 * given the span and the scope to open other streams in
 * (`Channel.toPullScoped`).
 */
export const make = <A, E, R, E2, R2, P = never>(
  name: string,
  span: Tracer.SpanOptionsNoTrace,
  open: (
    span: Tracer.Span,
    scope: Scope.Scope
  ) => Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<A>, E, void, R>, E2, R2>,
  options: Options<P, Pull.ExcludeDone<E> | E2> = {}
): Stream.Stream<A, Pull.ExcludeDone<E> | E2, Exclude<R | R2, Tracer.ParentSpan | P>> =>
  Stream.fromChannel(Channel.fromTransform((_, scope) =>
    Effect.suspend(() => {
      const spanScope = Scope.forkUnsafe(scope)
      return Effect.flatMap(Scope.provide(Effect.makeSpanScoped(name, span), spanScope), (made) => {
        const onError = options.onError
        const end = (cause: Cause.Cause<unknown>) => {
          if (onError !== undefined) {
            const error = Cause.findError(cause)
            if (Result.isSuccess(error) && !Cause.isDone(error.success)) {
              onError(made, error.success as Pull.ExcludeDone<E> | E2)
            }
          }
          return Scope.close(spanScope, Pull.doneExitFromCause(cause))
        }
        const inSpan = inContext(made, options.provided, end)
        return Effect.map(inSpan(open(made, scope)), inSpan)
      })
    })
  ))

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
  end: (cause: Cause.Cause<unknown>) => Effect.Effect<void>
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
      return Effect.onExit(effect as Effect.Effect<X, EX>, (exit: Exit.Exit<X, EX>) => {
        fiber.setContext(context)
        return exit._tag === "Success" ? Effect.void : end(exit.cause)
      })
    })
}
