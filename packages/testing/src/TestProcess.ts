/**
 * Child processes for crash tests: a Node script started with a JSON config
 * as its argument, which reports what it does as one JSON object per line of
 * its standard output; the test waits for those lines and kills it with
 * `SIGKILL` in the middle of its work.
 *
 * A crash test starts many children: {@link bundle} makes a child's script
 * and what it imports one file, which starts several times faster than
 * modules loaded one by one.
 *
 * @since 0.1.0
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Readline from "node:readline"
import * as BundleStack from "./internal/bundleStack.ts"

const Message = Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown))
/**
 * One line a child reports: a JSON object, whatever its keys.
 *
 * @since 0.1.0
 * @category models
 */
export type Message = typeof Message.Type

/**
 * A running child.
 *
 * @since 0.1.0
 * @category models
 */
export interface Child {
  /** Every line it printed so far, decoded. */
  readonly messages: ReadonlyArray<Message>
  /**
   * Waits for the first message (printed so far or later) that `predicate`
   * accepts. A child that exits without printing one fails the wait at once
   * (a defect carrying its exit code and standard error), rather than leaving
   * the test to time out.
   */
  readonly waitFor: (predicate: (message: Message) => boolean) => Effect.Effect<Message>
  /** Its exit code, once it has exited and all it printed was read (`null` when killed by a signal). */
  readonly exit: Effect.Effect<number | null>
  /** Kills it with `SIGKILL`, and waits until it is gone. */
  readonly kill: Effect.Effect<void>
  /** What it wrote to standard error, for failure messages. */
  readonly stderr: () => string
  /** Its process id (`undefined` when it could not be started). */
  readonly pid: number | undefined
}

/**
 * How {@link spawn} starts a child: Node's own options, and variables added to
 * this process's environment.
 *
 * @since 0.3.0
 * @category models
 */
export interface SpawnOptions {
  readonly execArgv?: ReadonlyArray<string> | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
}

/**
 * Starts `script` (a path) with Node, `config` as its JSON argument,
 * `execArgv` as Node's own options and `env` added to this process's
 * environment; it is killed when the scope closes, if still running.
 *
 * @example
 * ```ts
 * import { TestProcess } from "@agentloop/testing"
 * import { Effect } from "effect"
 * import { mkdtempSync, writeFileSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * // The child: reports a line per step, then waits to be killed (a crash test kills it mid-run).
 * const script = join(mkdtempSync(join(tmpdir(), "child-")), "child.mjs")
 * writeFileSync(
 *   script,
 *   `const { steps } = JSON.parse(process.argv[2])
 * for (let i = 1; i <= steps; i++) console.log(JSON.stringify({ step: i }))
 * setInterval(() => {}, 1000)`
 * )
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const child = yield* TestProcess.spawn(script, { steps: 2 })
 *   const second = yield* child.waitFor((message) => message.step === 2)
 *   console.log(second) // { step: 2 }
 *   yield* child.kill
 *   console.log(child.messages.filter(TestProcess.has("step")).length) // 2
 * }))
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const spawn = (
  script: string,
  config: unknown,
  options: SpawnOptions = {}
): Effect.Effect<Child, never, Scope.Scope> => spawnReading(script, config, options, (stderr) => stderr)

/** {@link spawn}, with what the child wrote to standard error seen through `read` wherever it is shown. */
const spawnReading = (
  script: string,
  config: unknown,
  options: SpawnOptions,
  read: (stderr: string) => string
): Effect.Effect<Child, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const exited = yield* Deferred.make<number | null>()
      const process = ChildProcess.spawn(globalThis.process.execPath, [
        "--no-warnings",
        ...(options.execArgv ?? []),
        script,
        JSON.stringify(config)
      ], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...globalThis.process.env, ...options.env }
      })
      const messages: Array<Message> = []
      const waiters: Array<
        { readonly predicate: (message: Message) => boolean; readonly found: Deferred.Deferred<Message> }
      > = []
      let stderr = ""
      /** Why no message will come any more, once the child has exited and its output was read. */
      let closed: string | undefined
      process.stderr.on("data", (chunk) => (stderr += String(chunk)))
      Readline.createInterface({ input: process.stdout }).on("line", (line) => {
        const decoded = Schema.decodeUnknownOption(Message)(line)
        if (decoded._tag === "None") return
        messages.push(decoded.value)
        for (const waiter of waiters) {
          if (waiter.predicate(decoded.value)) Deferred.doneUnsafe(waiter.found, Effect.succeed(decoded.value))
        }
      })
      // `close` comes once the child has exited and its output is read to the end: a wait still open then never ends.
      process.on("close", (code, signal) => {
        Deferred.doneUnsafe(exited, Effect.succeed(code))
        closed = `the child exited (${signal ?? `code ${code}`}) without printing the message awaited`
        for (const waiter of waiters) {
          Deferred.doneUnsafe(waiter.found, Effect.die(new Error(`${closed}; its stderr:\n${read(stderr)}`)))
        }
      })
      const child: Child = {
        messages,
        waitFor: (predicate) =>
          Effect.suspend(() => {
            const seen = messages.find(predicate)
            if (seen !== undefined) return Effect.succeed(seen)
            if (closed !== undefined) return Effect.die(new Error(`${closed}; its stderr:\n${read(stderr)}`))
            const found = Deferred.makeUnsafe<Message>()
            waiters.push({ predicate, found })
            return Deferred.await(found)
          }),
        exit: Deferred.await(exited),
        kill: Effect.suspend(() => {
          if (process.exitCode === null && process.signalCode === null) process.kill("SIGKILL")
          return Effect.asVoid(Deferred.await(exited))
        }),
        stderr: () => read(stderr),
        pid: process.pid
      }
      return child
    }),
    (child) => child.kill
  )

