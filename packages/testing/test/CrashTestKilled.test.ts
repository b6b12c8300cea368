// @module-tag slow
/**
 * The crash-test kit with real kills: the shop's run in a child process on
 * the file store, dying by `SIGKILL` on either side of the card's charge
 * (once the turn that asks for it is recorded, and once the charge is), each
 * time resumed by a new process. (Every kill point is the in-process test's
 * job: each one here starts two processes.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as CrashReport from "../src/CrashReport.ts"
import * as CrashTest from "../src/CrashTest.ts"
import * as TestProcess from "../src/TestProcess.ts"
import { script } from "./crash/shop.ts"

const child = TestProcess.bundled(new URL("./crash/shopChild.ts", import.meta.url).pathname, {
  conditions: ["@agentloop/source"]
})

/** Node processes that load the sources: seconds on a busy machine. The limit only ends a case that hangs. */
const hangs = 120_000

describe("CrashTest.everyCheckpointKilled", () => {
  it.live(
    "kills the shop's child by SIGKILL after an append, resumes it in another, and finds every invariant kept",
    () =>
      Effect.gen(function*() {
        const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-crash-kit-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true })))
        const report = yield* CrashTest.everyCheckpointKilled({
          entry: yield* child.path,
          config: { directory },
          model: script,
          execArgv: ["--enable-source-maps"],
          at: [6, 7]
        })
        yield* CrashReport.verify(report)
        expect(report.uninterrupted.result).toStrictEqual({ _tag: "Success", value: "Charged 7.50 for tea and cake." })
        expect(report.uninterrupted.observed.appends).toHaveLength(10)
        // Killed once charge's start is recorded, and once its end is.
        expect(report.killPoints.map((point) => [point.after, point.entry])).toStrictEqual([
          [6, "ToolStarted"],
          [7, "ToolDone"]
        ])
        const [started, done] = report.killPoints
        for (const point of report.killPoints) {
          expect(point.result).toStrictEqual(report.uninterrupted.result)
          expect(point.observed.turns).toHaveLength(3)
        }
        // Killed after its start: charge, not idempotent, is not run again (its outcome unknown to the model),
        // and its end is never recorded.
        expect(started!.observed.effects.filter((effect) => effect.name === "charge")).toHaveLength(0)
        expect(started!.observed.appends).toStrictEqual(
          report.uninterrupted.observed.appends.filter((_, index) => index !== 6)
        )
        expect(started!.observed.turns[2]!.at(-1)).toMatchObject({ call_id: "call_charge", status: "incomplete" })
        // Killed after its end: it ran once; the killed process recorded the steps up to its kill point and no
        // more, the new one the others once.
        expect(done!.observed.effects.filter((effect) => effect.name === "charge")).toHaveLength(1)
        expect(done!.observed.appends).toStrictEqual(report.uninterrupted.observed.appends)
      }).pipe(Effect.scoped),
    hangs
  )
})
