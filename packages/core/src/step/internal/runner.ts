/**
 * What a step is run with: the marks every step carries (its type id, its
 * runner's key and its types), and where its runner runs (its execution, the
 * toolkit, the event sink, the frame `complete` ends, its key, the ledger).
 *
 * @internal
 */
import type * as Effect from "effect/Effect"
import type { StepMeta } from "../../StepMeta.ts"
import type { Toolkit } from "../../Toolkit.ts"
import type { ExecutionContext } from "../ExecutionContext.ts"
import type * as StepEvent from "../StepEvent.ts"
import type { Completion, Execution } from "./execution.ts"
import type * as Ledger from "./ledger.ts"

/** Marks a value as a step and carries its types. */
export const TypeId = "~@agentloop/core/step/Step" as const

/** The key of a step's runner: the compiled form of its fields, built by its constructor. */
export const Runner: unique symbol = Symbol.for("@agentloop/core/step/Step/Runner")

/** The types of a step: `I` in, `O` out, errors `E`, services `R`, user state `S`. */
export interface Variance<in I, out O, out E, out R, in S> {
  readonly _I: (_: I) => void
  readonly _O: (_: never) => O
  readonly _E: (_: never) => E
  readonly _R: (_: never) => R
  readonly _S: (_: S) => void
}

const absurd = (never: never): never => never
const ignore = (_: unknown): void => undefined

/** The one variance value every step carries: its types live in its interface only. */
export const variance: Variance<unknown, never, never, never, unknown> = {
  _I: ignore,
  _O: absurd,
  _E: absurd,
  _R: absurd,
  _S: ignore
}

/** Runs a step on `input` in `scope`; `RT` is what the toolkit's tools need. */
export type Run<in I, out O, out E, out R, in S> = <RT>(input: I, scope: Scope<S, RT>) => Effect.Effect<O, E, R | RT>

/**
 * Where step events go, each with the key of the place it tells about (a
 * step's, a loop iteration's, an `every` run's: see `marks.ts`): a recorded
 * execution's ledger, `Step.stream`'s bounded queue, or both; `Step.execute`
 * of an execution that is not recorded has none.
 */
export interface Sink {
  readonly emit: (event: StepEvent.StepEvent, key: string) => Effect.Effect<void>
}

/**
 * Where a step runs: its execution, the toolkit, the event sink, the frame
 * `complete` ends, the key of the step around it (its children's keys start
 * with it) and the count of its children by id, and the execution's ledger
 * when a `Checkpointer` records it.
 */
export interface Runtime<out S, out RT> {
  readonly execution: Execution<S>
  readonly toolkit: Toolkit<RT> | undefined
  readonly sink: Sink | undefined
  readonly frame: Completion
  readonly path: string
  /**
   * How many steps of each id have started here: the last part of a step's
   * key. It lives as long as this runtime (a step's run, a loop's iteration),
   * so a long loop keeps no count of the iterations it is done with.
   */
  readonly occurrences: Map<string, number>
  readonly ledger: Ledger.Ledger | undefined
}

/** The runtime of the children a composite step runs side by side or again and again: its `part` (a fork's path, a loop's iteration) has keys of its own. */
export const within = <S, RT>(runtime: Runtime<S, RT>, part: number): Runtime<S, RT> => ({
  ...runtime,
  path: `${runtime.path}[${part}]`,
  occurrences: new Map()
})

/** A runtime inside one step: the context its functions get, and how it reports its meta. */
export interface Scope<out S, out RT> extends Runtime<S, RT> {
  readonly context: ExecutionContext<S>
  /** Sets the context's `lastStepMeta` and the meta of the step's `Completed` event. */
  readonly report: (meta: StepMeta) => void
}
