/**
 * Tool-owned memory, as the seed's `ToolMemoryDeclaration`: a tool declares a
 * state (`init`) and how the model sees it (`recall`); its `execute` reads and
 * writes the state with {@link get} and {@link set}, and before each model turn
 * the runtime puts what `recall` says in front of the conversation. Tools that
 * declare the same `id` share one state.
 *
 * In a step program, each `llm` step materializes the memory of the tools it
 * offers: the state lives in the execution context (a spawned sub-agent has
 * its own), and each tool's recall is a developer message before the
 * conversation. Outside one (an `AgentLoop` run) no state is kept: {@link get}
 * answers `init()`, and {@link set} does nothing.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Item from "./Item.ts"

/**
 * A tool's memory: `id` (tools with the same one share the state; a tool's
 * name by default), its first state, and what the model is told of a state
 * (`null`: nothing).
 *
 * @since 0.2.0
 * @category models
 */
export interface Declaration<S = unknown> {
  readonly id: string
  init(): S
  recall(state: S): string | null
}

/**
 * The states of the tools' memories where tools run now, by id: an
 * execution's, provided by the `llm` step whose tools run; none elsewhere.
 *
 * @since 0.2.0
 * @category services
 */
export const CurrentStore: Context.Reference<Map<string, unknown> | undefined> = Context.Reference<
  Map<string, unknown> | undefined
>("@agentloop/core/ToolMemory/CurrentStore", { defaultValue: () => undefined })

const stateOf = <S>(store: Map<string, unknown>, declaration: Declaration<S>): S => {
  if (!store.has(declaration.id)) store.set(declaration.id, declaration.init())
  // Every state under this id was made by a declaration of this id, whose state is S.
  return store.get(declaration.id) as S
}

/**
 * The state of `declaration` (a tool's `memory`) where the tool runs: its
 * `init()` the first time.
 *
 * @since 0.2.0
 * @category state
 */
export const get = <S>(declaration: Declaration<S>): Effect.Effect<S> =>
  Effect.map(CurrentStore, (store) => store === undefined ? declaration.init() : stateOf(store, declaration))

/**
 * Replaces the state of `declaration` (a tool's `memory`) where the tool runs.
 *
 * @since 0.2.0
 * @category state
 */
export const set = <S>(declaration: Declaration<S>, state: S): Effect.Effect<void> =>
  Effect.map(CurrentStore, (store) => {
    store?.set(declaration.id, state)
  })

/**
 * What the model is told of the memories of `declarations` in `store`: one
 * developer message per distinct id whose `recall` says something, in the
 * order the ids first appear.
 *
 * @example
 * ```ts
 * import { ToolMemory } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // What a note-taking tool keeps between its calls, and how the model is reminded of it.
 * const notes: ToolMemory.Declaration<ReadonlyArray<string>> = {
 *   id: "notes",
 *   init: () => [],
 *   recall: (all) => all.length === 0 ? null : `Your notes so far: ${all.join("; ")}`
 * }
 *
 * const store = new Map<string, unknown>()
 * const program = Effect.gen(function*() {
 *   yield* ToolMemory.set(notes, [...(yield* ToolMemory.get(notes)), "the user likes tea"])
 * }).pipe(Effect.provideService(ToolMemory.CurrentStore, store))
 *
 * Effect.runPromise(program).then(() => {
 *   const [reminder] = ToolMemory.recall([notes], store)
 *   console.log(reminder?.content) // [ { type: 'input_text', text: 'Your notes so far: the user likes tea' } ]
 * })
 * ```
 *
 * @since 0.2.0
 * @category recall
 */
export const recall = (
  declarations: Iterable<Declaration<unknown> | undefined>,
  store: Map<string, unknown>
): ReadonlyArray<Item.Message> => {
  const seen = new Set<string>()
  const told: Array<Item.Message> = []
  for (const declaration of declarations) {
    if (declaration === undefined || seen.has(declaration.id)) continue
    seen.add(declaration.id)
    const text = declaration.recall(stateOf(store, declaration))
    if (text !== null) {
      told.push({
        type: "message",
        id: `tool_memory_${declaration.id}`,
        status: "completed",
        role: "developer",
        content: [{ type: "input_text", text }]
      })
    }
  }
  return told
}
