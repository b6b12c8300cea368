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

/** Writes `bytes` to `file` whole, through `fs`: renamed over it, or linked to it (`sync`: the bytes are synced first). */
export const write = (
  fs: FileSystem.FileSystem,
  file: string,
  bytes: Uint8Array,
  options: { readonly place: "rename" | "link"; readonly sync: boolean }
) =>
  Effect.gen(function*() {
    const temporary = temporaryFor(file)
    yield* Effect.scoped(Effect.gen(function*() {
      const handle = yield* fs.open(temporary, { flag: "wx" })
      yield* handle.writeAll(bytes)
      if (options.sync) yield* handle.sync
    }))
    if (options.place === "rename") return yield* fs.rename(temporary, file)
    yield* fs.link(temporary, file).pipe(Effect.ensuring(Effect.ignore(fs.remove(temporary))))
  })
