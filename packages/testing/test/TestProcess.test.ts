import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import * as TestProcess from "../src/TestProcess.ts"

const exits = new URL("./children/exits.ts", import.meta.url).pathname

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
})
