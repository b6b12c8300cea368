/**
 * A page's script bundled for the browser with esbuild (minified, ESM), built
 * once per process and then served from memory. In this repository the
 * packages resolve to their TypeScript sources (see the packages' `exports`).
 */
import { Effect } from "effect"
import * as esbuild from "esbuild"
import { fileURLToPath } from "node:url"

/** Bundles `entry` and what it imports; throws with esbuild's messages when it does not build. */
export const build = async (entry: URL): Promise<string> => {
  const built = await esbuild.build({
    entryPoints: [fileURLToPath(entry)],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    minify: true,
    jsx: "automatic",
    define: { "process.env.NODE_ENV": "\"production\"" },
    conditions: ["@agentloop/source"],
    logLevel: "silent"
  })
  const [output] = built.outputFiles
  if (output === undefined) throw new Error(`esbuild produced no output for ${entry.pathname}`)
  return output.text
}

/**
 * The bundle of `entry`, built the first time it is asked for and then kept;
 * a defect when the entry does not build (a bug of the example).
 */
export const memoized = (entry: URL): Effect.Effect<string> => {
  let built: Promise<string> | undefined
  return Effect.promise(() => built ??= build(entry))
}

/** The chat page's script: `client.ts`, agentloop's small event-stream client and what it imports. */
export const bundle: Effect.Effect<string> = memoized(new URL("./client.ts", import.meta.url))
