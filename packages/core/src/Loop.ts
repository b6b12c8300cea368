/**
 * The pull-based loop: the user owns the state, one iteration is a `Stream`, and
 * a tiny tagged event decides whether the loop goes on.
 *
 * Nothing runs until the consumer pulls: the next body is built only when the
 * previous iteration has decided and the consumer asks for more, so
 * `Stream.take(n)` runs no more bodies than it needs. Each iteration's body lives
 * in its own scope, closed as soon as the iteration decides (or fails, or the
 * consumer goes away), which is how interrupting a consumer aborts the HTTP
 * request of the model call in flight.
 *
 * @since 0.1.0
 */
import * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Channel from "effect/Channel"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { dual } from "effect/Function"
import * as Pull from "effect/Pull"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as ChunkStream from "./internal/chunkStream.ts"

/**
 * A value that flows downstream to the loop's consumer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Value<out A> {
  readonly _tag: "Value"
  readonly value: A
}

/**
 * Ends the iteration and continues the loop with a new state.
 *
 * @since 0.1.0
 * @category models
 */
export interface Next<out S> {
  readonly _tag: "Next"
  readonly state: S
}

/**
 * Ends the iteration and the loop.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stop {
  readonly _tag: "Stop"
}

/**
 * What a loop body emits. A `Next` or a `Stop` is terminal for its iteration:
 * anything the body emits after it is dropped.
 *
 * @since 0.1.0
 * @category models
 */
export type Event<A, S> = Value<A> | Next<S> | Stop

/**
 * One iteration of a loop: a stream of events, or an Effect that builds one.
 * The Effect may acquire scoped resources; they are released when the iteration ends.
 *
 * @since 0.1.0
 * @category models
 */
export type Body<S, A, E, R> = (
  state: S
) => Stream.Stream<Event<A, S>, E, R> | Effect.Effect<Stream.Stream<Event<A, S>, E, R>, E, R | Scope.Scope>

/**
 * Wraps a value for the consumer.
 *
 * @since 0.1.0
 * @category constructors
 */
export const value = <A>(value: A): Value<A> => ({ _tag: "Value", value })

/**
 * Signals that the loop continues with `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const next = <S>(state: S): Next<S> => ({ _tag: "Next", state })

const stopEvent: Stop = { _tag: "Stop" }

/** What comes after the values of a {@link Decided} stream: the decision, or the rest of the iteration. */
type Then<A, S, E, R> = Next<S> | Stop | (() => ReturnType<Body<S, A, E, R>>)

/**
 * The stream built by {@link nextAfter}, {@link stopAfter}, {@link decideAfter}
 * and {@link stop}. It is an ordinary event stream, and also keeps its parts so
 * that `loop` can pull the values directly instead of wrapping and unwrapping
 * each one. Its event channel is built only if something other than `loop`
 * consumes it: these streams are made once per iteration, on the hot path.
 */
interface Decided<A, S, E, R> extends Stream.Stream<Event<A, S>, E, R> {
  readonly values: Stream.Stream<A, E, R>
  readonly decision: Then<A, S, E, R>
}

const rest = <A, S, E, R>(then: () => ReturnType<Body<S, A, E, R>>): Stream.Stream<Event<A, S>, E, R> =>
  Stream.unwrap(Effect.suspend(() => {
    const built = then()
    return Effect.isEffect(built) ? built : Effect.succeed(built)
  }))

const DecidedProto: object = Object.create(Object.getPrototypeOf(Stream.empty), {
  channel: {
    get(this: Decided<unknown, unknown, unknown, unknown>) {
      const decision = this.decision
      const after = typeof decision === "function" ? rest(decision) : Stream.succeed(decision)
      return Stream.concat(Stream.map(this.values, value), after).channel
    }
  }
})

const decided = <A, S, E, R>(values: Stream.Stream<A, E, R>, decision: Then<A, S, E, R>): Decided<A, S, E, R> => {
  const self = Object.create(DecidedProto)
  self.values = values
  self.decision = decision
  return self
}

const isDecided = <A, S, E, R>(stream: Stream.Stream<Event<A, S>, E, R>): stream is Decided<A, S, E, R> =>
  Object.getPrototypeOf(stream) === DecidedProto

