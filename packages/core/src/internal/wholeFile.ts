/**
 * A file written whole: a temporary file beside it, written (and synced), then
 * renamed over it or linked to its name (a link fails when the name exists).
 * A reader finds the old file or the new one, never part of it.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as FileSystem from "effect/FileSystem"

/** A name for a temporary file beside `file`, to be renamed or linked into its place. */
export const temporaryFor = (file: string): string => `${file}.tmp-${Math.random().toString(36).slice(2)}`

/**
 * Writes `bytes` to `file` whole, through `fs`: renamed over it, or linked to it (`sync`: the bytes are synced
 * first); whether it was. `when`, run once the temporary file is written, can refuse it: then nothing is placed.
 * The temporary file is made first, so a file placed after `when` looked at its folder lands in that folder: if
 * the folder was moved away since, the temporary file went with it, and placing it fails.
 */
export const write = <E = never>(
  fs: FileSystem.FileSystem,
  file: string,
  bytes: Uint8Array,
  options: {
    readonly place: "rename" | "link"
    readonly sync: boolean
    readonly when?: Effect.Effect<boolean, E> | undefined
  }
) => {
  const temporary = temporaryFor(file)
  return Effect.gen(function*() {
    yield* Effect.scoped(Effect.gen(function*() {
      const handle = yield* fs.open(temporary, { flag: "wx" })
      yield* handle.writeAll(bytes)
      if (options.sync) yield* handle.sync
    }))
    if (options.when !== undefined && !(yield* options.when)) return false
    yield* options.place === "rename" ? fs.rename(temporary, file) : fs.link(temporary, file)
    return true
  }).pipe(
    // A temporary file renamed into place is gone; any other is removed.
    Effect.onExit((exit) =>
      options.place === "rename" && exit._tag === "Success" && exit.value
        ? Effect.void
        : Effect.ignore(fs.remove(temporary))
    )
  )
}
