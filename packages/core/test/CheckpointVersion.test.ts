import { MockLanguageModel, Reachable } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Schema, SchemaTransformation } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as AgentCheckpoint from "../src/agent/AgentCheckpoint.ts"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as CheckpointVersion from "../src/CheckpointVersion.ts"
import type { ExecutionContext } from "../src/step/ExecutionContext.ts"
import * as Step from "../src/step/Step.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as ToolRecord from "../src/ToolRecord.ts"
import * as Until from "../src/Until.ts"
import { addCall, answer, model, pricing, toolkit as addToolkit, usage } from "./agentFixtures.ts"

/** Runs `options` on a fresh mock answering `script`; returns the run's exit and the requests the model saw. */
const runAgent = <O>(script: ReadonlyArray<MockLanguageModel.Reply>, options: AgentLoop.Options<O>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run(options)))
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { exit, requests }
  }).pipe(
    Effect.provide(
      AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer(script)), Layer.provideMerge(pricing))
    )
  )

/**
 * Runs `effect` against the checkpointer in context as an older version wrote: every entry it appends
 * carries version `version` instead of its own (after checking it had one), or none when `version` is
 * undefined (the first version), and a run's entries that version did not write (`ToolStarted` before
 * version 2) are left out.
 */
const recordedAt = (version: number | undefined) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Checkpointer.Checkpointer, (store) =>
    Effect.provideService(effect, Checkpointer.Checkpointer, {
      ...store,
      open: (id, fingerprint) =>
        Effect.map(store.open(id, fingerprint), (log) => ({
          entries: log.entries,
          append: (entries, options) =>
            log.append(
              entries.flatMap((text) => {
                const { v, ...entry } = JSON.parse(text)
                expect(v).toBeTypeOf("number")
                if (version === undefined && entry._tag === "ToolStarted") return []
                return [JSON.stringify(version === undefined ? entry : { ...entry, v: version })]
              }),
              options
            )
        }))
    }))

/** As the version before entries carried a version wrote. */
const unversioned = recordedAt(undefined)

const read = (id: string) => Effect.flatMap(Checkpointer.Checkpointer, (store) => store.read(id))

/** The failure of an exit: its typed error. */
const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) return expect.unreachable("the run succeeded")
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? reason.error : expect.unreachable(`the run did not fail with an error: ${reason}`)
}

const Celsius = Schema.Struct({ celsius: Schema.Finite })
const Degrees = Schema.Struct({ degrees: Schema.Finite, unit: Schema.Literals(["C", "F"]) })
/** Version 1 of the weather tool's output was `{ celsius }`; version 2 is `{ degrees, unit }`. */
const toDegrees = CheckpointVersion.migration(
  1,
  2,
  Celsius.pipe(Schema.decodeTo(
    Degrees,
    SchemaTransformation.transform({
      decode: ({ celsius }): typeof Degrees.Type => ({ degrees: celsius, unit: "C" }),
      encode: ({ degrees }) => ({ celsius: degrees })
    })
  ))
)

/** A weather tool (the finish tool) of output version 1, 2 or 3, and a tool that blocks the first time it runs. */
const weatherTools = Effect.gen(function*() {
  const blocked = yield* Deferred.make<void>()
  let waits = 0
  const wait = Tool.make({
    name: "wait",
    description: "Blocks the first time",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () =>
      Effect.suspend(() =>
        ++waits === 1 ? Effect.andThen(Deferred.succeed(blocked, undefined), Effect.never) : Effect.succeed("waited")
      )
  })
  const common = { name: "weather", description: "Today's weather", input: Schema.Struct({ city: Schema.String }) }
  const v1 = Tool.make({ ...common, output: Celsius, execute: () => Effect.succeed({ celsius: 21 }) })
  const v2 = Tool.make({
    ...common,
    output: Degrees,
    outputVersioning: { version: 2, migrations: [toDegrees] },
    execute: () => Effect.succeed({ degrees: 70, unit: "F" as const })
  })
  const v3 = Tool.make({
    ...common,
    output: Degrees,
    // Version 3 reads version 2 only: version 1's outputs reach it by no migration.
    outputVersioning: { version: 3, migrations: [CheckpointVersion.migration(2, 3, Degrees)] },
    execute: () => Effect.succeed({ degrees: 70, unit: "F" as const })
  })
  return {
    blocked,
    weather: { v1, v2 },
    v1: Toolkit.make(v1, wait),
    v2: Toolkit.make(v2, wait),
    v3: Toolkit.make(v3, wait)
  }
})

