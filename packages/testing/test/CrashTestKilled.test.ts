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
import { script } from "./crash/shop.ts"

const child = new URL("./crash/shopChild.ts", import.meta.url).pathname

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
          entry: child,
          config: { directory },
          model: script,
          execArgv: ["--conditions=@agentloop/source"],
          at: [5, 6]
        })
        yield* CrashReport.verify(report)
        expect(report.uninterrupted.result).toStrictEqual({ _tag: "Success", value: "Charged 7.50 for tea and cake." })
        expect(report.uninterrupted.observed.appends).toHaveLength(9)
        expect(report.killPoints.map((point) => [point.after, point.entry])).toStrictEqual([
          [5, "Answered"],
          [6, "ToolDone"]
        ])
        for (const point of report.killPoints) {
          expect(point.result).toStrictEqual(report.uninterrupted.result)
          // The killed process recorded the steps up to its kill point and no more; the new one, the others once.
          expect(point.observed.appends).toStrictEqual(report.uninterrupted.observed.appends)
          expect(point.observed.turns).toHaveLength(3)
          expect(point.observed.effects.filter((effect) => effect.name === "charge")).toHaveLength(1)
        }
      }).pipe(Effect.scoped),
    hangs
  )
})
