/**
 * Which executions count as crashes: one that started and never ended counts
 * (here, started by hand on the store, as a process that died would leave
 * it), one that waits for a decision or is stopped does not, and a step
 * recorded since the last one started resets the count. The real crashes are
 * in SqliteCrash.test.ts.
 */
import { LanguageModel } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schedule, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Path from "node:path"
import { DurableAgent, DurableRunner, RunStore } from "../src/index.ts"
import { answer, call, model, pricing, tempDir, toolkit, withRunner } from "./fixtures.ts"

describe("RunParking", () => {
  it.live("executions that died are counted until the run is parked; unparked, it goes on", () => {
    const fragile = DurableAgent.make("fragile", { model, toolkit, maxCrashes: 2 })
    const run = { agent: "fragile", runId: "f1" }
    return withRunner(
      fragile.layer,
      [call("add", { a: 1, b: 2 }), answer("3")],
      Effect.gen(function*() {
        const store = yield* RunStore.RunStore
        // Two executions that started and never ended, as two runners that died with the run would leave them.
        yield* store.begin(run)
        yield* store.begin(run)
        yield* fragile.start({ runId: "f1", input: "Add" })
        const [parked] = yield* fragile.parked.pipe(
          Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (runs) => runs.length > 0 })
        )
        expect(parked).toMatchObject({ _tag: "RunParked", runId: "f1", crashes: 2, recordedSteps: 0 })
        expect(parked?.message).toMatch(/2 executions in a row died with its runner/)
        expect(yield* Effect.flip(fragile.run({ runId: "f1", input: "Add" }))).toStrictEqual(parked)
        const recorder = yield* MockLanguageModel.MockLanguageModel
        expect(yield* recorder.requests).toStrictEqual([])
        expect(yield* fragile.unpark("f1")).toBe(true)
        const result = yield* fragile.run({ runId: "f1", input: "Add" })
        expect(result._tag === "Stopped" && result.output).toBe("3")
        expect(yield* fragile.parked).toStrictEqual([])
      })
    )
  })

  it.live("a step recorded since the last execution started resets the count", () =>
    withRunner(
      Layer.empty,
      [],
      Effect.gen(function*() {
        const store = yield* RunStore.RunStore
        const run = { agent: "any", runId: "p1" }
        expect((yield* store.begin(run)).attempts).toBe(1)
        expect((yield* store.begin(run)).attempts).toBe(2)
        yield* store.commit(run, { steps: [{ name: "start", body: "0" }], entries: [] })
        expect((yield* store.begin(run)).attempts).toBe(1)
        expect((yield* store.begin(run)).attempts).toBe(2)
        yield* store.interrupted(run)
        expect((yield* store.begin(run)).attempts).toBe(1)
      })
    ))

  it.live("a run that waits for a decision is not crashing: its count is back to 0 while it waits", () => {
    const careful = DurableAgent.make("careful", { model, toolkit, maxCrashes: 1 })
    return withRunner(
      careful.layer,
      [call("remove", { path: "/a" }), answer("removed")],
      Effect.gen(function*() {
        yield* careful.start({ runId: "c1", input: "Remove" })
        const sql = yield* SqlClient
        const attempts = sql<{ readonly attempts: number }>`
          SELECT attempts FROM agentloop_agent_runs WHERE agent = 'careful' AND run_id = 'c1'`
        yield* attempts.pipe(
          Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (rows) => rows[0]?.attempts === 0 })
        )
        expect(yield* careful.parked).toStrictEqual([])
      })
    )
  })

  it.live("a runner that stops with the run in flight is not a crash: the next one runs it", () => {
    const temp = tempDir()
    const filename = Path.join(temp.dir, "runs.db")
    let asked = 0
    // The first request never ends: the runner stops before the run recorded any step, which would count.
    const hanging = Layer.succeed(LanguageModel.LanguageModel, {
      provider: "test",
      streamTurn: () =>
        Stream.suspend(() =>
          ++asked === 1 ? Stream.never : Stream.fromIterable(MockLanguageModel.deltas(answer("done")))
        )
    })
    const patient = DurableAgent.make("patient", { model, maxCrashes: 1 })
    const runner = patient.layer.pipe(
      Layer.provideMerge(
        DurableRunner.layerSqlite({
          filename,
          synchronous: "NORMAL",
          sharding: { entityTerminationTimeout: "1 second" }
        })
      )
    )
    return Effect.gen(function*() {
      yield* Effect.scoped(Effect.gen(function*() {
        const context = yield* Layer.build(runner)
        yield* Effect.provideContext(patient.start({ runId: "s1", input: "Wait" }), context)
        while (asked === 0) yield* Effect.sleep("20 millis")
      }))
      // Were the stop counted, this runner would park the run instead of running it.
      const result = yield* patient.run({ runId: "s1", input: "Wait" }).pipe(Effect.provide(runner))
      expect(result._tag === "Stopped" && result.output).toBe("done")
      expect(asked).toBe(2)
    }).pipe(
      Effect.provide(Layer.mergeAll(hanging, pricing)),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})
