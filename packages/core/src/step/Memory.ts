/**
 * Memory an `llm` step consults: before its turn it recalls items to put in
 * front of the conversation, after it remembers the conversation's new items.
 *
 * Memory is scoped by the execution context's `threadId` (one conversation)
 * and `resourceId` (a user, a project: whatever owns many threads). A program
 * gets its memory from a layer, by `Step.provide` (for every step below it) or
 * `Step.spawn` (for one sub-agent), or from the environment of `Step.execute`;
 * without one, an `llm` step remembers nothing.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { KeyValueStore } from "effect/persistence"
import * as Schema from "effect/Schema"
import * as Item from "../Item.ts"
import * as ItemLog from "./ItemLog.ts"

/**
 * Whose memory: the conversation (`threadId`), its owner (`resourceId`), and
 * the execution asking (`contextId`). An implementation does not recall what
 * the asking execution itself remembered: that is already in its item log.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scope {
  readonly threadId: string
  readonly resourceId: string | undefined
  readonly contextId: string
}

/**
 * Memory could not be read or written.
 *
 * @since 0.1.0
 * @category errors
 */
export class MemoryError extends Schema.TaggedError<MemoryError>()("MemoryError", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/**
 * A memory.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  /** Items to put before the conversation `history` in the next request. */
  readonly recall: (
    scope: Scope,
    history: ReadonlyArray<Item.Item>
  ) => Effect.Effect<ReadonlyArray<Item.Item>, MemoryError>
  /** Keeps the conversation's new `items`, oldest first. */
  readonly remember: (scope: Scope, items: ReadonlyArray<Item.Item>) => Effect.Effect<void, MemoryError>
}

/**
 * The memory service. An `llm` step uses it when it is provided and goes without otherwise.
 *
 * @since 0.1.0
 * @category services
 */
export class Memory extends Context.Service<Memory, Service>()("@agentloop/core/step/Memory") {}

/**
 * A memory that recalls nothing and forgets everything.
 *
 * @since 0.1.0
 * @category constants
 */
export const none: Service = { recall: () => Effect.succeed([]), remember: () => Effect.void }

/**
 * A memory layer from a service.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (service: Service): Layer.Layer<Memory> => Layer.succeed(Memory, service)

/**
 * One memory made of several: recalls what each recalls (in order), and
 * remembers in each. This is what a `memory` array of layers provides.
 *
 * @since 0.1.0
 * @category combinators
 */
export const combine = (services: ReadonlyArray<Service>): Service => ({
  recall: (scope, history) =>
    Effect.map(Effect.forEach(services, (service) => service.recall(scope, history)), (recalled) => recalled.flat()),
  remember: (scope, items) => Effect.forEach(services, (service) => service.remember(scope, items), { discard: true })
})

/**
 * The memory of several layers at once (see {@link combine}); one layer is returned as it is.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerAll = <E, R>(layers: ReadonlyArray<Layer.Layer<Memory, E, R>>): Layer.Layer<Memory, E, R> => {
  const [first, ...rest] = layers
  if (first === undefined) return Layer.succeed(Memory, none)
  if (rest.length === 0) return first
  return Layer.effect(
    Memory,
    Effect.map(
      Effect.forEach(layers, (one) => Effect.map(Layer.build(one), (context) => Context.get(context, Memory))),
      combine
    )
  )
}

/**
 * Options of {@link layerKeyValueStore}.
 *
 * @since 0.1.0
 * @category models
 */
export interface KeyValueStoreOptions {
  /** Every key written starts with this (default {@link defaultPrefix}). */
  readonly prefix?: string | undefined
  /**
   * Share memory per thread (the default), or across every thread of a
   * resource (a user's long-term memory); without a `resourceId`, per thread.
   */
  readonly scope?: "thread" | "resource" | undefined
  /** Recall at most this many of the newest items (default 50), never a tool output without its call. */
  readonly recallItems?: number | undefined
}

/**
 * The prefix of every key {@link layerKeyValueStore} writes by default.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultPrefix = "@agentloop/core/Memory/"

const Entry = Schema.Struct({ context: Schema.String, items: Item.History })
const Entries = Schema.Array(Entry)
type Entries = typeof Entries.Type

/**
 * A memory kept in the `KeyValueStore` service, as JSON: one record per
 * thread (`{prefix}thread/{resourceId}/{threadId}`) or per resource
 * (`{prefix}resource/{resourceId}`). It recalls the newest items other
 * executions remembered there. Writes read the record and write it back, so
 * two executions remembering into one record at the same moment may lose one
 * write.
 *
 * @example
 * ```ts
 * import { Item, Memory } from "@agentloop/core"
 * import { Effect, Layer } from "effect"
 * import { KeyValueStore } from "effect/persistence"
 *
 * const program = Effect.gen(function*() {
 *   const memory = yield* Memory.Memory
 *   const scope = { threadId: "thread-1", resourceId: "user-7", contextId: "chat-1" }
 *   yield* memory.remember(scope, [Item.userMessage("My name is Ada.")])
 *   // Another conversation (context) of the same thread is handed what this one remembered.
 *   const recalled = yield* memory.recall({ ...scope, contextId: "chat-2" }, [Item.userMessage("What is my name?")])
 *   console.log(recalled.length) // 1
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(Memory.layerKeyValueStore().pipe(Layer.provide(KeyValueStore.layerMemory)))))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerKeyValueStore = (
  options: KeyValueStoreOptions = {}
): Layer.Layer<Memory, never, KeyValueStore.KeyValueStore> =>
  Layer.effect(
    Memory,
    Effect.map(KeyValueStore.KeyValueStore.useSync((kv) => kv), (kv): Service => {
      const store = KeyValueStore.toSchemaStore(kv, Entries)
      const prefix = options.prefix ?? defaultPrefix
      const recallItems = options.recallItems ?? 50
      const key = (scope: Scope) =>
        options.scope === "resource" && scope.resourceId !== undefined
          ? `${prefix}resource/${scope.resourceId}`
          : `${prefix}thread/${scope.resourceId ?? ""}/${scope.threadId}`
      const read = (scope: Scope): Effect.Effect<Entries, MemoryError> =>
        store.get(key(scope)).pipe(
          Effect.map(Option.getOrElse((): Entries => [])),
          Effect.mapError((cause) => new MemoryError({ message: `memory could not be read: ${cause.message}`, cause }))
        )
      return {
        recall: (scope) =>
          Effect.map(read(scope), (entries) =>
            ItemLog.newest(
              entries.flatMap((entry) => entry.context === scope.contextId ? [] : entry.items),
              recallItems
            )),
        remember: (scope, items) =>
          items.length === 0 ? Effect.void : read(scope).pipe(
            Effect.flatMap((entries) => {
              const last = entries.at(-1)
              const next: Entries = last !== undefined && last.context === scope.contextId
                ? [...entries.slice(0, -1), { context: last.context, items: [...last.items, ...items] }]
                : [...entries, { context: scope.contextId, items }]
              return store.set(key(scope), next)
            }),
            Effect.mapError((cause) =>
              new MemoryError({ message: `memory could not be written: ${cause.message}`, cause })
            )
          )
      }
    })
  )
