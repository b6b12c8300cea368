/**
 * The `fork` step: paths at once, as fibers.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Semaphore from "effect/Semaphore"
import { print } from "../../InvalidOptions.ts"
import type { InvalidOptions } from "../../InvalidOptions.ts"
import type { ExecutionContext } from "../ExecutionContext.ts"
import type * as Step from "../StepAst.ts"
import { InvalidStep } from "../StepError.ts"
import type { StepFailed } from "../StepError.ts"
import { Runner, TypeId, variance, within } from "./runner.ts"
import type { Scope } from "./runner.ts"
import { answeredStep, attempt, runChild } from "./runtime.ts"

/** A path of a fork on input `I`. */
export type Path<I> = Step.Takes<I>

/** The fields every fork has. */
export interface ForkOptions<I, Paths, EP, RP, S> {
  readonly id: string
  /** The paths to run on the fork's input. */
  readonly paths: (input: I, ctx: ExecutionContext<S>) => Step.MaybeEffect<Paths, EP, RP>
  /** Paths running at once at most (default: all of them); a positive integer. */
  readonly concurrency?: number | undefined
}

/**
 * The fields of a racing fork: `race`, the first path to end wins, whether it
 * succeeds or fails; `firstSuccess`, the first path to succeed wins, and it
 * fails only when every path fails.
 */
export interface RaceOptions<I, Paths, EP, RP, S> extends ForkOptions<I, Paths, EP, RP, S> {
  readonly mode: "race" | "firstSuccess"
}

/** The fields of a fork that needs every path. */
export interface AllOptions<I, Paths extends ReadonlyArray<Step.Some>, O, EP, RP, EM, RM, S>
  extends ForkOptions<I, Paths, EP, RP, S>
{
  readonly mode: "all"
  /** Merges the outputs, in path order. */
  readonly merge: (
    results: ReadonlyArray<Step.Output<Paths[number]>>,
    ctx: ExecutionContext<S>
  ) => Step.MaybeEffect<O, EM, RM>
}

/** The fields of a fork that settles every path. */
export interface SettleOptions<I, Paths extends ReadonlyArray<Step.Some>, O, EP, RP, EM, RM, S>
  extends ForkOptions<I, Paths, EP, RP, S>
{
  readonly mode: "settle"
  /** Merges every path's outcome, in path order. */
  readonly merge: (
    results: ReadonlyArray<Step.SettleResult<Step.Output<Paths[number]>, Step.Error<Paths[number]>>>,
    ctx: ExecutionContext<S>
  ) => Step.MaybeEffect<O, EM, RM>
}

type ForkError<EP> = EP | StepFailed | InvalidStep | InvalidOptions

/** The paths, each checked before any runs (`InvalidStep` for one that is not a step), and how many may run at once. */
const start = <I, Paths extends ReadonlyArray<Step.Some>, EP, RP, S, RT>(
  options: ForkOptions<I, Paths, EP, RP, S>,
  input: I,
  scope: Scope<S, RT>
): Effect.Effect<
  readonly [number | "unbounded", ReadonlyArray<Paths[number]>],
  EP | StepFailed | InvalidStep | InvalidOptions,
  RP
> =>
  Effect.gen(function*() {
    const id = options.id
    const chosen = yield* attempt(id, "paths", () => options.paths(input, scope.context))
    if (!Array.isArray(chosen)) {
      return yield* new InvalidStep({
        stepId: id,
        message: `paths of step ${JSON.stringify(id)} answered ${print(chosen)}, not an array of steps`
      })
    }
    for (const path of chosen) yield* answeredStep({ stepId: id, answered: "paths" }, path)
    return [options.concurrency ?? "unbounded", chosen] as const
  })

/**
 * A step that runs paths at once, each a fiber. `race`: the first path to
 * end wins, with its output or its failure; the others are interrupted and
 * their finalizers have run before the fork returns. `firstSuccess`: the first
 * path to succeed wins, the same way; it fails only when every path fails. `all`: the
 * outputs, in path order, go to `merge`; the first failure interrupts the
 * rest. `settle`: every outcome, as a `SettleResult`, goes to `merge`.
 * `concurrency` bounds the paths in flight.
 */