/** The weather run: turn 1 calls weather (the finish tool) and wait together. */
const weatherTurn = MockLanguageModel.callsTurn([
  { name: "weather", arguments: { city: "Paris" }, callId: "call_weather" },
  { name: "wait", arguments: {}, callId: "call_wait" }
], { model, usage })

/** Runs the weather run with `toolkit` until `wait` blocks and weather's result is recorded, then interrupts it. */
const cutAfterWeather = (
  id: string,
  tools: Effect.Success<typeof weatherTools>,
  toolkit: Toolkit.Toolkit<never>
) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.forkChild(
      runAgent([weatherTurn], { input: "Weather?", toolkit, model, finish: "weather", runId: id })
    )
    yield* Deferred.await(tools.blocked)
    // Appends are ordered but not awaited by the tool that blocks: wait for weather's to land.
    yield* read(id).pipe(Effect.repeat({ until: (entries) => entries.some((entry) => entry.includes("ToolDone")) }))
    yield* Fiber.interrupt(fiber)
  })

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-versions-"))
afterAll(() => Fs.rmSync(directory, { recursive: true, force: true }))

const files = Checkpointer.layerFileSystem(directory).pipe(
  Layer.provide(NodeFileSystem.layer),
  Layer.provide(NodePath.layer)
)

/**
 * An agent run of three turns recorded at `version` (undefined: before entries carried one), stopped by its turn
 * limit after two: executed again with a higher one, it goes on.
 */
const oldRecordsResume = (id: string, version?: number) =>
  Effect.gen(function*() {
    const options = { input: "Add", toolkit: addToolkit, model, runId: id }
    const limited = yield* recordedAt(version)(
      runAgent([addCall(1, 1), addCall(1, 2)], { ...options, limits: { maxTurns: 2 } })
    )
    expect(failureOf(limited.exit)).toMatchObject({ _tag: "MaxTurns" })
    expect((yield* read(id)).every((entry) => JSON.parse(entry).v === version)).toBe(true)

    const { exit, requests } = yield* runAgent([answer("2 and 3")], { ...options, limits: { maxTurns: 5 } })
    expect(exit._tag === "Success" && exit.value._tag === "Stopped" && exit.value.output).toBe("2 and 3")
    expect(exit._tag === "Success" && exit.value.termination.accounting.steps).toBe(3)
    // The resumed run asked for the third turn only, with the first two turns' history restored.
    expect(requests).toHaveLength(1)
    expect(requests[0]!.history.filter((item) => item.type === "function_call_output").map((item) => item.output))
      .toStrictEqual(["2", "3"])
    // What it appended carries the version it writes: 3, which only added Cancelled to version 2 (which added
    // ToolStarted to version 1).
    expect((yield* read(id)).map((entry) => JSON.parse(entry).v).slice(-2)).toStrictEqual([3, 3])
  })

const postgresReachable = await Reachable.listening(5432)
if (!postgresReachable) {
  console.warn("CheckpointVersion: SKIPPING the PostgreSQL cases: nothing listens on 127.0.0.1:5432")
}
const table = `agentloop_versions_test_${process.pid}`
const pgClient = PgClient.layer({ host: "127.0.0.1", port: 5432, database: "test", username: "postgres" })
if (postgresReachable) {
  afterAll(() =>
    Effect.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.all([sql`DROP TABLE IF EXISTS ${sql(table)}`, sql`DROP TABLE IF EXISTS ${sql(`${table}_runs`)}`])).pipe(
          Effect.provide(pgClient)
        )
    )
  )
}

const stores: ReadonlyArray<readonly [string, Layer.Layer<Checkpointer.Checkpointer, unknown>]> = [
  ["in memory", Checkpointer.layerMemory],
  ["on files", files],
  ...(postgresReachable
    ? [["on PostgreSQL", Checkpointer.layerSql({ table }).pipe(Layer.provide(pgClient))] as const]
    : [])
]

