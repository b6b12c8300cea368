/**
 * What checkpointing costs a step program, and how big its records are:
 *
 * - a step's checkpoint: a program of 100 `run` steps in sequence (a loop of
 *   one iteration), each step's completion an append, executed with
 *   `Checkpointer.layerFileSystem` (synced, and `sync: false`) and on SQLite,
 *   against the same program with no `Checkpointer`;
 * - the records: the bytes of a `run` step's entry in that program, and of an
 *   agent loop of `llm` steps (a tool call a turn, on the scripted run of the
 *   other checkpoint benchmarks) per turn.
 */
import { Checkpointer, Step, Toolkit, Until } from "@agentloop/core"
import { NodeSqliteClient } from "@agentloop/durable"
import { MockLanguageModel } from "@agentloop/testing"
import { NodeFileSystem, NodePath } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import type { Context } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { compare } from "./measure.ts"
import { add, script } from "./scriptedRun.ts"

const length = 100
const steps = Array.from({ length }, (_, i) => Step.run({ id: `work-${i}`, execute: (n: number) => n + 1 }))
const [first, ...rest] = steps
const sequence = Step.loop({ id: "sequence", steps: [first!, ...rest], until: Until.maxSteps(1) })

const turns = 20
const agent = Step.loop({
  id: "agent",
  steps: [Step.llm({ id: "turn", model: "gpt-5-mini" })],
  until: Until.noToolCalls(),
  maxIterations: turns
})

const bytes = (texts: ReadonlyArray<string>) => texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0)

// The records, in memory: what each store writes, less its own framing.
const sizes = await Effect.runPromise(
  Effect.gen(function*() {
    const store = yield* Checkpointer.Checkpointer
    yield* Step.execute(sequence, 0, { id: "sizes-sequence" })
    const sequenced = yield* store.read("sizes-sequence")
    yield* Step.execute(agent, "Count", { id: "sizes-agent", toolkit: Toolkit.make(add) }).pipe(
      Effect.provide(MockLanguageModel.layer(script(turns)))
    )
    const agentLog = yield* store.read("sizes-agent")
    // The steps' entries: all but the loop's own and the program's output.
    return { step: bytes(sequenced.slice(0, length)) / length, turn: bytes(agentLog) / turns }
  }).pipe(Effect.provide(Checkpointer.layerMemory))
)
console.log(
  `\nstep records: a run step's entry ${sizes.step.toFixed(0)} bytes; an llm step's, per turn with a tool call`
)
console.log(`  (answered, started, done, completed) ${sizes.turn.toFixed(0)} bytes`)

const directory = mkdtempSync(join(tmpdir(), "agentloop-bench-step-checkpoints-"))
const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer)
const stores = {
  files: Checkpointer.layerFileSystem(join(directory, "logs")).pipe(Layer.provide(platform)),
  unsynced: Checkpointer.layerFileSystem(join(directory, "unsynced"), { sync: false }).pipe(Layer.provide(platform)),
  sqlite: Checkpointer.layerSql().pipe(Layer.provide(NodeSqliteClient.layer({ filename: join(directory, "steps.db") })))
}

let executions = 0
const execute = (store: Context.Context<Checkpointer.Checkpointer> | undefined) => () =>
  Effect.runPromise(
    store === undefined
      ? Effect.asVoid(Step.execute(sequence, 0))
      : Effect.asVoid(Step.execute(sequence, 0, { id: `steps-${executions++}` })).pipe(Effect.provide(store))
  )

// Each store is built once and stays open across executions, as it would in an application.
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const built = (layer: Layer.Layer<Checkpointer.Checkpointer, unknown>) => Effect.orDie(Layer.build(layer))
  const files = yield* built(stores.files)
  const unsynced = yield* built(stores.unsynced)
  const sqlite = yield* built(stores.sqlite)
  yield* Effect.promise(() =>
    compare({
      title: `a step's checkpoint: ${length} run steps in sequence, each completion an append`,
      units: length,
      unit: "step",
      rounds: 5,
      baseline: { name: "Step.execute without a Checkpointer", run: execute(undefined) },
      cases: [
        { name: "layerFileSystem (the embedded default)", run: execute(files) },
        { name: "layerFileSystem, sync: false", run: execute(unsynced) },
        { name: "layerSql on SQLite (synchronous FULL)", run: execute(sqlite) }
      ]
    })
  )
})))
rmSync(directory, { recursive: true, force: true })
