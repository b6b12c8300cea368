/**
 * The `spawn` step (a sub-agent in a context of its own) and the `provide`
 * step (memory for a subtree).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Memory from "../Memory.ts"
import type * as Step from "../StepAst.ts"
import { StepTimeout } from "../StepError.ts"
import type { Aborted } from "../StepError.ts"
import { Runner, TypeId, variance } from "./runner.ts"
import { makeExecution, runFrame, runStep } from "./runtime.ts"

const isList = <E, R>(memory: Step.MemoryLayers<E, R>): memory is ReadonlyArray<Layer.Layer<Memory.Memory, E, R>> =>
  Array.isArray(memory)

const layers = <E, R>(memory: Step.MemoryLayers<E, R>): Layer.Layer<Memory.Memory, E, R> =>
  isList(memory) ? Memory.layerAll(memory) : memory

const withMemory = <A, E, R, ME, MR>(
  effect: Effect.Effect<A, E, R>,
  memory: Step.MemoryLayers<ME, MR> | undefined
): Effect.Effect<A, E | ME, R | MR> => memory === undefined ? effect : Effect.provide(effect, layers(memory))

/** The fields of a `spawn` step. */
export interface SpawnOptions<I, O, E, R, S, ME, MR> {
  readonly id: string
  /** The sub-agent: any step, run in a new context. */
  readonly child: Step.Step<I, O, E, R, S>
  /** Memory of the sub-agent's own, instead of the one around the spawn. */
  readonly memory?: Step.MemoryLayers<ME, MR> | undefined
  /** Milliseconds the sub-agent may run; then it is interrupted and the step fails with `StepTimeout`. */
  readonly timeout?: number | undefined
}

/**
 * A step that runs `child` as a sub-agent, in a new execution context: id
 * `{parent id}/{step id}` (then `#2`, `#3`… when the step runs again), `parent`
 * the spawning step's context, `depth` one more, its own item log (a text
 * input starts it as a user message), its own thread, the parent's resource
 * and (a copy of) its state. Its usage and cost are added to every ancestor's
 * as they happen, so a parent's budget sees its children. A `timeout` (ms)
 * interrupts it and fails with `StepTimeout`; its `abort` fails this step
 * with `Aborted`.
 */
export const spawn = <I, O, E, R, S, ME = never, MR = never>(
  options: SpawnOptions<I, O, E, R, S, ME, MR>
): Step.StepSpawn<I, O, E | ME | StepTimeout | Aborted, R | MR, S> => {
  const { id, child, memory, timeout } = options
  return {
    [TypeId]: variance,
    kind: "spawn",
    id,
    child,
    ...(memory === undefined ? {} : { memory }),
    ...(timeout === undefined ? {} : { timeout }),
    [Runner]: (input, scope) =>
      Effect.gen(function*() {
        const parent = scope.execution
        const runs = (parent.spawns.get(id) ?? 0) + 1
        parent.spawns.set(id, runs)
        const childId = `${parent.id}/${id}${runs === 1 ? "" : `#${runs}`}`
        const execution = makeExecution({
          id: childId,
          threadId: childId,
          resourceId: parent.resourceId,
          parent,
          parentContext: scope.context,
          around: scope.frame,
          clock: parent.clock,
          input,
          state: parent.getState()
        })
        const program = withMemory(
          runFrame(
            execution.frame,
            runStep(child, input, {
              execution,
              toolkit: scope.toolkit,
              sink: scope.sink,
              frame: execution.frame,
              path: "",
              occurrences: new Map(),
              ledger: scope.ledger
            })
          ),
          memory
        )
        if (timeout === undefined) return yield* program
        return yield* Effect.timeoutOrElse(program, {
          duration: timeout,
          orElse: () => Effect.fail(new StepTimeout({ stepId: id, timeoutMs: timeout }))
        })
      })
  }
}

/** The fields of a `provide` step. */
export interface ProvideOptions<I, O, E, R, S, ME, MR> {
  readonly id: string
  readonly child: Step.Step<I, O, E, R, S>
  /** Memory for every step below: one layer, or several combined. */
  readonly memory: Step.MemoryLayers<ME, MR>
}

/**
 * A step that runs `child` with `memory`: the `Memory` every `llm` step below
 * it consults (a nested `provide`, or a `spawn` with its own, replaces it for
 * its subtree).
 */
export const provide = <I, O, E, R, S, ME = never, MR = never>(
  options: ProvideOptions<I, O, E, R, S, ME, MR>
): Step.StepProvide<I, O, E | ME, R | MR, S> => {
  const { id, child, memory } = options
  return {
    [TypeId]: variance,
    kind: "provide",
    id,
    child,
    memory,
    [Runner]: (input, scope) => withMemory(runStep(child, input, scope), memory)
  }
}