for (const [store, layer] of stores) {
  describe(`versioned checkpoints ${store}`, () => {
    it.effect("an agent run recorded before entries carried a version resumes", () =>
      oldRecordsResume("agent-old").pipe(Effect.provide(layer)))

    it.effect("an agent run recorded at version 2 resumes", () =>
      oldRecordsResume("agent-v2", 2).pipe(Effect.provide(layer)))

    it.effect("an agent run recorded by a newer version fails with CheckpointVersionMismatch before anything runs", () =>
      Effect.gen(function*() {
        const options = { input: "Add", toolkit: addToolkit, model, runId: "agent-newer" }
        yield* runAgent([addCall(1, 1)], { ...options, limits: { maxTurns: 1 } })
        const log = yield* read("agent-newer")
        // The same run as a version 4 of agentloop's entries would have written it: a new run id, the same fingerprint.
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* Checkpointer.Checkpointer
          const next = yield* store.open("agent-newer-2", yield* AgentCheckpoint.fingerprint(options))
          yield* next.append(log.map((entry) => JSON.stringify({ ...JSON.parse(entry), v: 4 })))
        }))
        const { exit, requests } = yield* runAgent([answer("never")], {
          ...options,
          runId: "agent-newer-2",
          limits: { maxTurns: 5 }
        })
        const failure = failureOf(exit)
        expect(failure).toMatchObject({
          _tag: "CheckpointFailed",
          cause: { _tag: "CheckpointVersionMismatch", recorded: 4, supported: 3 }
        })
        expect(failure.message).toContain("recorded at version 4, and this app reads version 3")
        expect(requests).toHaveLength(0)
      }).pipe(Effect.provide(layer)))

    it.effect("a tool's output recorded at version 1 is read by its version 2 through its migration", () =>
      Effect.gen(function*() {
        const tools = yield* weatherTools
        yield* cutAfterWeather("weather-migrated", tools, tools.v1)
        const { exit, requests } = yield* runAgent([], {
          input: "Weather?",
          toolkit: tools.v2,
          model,
          finish: "weather",
          runId: "weather-migrated"
        })
        // The run resumed in the middle of turn 1: weather's recorded output, migrated, is what it submits.
        expect(requests).toHaveLength(0)
        expect(exit._tag === "Success" && exit.value.termination).toMatchObject({
          _tag: "Submitted",
          tool: "weather",
          value: { degrees: 21, unit: "C" }
        })
      }).pipe(Effect.provide(layer)))

    it.effect("a finished run's submitted value, its finish tool's output at version 1, is read by version 2", () =>
      Effect.gen(function*() {
        const tools = yield* weatherTools
        const options = { input: "Weather?", model, finish: "weather", runId: "weather-finished" }
        const weatherOnly = MockLanguageModel.callsTurn([{ name: "weather", arguments: { city: "Oslo" } }], {
          model,
          usage
        })
        const first = yield* runAgent([weatherOnly], { ...options, toolkit: tools.v1 })
        expect(first.exit._tag === "Success" && first.exit.value.termination).toMatchObject({ value: { celsius: 21 } })
        const again = yield* runAgent([], { ...options, toolkit: tools.v2 })
        expect(again.requests).toHaveLength(0)
        expect(again.exit._tag === "Success" && again.exit.value.termination).toMatchObject({
          _tag: "Submitted",
          value: { degrees: 21, unit: "C" }
        })
      }).pipe(Effect.provide(layer)))

    it.effect("a tool's output of a version no migration reaches fails the resumed run with CheckpointVersionMismatch", () =>
      Effect.gen(function*() {
        const tools = yield* weatherTools
        yield* cutAfterWeather("weather-unreachable", tools, tools.v1)
        const { exit } = yield* runAgent([], {
          input: "Weather?",
          toolkit: tools.v3,
          model,
          finish: "weather",
          runId: "weather-unreachable"
        })
        expect(failureOf(exit)).toMatchObject({
          _tag: "CheckpointFailed",
          cause: {
            _tag: "CheckpointVersionMismatch",
            subject: "the output of tool \"weather\"",
            recorded: 1,
            supported: 3
          }
        })
      }).pipe(Effect.provide(layer)))

    it.effect("a tool step's output recorded at version 1 is replayed through its tool's migration", () =>
      Effect.gen(function*() {
        const tools = yield* weatherTools
        const blocked = yield* Deferred.make<void>()
        const args = { city: "Paris" }
        const first = Step.loop({
          id: "program",
          steps: [
            Step.tool({ id: "weather", tool: tools.weather.v1, args }),
            Step.run({ id: "after", execute: () => Effect.andThen(Deferred.succeed(blocked, undefined), Effect.never) })
          ],
          until: Until.maxSteps(1)
        })
        const fiber = yield* Effect.forkChild(Effect.exit(Step.execute(first, {}, { id: "tool-step-migrated" })))
        yield* Deferred.await(blocked)
        yield* Fiber.interrupt(fiber)
        const second = Step.loop({
          id: "program",
          steps: [
            Step.tool({ id: "weather", tool: tools.weather.v2, args }),
            Step.run({ id: "after", execute: (weather: typeof Degrees.Type) => `${weather.degrees} °${weather.unit}` })
          ],
          until: Until.maxSteps(1)
        })
        // The tool step is not run again (version 2 would say 70 °F): its recorded output is migrated.
        expect(yield* Step.execute(second, {}, { id: "tool-step-migrated" })).toBe("21 °C")
      }).pipe(Effect.provide(layer)))

    it.effect("a step program's state recorded at version 1 resumes through the program's migration", () =>
      Effect.gen(function*() {
        const blocked = yield* Deferred.make<void>()
        let recounted = false
        const count = Step.run({
          id: "count",
          execute: (_: string, ctx: ExecutionContext<{ readonly count: number }>) => {
            ctx.updateState((state) => ({ count: state.count + 1 }))
            return "counted"
          }
        })
        const firstProgram = Step.loop({
          id: "program",
          steps: [
            count,
            Step.run({ id: "wait", execute: () => Effect.andThen(Deferred.succeed(blocked, undefined), Effect.never) })
          ],
          until: Until.maxSteps(1)
        })
        const fiber = yield* Effect.forkChild(
          Effect.exit(unversioned(Step.execute(firstProgram, "go", { id: "state-migrated", state: { count: 0 } })))
        )
        yield* Deferred.await(blocked)
        yield* Fiber.interrupt(fiber)

        // Version 2 renamed the state's `count` to `visits`.
        const Count = Schema.Struct({ count: Schema.Finite })
        const Visits = Schema.Struct({ visits: Schema.Finite })
        const stateVersioning: CheckpointVersion.Versioning = {
          version: 2,
          migrations: [CheckpointVersion.migration(
            1,
            2,
            Count.pipe(Schema.decodeTo(
              Visits,
              SchemaTransformation.transform({
                decode: ({ count }) => ({ visits: count }),
                encode: ({ visits }) => ({ count: visits })
              })
            ))
          )]
        }
        const secondProgram = Step.loop({
          id: "program",
          steps: [
            Step.run({ id: "count", execute: () => (recounted = true, "counted") }),
            Step.run({
              id: "wait",
              execute: (_: string, ctx: ExecutionContext<{ readonly visits: number }>) => `visits: ${ctx.state.visits}`
            })
          ],
          until: Until.maxSteps(1)
        })
        const resumed = yield* Step.execute(secondProgram, "go", {
          id: "state-migrated",
          state: { visits: 0 },
          stateVersioning
        })
        expect(resumed).toBe("visits: 1")
        expect(recounted).toBe(false)

        // A program whose state is at version 3, with no migration from version 1, refuses the record.
        const refused = yield* Effect.flip(Step.execute(secondProgram, "go", {
          id: "state-migrated",
          state: { visits: 0 },
          stateVersioning: { version: 3 }
        }))
        expect(refused).toMatchObject({
          _tag: "ExecutionCheckpointFailed",
          executionId: "state-migrated",
          cause: { _tag: "CheckpointVersionMismatch", recorded: 1, supported: 3 }
        })
      }).pipe(Effect.provide(layer)))
  })
}