/**
 * A message that has `key`.
 *
 * @since 0.1.0
 * @category predicates
 */
export const has = (key: string) => (message: Message): boolean => key in message

/**
 * In the child: its config, the JSON argument {@link spawn} passed it,
 * decoded with `schema`; throws when it does not decode.
 *
 * @since 0.1.0
 * @category child
 */
export const config = <S extends Schema.Codec<unknown, unknown, never, never>>(schema: S): S["Type"] =>
  Schema.decodeUnknownSync(Schema.fromJsonString(schema))(process.argv[2])

/**
 * In the child: reports `message` to the test, as one JSON line of standard output.
 *
 * @since 0.1.0
 * @category child
 */
export const report = (message: Message): Effect.Effect<void> => Effect.sync(() => console.log(JSON.stringify(message)))

/**
 * {@link bundle} could not bundle a script: `esbuild` is not installed, or
 * the script does not build (`message` says what esbuild said).
 *
 * @since 0.3.0
 * @category errors
 */
export class BundleFailed extends Schema.TaggedError<BundleFailed>()("BundleFailed", {
  entry: Schema.String,
  message: Schema.String
}) {}

/**
 * A child script bundled for {@link spawn} (see {@link bundled}).
 *
 * @since 0.3.0
 * @category models
 */
export interface Bundle {
  /** The script bundled. */
  readonly entry: string
  /** The bundle's path; the first use bundles it, and every later one waits for the same bundle. */
  readonly path: Effect.Effect<string, BundleFailed>
  /**
   * Starts the bundle as {@link spawn} starts a script. The positions of the
   * stack traces in what it wrote to standard error point at the sources,
   * through the bundle's source map, read by this process when it shows them
   * (a child with Node's `--enable-source-maps` would spend a fifth of a
   * second of CPU parsing the map as it starts).
   */
  readonly spawn: (config: unknown, options?: SpawnOptions) => Effect.Effect<Child, BundleFailed, Scope.Scope>
}

