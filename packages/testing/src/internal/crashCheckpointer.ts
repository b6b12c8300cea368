/**
 * The checkpointer a crash test runs a program on: the app's store, seen
 * through a wrapper that counts the appends that reached it and kills the
 * program once the one it waits for did, so the program dies "after recorded
 * step N" and at no other point.
 *
 * Each scenario of a crash test keeps its runs apart from every other's: the
 * wrapper files run `id` under `<scope>/<id>`, so the uninterrupted run and
 * each kill point start from an empty log of their own on one store.
 *
 * @internal
 */
import * as CheckpointStore from "@agentloop/core/CheckpointStore"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"

/** How a wrapped store watches and kills the program. */
export interface Options {
  /** Where this scenario's runs are filed in the store. */
  readonly scope: string
  /** Told of each append that reached the store, by what it recorded (its entries' tags). */
  readonly onAppend: (entry: string) => Effect.Effect<void>
  /**
   * Kills the program once append `after` (1 for the first, counted over
   * every log it opened) reached the store: `kill` never returns, and every
   * append after it calls `kill` again instead of writing.
   */
  readonly kill?: {
    readonly after: number
    readonly kill: (entry: string) => Effect.Effect<never>
  } | undefined
}

const Tagged = Schema.fromJsonString(Schema.Struct({ _tag: Schema.String }))
const decodeTagged = Schema.decodeUnknownOption(Tagged)

/** What an append recorded, for people: its entries' `_tag`s (an `AgentLoop` run's and a step program's entries have one). */
export const describe = (entries: ReadonlyArray<string>): string =>
  entries.map((text) => Option.match(decodeTagged(text), { onNone: () => "entry", onSome: (entry) => entry._tag }))
    .join(" + ")

/** `store`, watched and killed as `options` say. */
export const wrap = (store: CheckpointStore.Store, options: Options): CheckpointStore.Store => {
  const scoped = (id: string) => `${options.scope}/${id}`
  let appended = 0
  let killed = false
  const kill = options.kill
  return {
    ...store,
    open: (id, fingerprint) =>
      store.open(scoped(id), fingerprint).pipe(
        // A run another process held when it was killed: its lease lapses in a moment (a minute at most here).
        Effect.retry({
          while: (error) => error._tag === "RunInProgress" && error.expiresAt !== null,
          schedule: Schedule.spaced("25 millis"),
          times: 2_400
        }),
        Effect.map((log) => ({
          ...log,
          append: (entries, appendOptions) =>
            Effect.suspend(() => {
              if (kill !== undefined && killed) return kill.kill("a later append")
              return Effect.flatMap(log.append(entries, appendOptions), () => {
                const entry = describe(entries)
                appended++
                const reported = options.onAppend(entry)
                // An append written together with the one killed after (a group commit) dies with it.
                if (kill === undefined || (appended !== kill.after && !killed)) return reported
                killed = true
                return Effect.andThen(reported, kill.kill(entry))
              })
            })
        }))
      ),
    read: (id) => store.read(scoped(id)),
    readFrom: (id, from) => CheckpointStore.readFrom(store, scoped(id), from),
    clear: (id) => store.clear(scoped(id))
  }
}