describe("CheckpointVersion.migrate", () => {
  const Value = Schema.Struct({ n: Schema.Finite })
  const plus = (from: number, to: number) =>
    CheckpointVersion.migration(
      from,
      to,
      Value.pipe(Schema.decodeTo(
        Value,
        SchemaTransformation.transform({ decode: ({ n }) => ({ n: n + to }), encode: ({ n }) => ({ n: n - to }) })
      ))
    )
  const migrate = (recorded: number, versioning: CheckpointVersion.Versioning) =>
    CheckpointVersion.migrate({ subject: "the value", versioning, recorded, value: { n: 0 } })

  it.effect("runs the migrations from the recorded version one after another, in whatever order they are given", () =>
    Effect.gen(function*() {
      const versioning = { version: 4, migrations: [plus(3, 4), plus(1, 3), plus(2, 3)] }
      expect(yield* migrate(1, versioning)).toStrictEqual({ n: 7 })
      expect(yield* migrate(2, versioning)).toStrictEqual({ n: 7 })
      expect(yield* migrate(4, versioning)).toStrictEqual({ n: 0 })
    }))

  it.effect("a newer version, a gap or a cycle is a CheckpointVersionMismatch naming both versions", () =>
    Effect.gen(function*() {
      for (
        const [recorded, migrations] of [[5, [plus(1, 4)]], [1, [plus(2, 4)]], [1, [plus(1, 2), plus(2, 1)]]] as const
      ) {
        const error = yield* Effect.flip(migrate(recorded, { version: 4, migrations }))
        expect(error).toMatchObject({ _tag: "CheckpointVersionMismatch", recorded, supported: 4 })
        expect(error.message).toBe(
          `the value was recorded at version ${recorded}, and this app reads version 4: ` +
            `no migration leads from version ${recorded} to version 4`
        )
      }
    }))
})

