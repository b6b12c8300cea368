/**
 * The page's script: `client.ts` and what it imports (agentloop's event-stream
 * client, Effect), bundled for the browser with esbuild when the server starts.
 */
import { Effect } from "effect"
import * as esbuild from "esbuild"
import { fileURLToPath } from "node:url"

const build = async (): Promise<string> => {
  const built = await esbuild.build({
    entryPoints: [fileURLToPath(new URL("./client.ts", import.meta.url))],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    write: false,
    minify: true,
    // In this repository, the packages' TypeScript sources (see the packages' `exports`).
    conditions: ["@agentloop/source"],
    logLevel: "silent"
  })
  const [output] = built.outputFiles
  if (output === undefined) throw new Error("esbuild produced no output for client.ts")
  return output.text
}

let built: Promise<string> | undefined

/**
 * The bundled script, built once per process and then served from memory; a
 * defect when `client.ts` does not build (a bug of this example).
 */
export const bundle: Effect.Effect<string> = Effect.promise(() => built ??= build())