export function make<I, const Paths extends ReadonlyArray<Path<I>>, EP = never, RP = never, S = unknown>(
  options: RaceOptions<I, Paths, EP, RP, S>
): Step.StepForkRace<
  I,
  Step.Output<Paths[number]>,
  ForkError<EP> | Step.Error<Paths[number]>,
  RP | Step.Services<Paths[number]>,
  S & Step.StateOf<Paths[number]>
>
export function make<
  I,
  const Paths extends ReadonlyArray<Path<I>>,
  O,
  EP = never,
  RP = never,
  EM = never,
  RM = never,
  S = unknown
>(
  options: AllOptions<I, Paths, O, EP, RP, EM, RM, S>
): Step.StepForkAll<
  I,
  O,
  ForkError<EP> | EM | Step.Error<Paths[number]>,
  RP | RM | Step.Services<Paths[number]>,
  S & Step.StateOf<Paths[number]>
>
export function make<
  I,
  const Paths extends ReadonlyArray<Path<I>>,
  O,
  EP = never,
  RP = never,
  EM = never,
  RM = never,
  S = unknown
>(
  options: SettleOptions<I, Paths, O, EP, RP, EM, RM, S>
): Step.StepForkSettle<
  I,
  O,
  ForkError<EP> | EM,
  RP | RM | Step.Services<Paths[number]>,
  S & Step.StateOf<Paths[number]>
>
export function make<I, const Paths extends ReadonlyArray<Path<I>>, O, EP, RP, EM, RM, S>(
  options:
    | RaceOptions<I, Paths, EP, RP, S>
    | AllOptions<I, Paths, O, EP, RP, EM, RM, S>
    | SettleOptions<I, Paths, O, EP, RP, EM, RM, S>
): Step.StepFork<
  I,
  O | Step.Output<Paths[number]>,
  ForkError<EP> | EM | Step.Error<Paths[number]>,
  RP | RM | Step.Services<Paths[number]>,
  S & Step.StateOf<Paths[number]>
> {
  const { id, paths, concurrency } = options
  const common = { [TypeId]: variance, kind: "fork" as const, id, paths, concurrency }
  switch (options.mode) {
    case "race":
    case "firstSuccess": {
      const mode = options.mode
      return {
        ...common,
        mode,
        [Runner]: (input, scope) =>
          Effect.gen(function*() {
            const [limit, chosen] = yield* start(options, input, scope)
            if (chosen.length === 0) {
              return yield* new InvalidStep({ stepId: id, message: `a ${mode} needs at least one path` })
            }
            const permits = limit === "unbounded" ? undefined : Semaphore.makeUnsafe(limit)
            const racers = chosen.map((path, index) => {
              const running = runChild(path, input, within(scope, index))
              return permits === undefined ? running : permits.withPermits(1)(running)
            })
            return yield* mode === "race" ? Effect.raceAllFirst(racers) : Effect.raceAll(racers)
          })
      }
    }
    case "all": {
      const merge = options.merge
      return {
        ...common,
        mode: "all",
        merge,
        [Runner]: (input, scope) =>
          Effect.gen(function*() {
            const [limit, chosen] = yield* start(options, input, scope)
            const results = yield* Effect.forEach(
              chosen,
              (path, index) => runChild(path, input, within(scope, index)),
              {
                concurrency: limit
              }
            )
            return yield* attempt(id, "merge", () => merge(results, scope.context))
          })
      }
    }
    case "settle": {
      const merge = options.merge
      return {
        ...common,
        mode: "settle",
        merge,
        [Runner]: (input, scope) =>
          Effect.gen(function*() {
            const [limit, chosen] = yield* start(options, input, scope)
            const results = yield* Effect.forEach(
              chosen,
              (path, index) =>
                Effect.map(
                  Effect.result(runChild(path, input, within(scope, index))),
                  (result): Step.SettleResult<Step.Output<Paths[number]>, Step.Error<Paths[number]>> =>
                    Result.isSuccess(result)
                      ? { stepId: path.id, status: "fulfilled", value: result.success }
                      : { stepId: path.id, status: "rejected", error: result.failure }
                ),
              { concurrency: limit }
            )
            return yield* attempt(id, "merge", () => merge(results, scope.context))
          })
      }
    }
  }
}