/**
 * A single-event stream that ends the loop.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stop: Stream.Stream<Event<never, never>> = decided(Stream.empty, stopEvent)

/**
 * Emits the values of `values`, then continues the loop with `state`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const nextAfter: {
  <S>(state: S): <A, E, R>(values: Stream.Stream<A, E, R>) => Stream.Stream<Event<A, S>, E, R>
  <A, E, R, S>(values: Stream.Stream<A, E, R>, state: S): Stream.Stream<Event<A, S>, E, R>
} = /* @__PURE__ */ dual(2, <A, E, R, S>(values: Stream.Stream<A, E, R>, state: S) => decided(values, next(state)))

/**
 * Emits the values of `values`, then ends the loop.
 *
 * @since 0.1.0
 * @category constructors
 */
export const stopAfter = <A, E, R>(values: Stream.Stream<A, E, R>): Stream.Stream<Event<A, never>, E, R> =>
  decided(values, stopEvent)

/**
 * Emits the values of `values`, then goes on with the events of `then()`,
 * built once the values have ended: more values and the decision. The whole is
 * one iteration, in one scope. This is how a body decides on what it has just
 * streamed (a model turn, say) without wrapping each value in an event.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Loop } from "@agentloop/core"
 *
 * // 1, 2, then their sum, 3: the body decides once the values were pulled.
 * const summed = Loop.loop(0, () => {
 *   let total = 0
 *   const values = Stream.make(1, 2).pipe(Stream.tap((n) => Effect.sync(() => (total += n))))
 *   return Loop.decideAfter(values, () => Loop.stopAfter(Stream.make(total)))
 * })
 * ```
 * @since 0.1.0
 * @category constructors
 */
export const decideAfter: {
  <A2, S, E2, R2, E3 = never, R3 = never>(
    then: () => Stream.Stream<Event<A2, S>, E2, R2> | Effect.Effect<Stream.Stream<Event<A2, S>, E2, R2>, E3, R3>
  ): <A, E, R>(
    values: Stream.Stream<A, E, R>
  ) => Stream.Stream<Event<A | A2, S>, E | E2 | E3, R | R2 | Exclude<R3, Scope.Scope>>
  <A, E, R, A2, S, E2, R2, E3 = never, R3 = never>(
    values: Stream.Stream<A, E, R>,
    then: () => Stream.Stream<Event<A2, S>, E2, R2> | Effect.Effect<Stream.Stream<Event<A2, S>, E2, R2>, E3, R3>
  ): Stream.Stream<Event<A | A2, S>, E | E2 | E3, R | R2 | Exclude<R3, Scope.Scope>>
} = /* @__PURE__ */ dual(2, <A, E, R, A2, S, E2, R2, E3, R3>(
  values: Stream.Stream<A, E, R>,
  then: () => Stream.Stream<Event<A2, S>, E2, R2> | Effect.Effect<Stream.Stream<Event<A2, S>, E2, R2>, E3, R3>
): Stream.Stream<Event<A | A2, S>, E | E2 | E3, R | R2 | Exclude<R3, Scope.Scope>> =>
  // The loop runs `then` in the iteration's scope; its services are the loop's own.
  decided<A | A2, S, E | E2 | E3, R | R2 | Exclude<R3, Scope.Scope>>(
    values,
    then as () => ReturnType<Body<S, A | A2, E | E2 | E3, R | R2 | Exclude<R3, Scope.Scope>>>
  ))

type Chunk<A> = Arr.NonEmptyReadonlyArray<A>