/**
 * The module `entry` (a path) bundled with everything it imports into one
 * file beside it, for {@link spawn}: a Node process that loads one file starts
 * in a fraction of the time one that resolves and compiles its modules one by
 * one takes (a child of agentloop's packages: some 0.3 s of CPU instead of
 * 1.3 s), so a crash test that starts dozens of children spends its time on
 * its cases. Nothing is done until the bundle is first used; it is made once,
 * and removed (with its source map) when this process exits, or, if it was
 * killed, by the next process that bundles the same script.
 *
 * `conditions` are the export conditions packages are resolved with (a
 * workspace that imports its packages' TypeScript sources names its own).
 * Needs the `esbuild` package, an optional peer dependency of this one.
 *
 * @example
 * ```ts
 * import { TestProcess } from "@agentloop/testing"
 * import { Effect } from "effect"
 * import { mkdtempSync, writeFileSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * const dir = mkdtempSync(join(tmpdir(), "child-"))
 * writeFileSync(join(dir, "steps.mjs"), "export const steps = [1, 2]")
 * writeFileSync(
 *   join(dir, "child.mjs"),
 *   `import { steps } from "./steps.mjs"
 * for (const step of steps) console.log(JSON.stringify({ step }))`
 * )
 * const child = TestProcess.bundled(join(dir, "child.mjs"))
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const running = yield* child.spawn(null)
 *   console.log(yield* running.exit, running.messages) // 0 [ { step: 1 }, { step: 2 } ]
 * }))
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.3.0
 * @category constructors
 */
export const bundled = (
  entry: string,
  options: { readonly conditions?: ReadonlyArray<string> | undefined } = {}
): Bundle => {
  let made: Promise<string> | undefined
  // One reader of the bundle's map for all its children: the map is parsed once, if ever.
  let positions: ((stderr: string) => string) | undefined
  const path = Effect.tryPromise({
    try: () => made ??= bundle(entry, options.conditions ?? []),
    catch: (cause) =>
      new BundleFailed({ entry, message: cause instanceof Error ? cause.message : `esbuild failed: ${String(cause)}` })
  })
  return {
    entry,
    path,
    spawn: (config, spawnOptions = {}) =>
      Effect.flatMap(
        path,
        (script) => spawnReading(script, config, spawnOptions, positions ??= BundleStack.sourcePositions(script))
      )
  }
}

/** Bundles `entry` beside it: the bundle's path. */
const bundle = async (entry: string, conditions: ReadonlyArray<string>): Promise<string> => {
  const esbuild = await import("esbuild").catch(() => {
    throw new Error("TestProcess.bundled needs the esbuild package: install it (npm install -D esbuild)")
  })
  // Beside the entry, so that what it resolves from its own place (`import.meta.url`) is the same file; named after
  // this process, so that the bundles of processes that died before removing theirs can be told and removed.
  const dir = Path.dirname(entry)
  const name = Path.basename(entry).replace(/\.[^.]*$/, "")
  const pid = globalThis.process.pid
  const outfile = Path.join(dir, `.${name}.${pid}.${Math.random().toString(36).slice(2)}.bundle.mjs`)
  globalThis.process.once("exit", () => removeBundle(outfile))
  for (const file of Fs.readdirSync(dir)) {
    const owner = bundleOwner(name, file)
    if (owner !== undefined && owner !== pid && !alive(owner)) removeBundle(Path.join(dir, file))
  }
  await esbuild.build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    conditions: [...conditions],
    // The map names the sources rather than holding them: a tenth of the size, as good for a stack trace.
    sourcemap: true,
    sourcesContent: false,
    // Dependencies written as CommonJS call `require`, which an ES module has not.
    banner: {
      js:
        "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);"
    },
    logLevel: "silent"
  })
  return outfile
}

/** The process that made `file`, if it is a bundle of the script `name`. */
const bundleOwner = (name: string, file: string): number | undefined => {
  const match = /^\.(.+)\.(\d+)\.[0-9a-z]+\.bundle\.mjs$/.exec(file)
  return match !== null && match[1] === name ? Number(match[2]) : undefined
}

/** Whether process `pid` is running. */
const alive = (pid: number): boolean => {
  try {
    globalThis.process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it runs, as another user.
    return typeof error === "object" && error !== null && "code" in error && error.code === "EPERM"
  }
}

/** Removes a bundle and its source map, if there. */
const removeBundle = (file: string): void => {
  Fs.rmSync(file, { force: true })
  Fs.rmSync(`${file}.map`, { force: true })
}
