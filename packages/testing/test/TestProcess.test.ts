// @module-tag slow
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as TestProcess from "../src/TestProcess.ts"

const exits = new URL("./children/exits.ts", import.meta.url).pathname
const bundled = new URL("./children/bundled.ts", import.meta.url).pathname

describe("TestProcess", () => {
  it.live("a wait for a message the child never printed ends when it exits, with its exit code and stderr", () =>
    Effect.gen(function*() {
      const child = yield* TestProcess.spawn(exits, {})
      expect(yield* child.waitFor(TestProcess.has("started"))).toStrictEqual({ started: true })
      const waited = yield* Effect.exit(child.waitFor(TestProcess.has("result")))
      expect(yield* child.exit).toBe(3)
      const defect = Exit.isFailure(waited) ? Cause.squash(waited.cause) : undefined
      expect(defect).toBeInstanceOf(Error)
      expect(String(defect)).toContain("exited (code 3) without printing the message awaited")
      expect(String(defect)).toContain("out of coffee")
      // A wait that starts after the child is gone ends at once, the same way.
      expect(Exit.isFailure(yield* Effect.exit(child.waitFor(TestProcess.has("later"))))).toBe(true)
    }).pipe(Effect.scoped))

  it.live(
    "bundles a child once, with what it imports, into one file beside it that runs as the sources do",
    () =>
      Effect.gen(function*() {
        const child = TestProcess.bundled(bundled, { conditions: ["@agentloop/source"] })
        const [first, second] = yield* Effect.all([child.path, child.path], { concurrency: 2 })
        expect(second).toBe(first)
        expect(Path.dirname(first)).toBe(Path.dirname(bundled))
        expect(Fs.existsSync(`${first}.map`)).toBe(true)
        // A bundle left by a process that died is removed by the next one that bundles the script.
        const dead = yield* Effect.scoped(
          Effect.flatMap(TestProcess.spawn(exits, {}), (gone) => Effect.as(gone.exit, gone))
        )
        const left = Path.join(Path.dirname(bundled), `.bundled.${dead.pid}.left.bundle.mjs`)
        Fs.writeFileSync(left, "")
        Fs.writeFileSync(`${left}.map`, "")
        yield* TestProcess.bundled(bundled, { conditions: ["@agentloop/source"] }).path
        expect(Fs.existsSync(left)).toBe(false)
        expect(Fs.existsSync(`${left}.map`)).toBe(false)
        for (const name of ["Ada", "Grace"]) {
          const running = yield* child.spawn({ name })
          expect(yield* running.waitFor(TestProcess.has("greeting"))).toStrictEqual({
            greeting: `hello, ${name}`,
            beside: true,
            item: "message"
          })
          expect(yield* running.exit).toBe(1)
          // The stack trace names the child's own source, through the map.
          expect(running.stderr()).toContain("the end of the bundled child")
          expect(running.stderr()).toContain("children/bundled.ts")
        }
      }).pipe(Effect.scoped),
    60_000
  )

  it.live("fails with BundleFailed, saying what esbuild said, when the script does not build", () =>
    Effect.gen(function*() {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-bundle-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true })))
      const broken = Path.join(dir, "broken.ts")
      Fs.writeFileSync(broken, "import { missing } from './nowhere.ts'\nconsole.log(missing)")
      const failure = yield* Effect.flip(Effect.scoped(TestProcess.bundled(broken).spawn(null)))
      expect(failure).toBeInstanceOf(TestProcess.BundleFailed)
      expect(failure.entry).toBe(broken)
      expect(failure.message).toContain("nowhere.ts")
      expect(Fs.readdirSync(dir)).toStrictEqual(["broken.ts"])
    }).pipe(Effect.scoped))
})
