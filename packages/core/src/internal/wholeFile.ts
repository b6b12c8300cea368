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

/** How a file written whole is placed. */
export interface Placing<E> {
  /** Renamed over the file, or linked to its name. */
  readonly place: "rename" | "link"
  /** Run once the temporary file is written: it is placed only if this says so. */
  readonly when?: Effect.Effect<boolean, E> | undefined
}

/**
 * Places a file written whole: `written` writes the temporary file `temporary` (see {@link temporaryFor}), which is
 * then renamed over `file` or linked to it, unless `options.when` refuses: `written`'s value when it was placed,
 * `undefined` when not. The temporary file is made before `when` looks, so a file placed after `when` looked at its
 * folder lands in that folder: if the folder was moved away since, the temporary file went with it, and placing it
 * fails. A temporary file that was not renamed into place is removed.
 */
export const place = <A, E, R, E2 = never>(
  fs: FileSystem.FileSystem,
  file: string,
  temporary: string,
  written: Effect.Effect<A, E, R>,
  options: Placing<E2>
) =>
  Effect.gen(function*() {
    const value = yield* written
    if (options.when !== undefined && !(yield* options.when)) return undefined
    yield* options.place === "rename" ? fs.rename(temporary, file) : fs.link(temporary, file)
    return value
  }).pipe(
    Effect.onExit((exit) =>
      options.place === "rename" && exit._tag === "Success" && exit.value !== undefined
        ? Effect.void
        : Effect.ignore(fs.remove(temporary))
    )
  )

/** Writes `bytes` to `file` whole (see {@link place}), synced first when `sync`: whether it was placed. */
export const write = <E = never>(
  fs: FileSystem.FileSystem,
  file: string,
  bytes: Uint8Array,
  options: Placing<E> & { readonly sync: boolean }
) => {
  const temporary = temporaryFor(file)
  const written = Effect.scoped(Effect.gen(function*() {
    const handle = yield* fs.open(temporary, { flag: "wx" })
    yield* handle.writeAll(bytes)
    if (options.sync) yield* handle.sync
    return true as const
  }))
  return Effect.map(place(fs, file, temporary, written, options), (placed) => placed === true)
}
