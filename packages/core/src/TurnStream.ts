/**
 * A model's turn as a stream: its deltas forwarded into a loop until the turn
 * completes, then the loop's decision on the assembled turn.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { IncompleteTurn } from "./AiError.ts"
import * as Loop from "./Loop.ts"
import type { Turn } from "./Turn.ts"
import type { TurnDelta } from "./TurnDelta.ts"

/**
 * The one way an assembled `Turn` leaves its delta stream. Whoever reads the
 * deltas hands the `turn_complete`'s turn to `complete`; what runs once the
 * stream has ended reads it from `turn`, which fails with `IncompleteTurn` when
 * the stream ended without one. `reset` forgets it, for a stream run again.
 * {@link streamUntilComplete} and the agent's turn (`AgentTurn.complete`) are
 * built on it.
 *
 * @since 0.2.0
 * @category models
 */
export interface Completion {
  readonly complete: (turn: Turn) => void
  readonly reset: () => void
  readonly turn: Effect.Effect<Turn, IncompleteTurn>
}

/**
 * A {@link Completion} with no turn yet.
 *
 * @since 0.2.0
 * @category constructors
 */
export const completion = (): Completion => {
  let completed: Turn | undefined
  return {
    complete: (turn) => {
      completed = turn
    },
    reset: () => {
      completed = undefined
    },
    turn: Effect.suspend(() =>
      completed === undefined
        ? Effect.fail(
          new IncompleteTurn({ message: "The model's stream ended before its turn_complete: the turn is lost" })
        )
        : Effect.succeed(completed)
    )
  }
}

/**
 * Turns a model's stream of deltas into loop events: every delta, including the
 * terminal `turn_complete`, flows downstream as a value; then `then` runs with the
 * assembled turn and its events follow. A stream that ends without a
 * `turn_complete` fails with `IncompleteTurn` (see {@link Completion}).
 *
 * @example
 * ```ts
 * import { Loop, Turn, TurnStream } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Stream } from "effect"
 *
 * // Pass a model's deltas on, then decide with the completed turn.
 * const deltas = Stream.fromIterable(MockLanguageModel.deltas(MockLanguageModel.textTurn("Hello!"), 3))
 * const iteration = TurnStream.streamUntilComplete(deltas, (turn) => Loop.stopAfter(Stream.make(Turn.text(turn))))
 *
 * Effect.runPromise(Stream.runCollect(Loop.loop(0, () => iteration))).then((events) =>
 *   console.log(events.filter((event) => typeof event === "string")) // [ 'Hello!' ]
 * )
 * ```
 *
 * @since 0.2.0
 * @category streaming
 */
export const streamUntilComplete: {
  <A, S, E2, R2, E3 = never, R3 = never>(
    then: (
      turn: Turn
    ) => Stream.Stream<Loop.Event<A, S>, E2, R2> | Effect.Effect<Stream.Stream<Loop.Event<A, S>, E2, R2>, E3, R3>
  ): <E, R>(
    deltas: Stream.Stream<TurnDelta, E, R>
  ) => Stream.Stream<Loop.Event<TurnDelta | A, S>, E | E2 | E3 | IncompleteTurn, R | R2 | Exclude<R3, Scope.Scope>>
  <E, R, A, S, E2, R2, E3 = never, R3 = never>(
    deltas: Stream.Stream<TurnDelta, E, R>,
    then: (
      turn: Turn
    ) => Stream.Stream<Loop.Event<A, S>, E2, R2> | Effect.Effect<Stream.Stream<Loop.Event<A, S>, E2, R2>, E3, R3>
  ): Stream.Stream<Loop.Event<TurnDelta | A, S>, E | E2 | E3 | IncompleteTurn, R | R2 | Exclude<R3, Scope.Scope>>
} = /* @__PURE__ */ dual(2, <E, R, A, S, E2, R2, E3, R3>(
  deltas: Stream.Stream<TurnDelta, E, R>,
  then: (
    turn: Turn
  ) => Stream.Stream<Loop.Event<A, S>, E2, R2> | Effect.Effect<Stream.Stream<Loop.Event<A, S>, E2, R2>, E3, R3>
): Stream.Stream<Loop.Event<TurnDelta | A, S>, E | E2 | E3 | IncompleteTurn, R | R2 | Exclude<R3, Scope.Scope>> =>
  Stream.suspend(() => {
    const completed = completion()
    const forwarded = deltas.pipe(
      Stream.takeUntil((delta) => delta.type === "turn_complete"),
      Stream.map((delta): Loop.Event<TurnDelta | A, S> => {
        if (delta.type === "turn_complete") completed.complete(delta.turn)
        return Loop.value(delta)
      })
    )
    const after = Stream.unwrap(Effect.flatMap(completed.turn, (turn): Effect.Effect<
      Stream.Stream<Loop.Event<A, S>, E2, R2>,
      E3,
      R3
    > => {
      const events = then(turn)
      return Effect.isEffect(events) ? events : Effect.succeed(events)
    }))
    return Stream.concat(forwarded, after)
  }))