describe("versionings that cannot work", () => {
  const broken = Tool.make({
    name: "broken",
    description: "Versioned wrong",
    input: Schema.Struct({}),
    output: Schema.String,
    outputVersioning: { version: 1.5 },
    execute: () => Effect.succeed("")
  })
  const expected = "a version (an integer from 1) and migrations (CheckpointVersion.migration)"

  it.effect("are InvalidOptions naming the field, before anything runs", () =>
    Effect.gen(function*() {
      const state = yield* Effect.flip(
        Step.execute(Step.run({ id: "a", execute: () => 1 }), {}, { stateVersioning: { version: 0 } })
      )
      expect(state).toMatchObject({ _tag: "InvalidOptions", field: "stateVersioning", expected })
      const migrations = yield* Effect.flip(Step.execute(Step.run({ id: "a", execute: () => 1 }), {}, {
        stateVersioning: { version: 2, migrations: [{ from: 1, to: 2, schema: "not a schema" as never }] }
      }))
      expect(migrations).toMatchObject({ _tag: "InvalidOptions", field: "stateVersioning" })
      const step = yield* Effect.flip(Step.execute(Step.tool({ id: "t", tool: broken }), {}))
      expect(step).toMatchObject({ _tag: "InvalidOptions", field: "tool \"broken\".outputVersioning", stepId: "t" })
      const { exit, requests } = yield* runAgent([], { input: "Hi", model, toolkit: Toolkit.make(broken) })
      expect(failureOf(exit)).toMatchObject({
        _tag: "InvalidOptions",
        field: "tool \"broken\".outputVersioning",
        value: "{\"version\":1.5}",
        expected
      })
      expect(requests).toHaveLength(0)
    }))
})

describe("ToolRecord", () => {
  it.effect("a success records its tool's output version; restoring it migrates the output, not the item", () =>
    Effect.gen(function*() {
      const tools = yield* weatherTools
      const call = {
        type: "function_call",
        id: "fc_1",
        status: "completed",
        call_id: "c1",
        name: "weather",
        arguments: "{}"
      } as const
      const output = {
        type: "function_call_output",
        id: "fco_1",
        status: "completed",
        call_id: "c1",
        output: "{\"celsius\":5}"
      } as const
      const record = ToolRecord.fromResult({ outcome: "success", call, output, value: { celsius: 5 } }, tools.v1)
      expect(record.version).toBeUndefined()
      const restored = yield* ToolRecord.toResult(tools.v2, record)
      expect(restored).toMatchObject({ outcome: "success", value: { degrees: 5, unit: "C" }, output })
      const written = ToolRecord.fromResult(restored, tools.v2)
      expect(written.version).toBe(2)
      expect(
        yield* ToolRecord.toResult(tools.v2, {
          ...written,
          output: { ...output, output: "{\"degrees\":9,\"unit\":\"F\"}" }
        })
      )
        .toMatchObject({ value: { degrees: 9, unit: "F" } })
    }))
})