const make = <S, A, E, R>(initial: S, body: Body<S, A, E, R>): Stream.Stream<A, E, R> =>
  Stream.fromChannel(Channel.fromTransform((upstream, loopScope) =>
    Effect.sync(() => {
      let state = initial
      let finished = false
      let iterationScope: Scope.Closeable | undefined
      let current: Pull.Pull<Chunk<A>, E, void, R> | undefined

      const pull: Pull.Pull<Chunk<A>, E, void, R> = Effect.suspend(() => current ?? startIteration())

      // A scope nothing was added to can serve the next iteration as it is.
      const endIteration = <X, EX, RX>(then: () => Effect.Effect<X, EX, RX>): Effect.Effect<X, EX, RX> => {
        current = undefined
        const scope = iterationScope!
        if (scope.state._tag === "Empty") return then()
        iterationScope = undefined
        return Effect.flatMap(Scope.close(scope, Exit.void), then)
      }

      // A failed iteration's scope is closed with its failure before the failure goes on: what the iteration
      // acquired (a model request, tools) is released before anything downstream handles the failure.
      const failIteration = (cause: Cause.Cause<E>): Pull.Pull<never, E, void> => {
        current = undefined
        const scope = iterationScope
        iterationScope = undefined
        const failed = Exit.failCause(cause)
        return scope === undefined ? failed : Effect.andThen(Scope.close(scope, failed), failed)
      }

      const decide = (decision: Next<S> | Stop): Pull.Pull<Chunk<A>, E, void, R> => {
        if (decision._tag === "Stop") {
          finished = true
          return Cause.done()
        }
        state = decision.state
        return startIteration()
      }

      const startIteration = (): Pull.Pull<Chunk<A>, E, void, R> => {
        if (finished) return Cause.done()
        return build(() => body(state), iterationScope ??= Scope.forkUnsafe(loopScope))
      }

      // A body's effect that has its result already (an `Exit`: a body that had nothing to wait for) is not run:
      // its stream is opened, or its failure fails the iteration, there and then.
      const build = (make: () => ReturnType<Body<S, A, E, R>>, scope: Scope.Scope): Pull.Pull<Chunk<A>, E, void, R> => {
        const built = make()
        if (!Effect.isEffect(built)) return open(built, scope)
        const opening: Effect.Effect<Stream.Stream<Event<A, S>, E, R>, E, R> = Exit.isExit(built)
          ? built as Exit.Exit<Stream.Stream<Event<A, S>, E, R>, E>
          : Scope.provide(built, scope)
        return Effect.matchCauseEffectEager(opening, {
          onSuccess: (events) => open(events, scope),
          onFailure: failIteration
        })
      }

      const open = (
        events: Stream.Stream<Event<A, S>, E, R>,
        scope: Scope.Scope
      ): Pull.Pull<Chunk<A>, E, void, R> => {
        if (isDecided(events)) {
          const decision = events.decision
          const then = typeof decision === "function"
            ? () => build(decision, scope)
            : () => endIteration(() => decide(decision))
          // Values known up front are emitted as they are: no stream to open.
          const known = ChunkStream.valuesOf(events.values)
          if (known !== undefined) {
            if (!Arr.isReadonlyArrayNonEmpty(known)) return then()
            current = Effect.suspend(then)
            return Effect.succeed(known)
          }
          return Effect.flatMapEager(Channel.toTransform(events.values.channel)(upstream, scope), (valuesPull) => {
            current = Effect.catchCause(valuesPull, (cause) => {
              const failure = Pull.filterNoDone(cause)
              return Result.isFailure(failure) ? then() : failIteration(failure.success)
            })
            return current
          })
        }
        return Effect.flatMapEager(Channel.toTransform(events.channel)(upstream, scope), (eventsPull) => {
          current = Pull.matchEffect(eventsPull, {
            onSuccess: split,
            onFailure: failIteration,
            // A body that ends without deciding ends the loop.
            onDone: () => endIteration(() => decide(stopEvent))
          })
          return current
        })
      }

      const split = (chunk: Chunk<Event<A, S>>): Pull.Pull<Chunk<A>, E, void, R> => {
        const values: Array<A> = []
        for (const event of chunk) {
          if (event._tag === "Value") {
            values.push(event.value)
            continue
          }
          return endIteration(() => {
            if (values.length === 0) return decide(event)
            current = Effect.suspend(() => decide(event))
            return Effect.succeed(values as unknown as Chunk<A>)
          })
        }
        return Effect.succeed(values as unknown as Chunk<A>)
      }

      return pull
    })
  ))

/**
 * Runs `body` from `initial`, iteration after iteration, and streams the values
 * the iterations emit. Each `Next` starts the next iteration with its state; a
 * `Stop`, or a body that ends without deciding, ends the loop.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Loop } from "@agentloop/core"
 *
 * // 0, 1, 2
 * const counter = Loop.loop(0, (n) => n < 3 ? Loop.nextAfter(Stream.make(n), n + 1) : Loop.stop)
 * ```
 * @since 0.1.0
 * @category running
 */
export const loop: {
  <S, A, E, R>(body: Body<S, A, E, R>): (initial: S) => Stream.Stream<A, E, R>
  <S, A, E, R>(initial: S, body: Body<S, A, E, R>): Stream.Stream<A, E, R>
} = /* @__PURE__ */ dual(2, make)
