/** The durable tests' agent: tools, a model script, and a temporary SQLite runner. */
import { Pricing, TokenUsage, Tool, Toolkit } from "@agentloop/core"
import { MockLanguageModel, TestProcess } from "@agentloop/testing"
import { Effect, Layer, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { DurableRunner } from "../src/index.ts"

export const model = "test-model"
export const pricing = Pricing.layer({ [model]: { input: 1, cachedInput: 0.5, output: 2 } })
export const usage = TokenUsage.make(20, 10)

/** Calls `tool` with `args`, as the model's turn. */
export const call = (name: string, args: unknown, callId = `call_${name}`) =>
  MockLanguageModel.callsTurn([{ name, arguments: args, callId }], { model, usage })

/** Calls several tools in one turn. */
export const calls = (...list: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }>) =>
  MockLanguageModel.callsTurn(list.map((entry) => ({ ...entry, callId: `call_${entry.name}` })), { model, usage })

export const answer = (text: string) => MockLanguageModel.textTurn(text, { model, usage })

/** How many times each tool ran in this process. */
export const ran = { add: 0, note: 0, remove: 0 }

export const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  idempotent: true,
  execute: ({ a, b }) => Effect.sync(() => (ran.add++, a + b))
})

export const remove = Tool.make({
  name: "remove",
  description: "Removes a file",
  input: Schema.Struct({ path: Schema.String }),
  output: Schema.Struct({ removed: Schema.String }),
  needsApproval: ({ path }) => path.startsWith("/"),
  execute: ({ path }) => Effect.sync(() => (ran.remove++, { removed: path }))
})

export const note = Tool.make({
  name: "note",
  description: "Writes a note",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  execute: ({ text }) => Effect.sync(() => (ran.note++, `noted ${text}`))
})

export const toolkit = Toolkit.make(add, note, remove)

/** A fresh directory under the system's temporary one, removed by the returned function. */
export const tempDir = (): { readonly dir: string; readonly remove: () => void } => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "agentloop-durable-"))
  return { dir, remove: () => Fs.rmSync(dir, { recursive: true, force: true }) }
}

/** An embedded runner over `filename`, with the mock model answering `script`. */
export const embedded = (filename: string, script: ReadonlyArray<MockLanguageModel.Reply>) =>
  Layer.mergeAll(MockLanguageModel.layer(script), pricing).pipe(
    Layer.provideMerge(DurableRunner.layerSqlite({ filename, synchronous: "NORMAL" }))
  )

/** How children of this repository are bundled: with the packages' sources (see `TestProcess.bundled`). */
export const sources = { conditions: ["@agentloop/source"] }

/** The crash tests' child process. */
export const crashChild = TestProcess.bundled(new URL("./child.ts", import.meta.url).pathname, sources)

/** Runs `body` with `agents` registered on an embedded runner over a fresh file, the mock answering `script`. */
export const withRunner = <A, E, R>(
  agents: Layer.Layer<never, never, R>,
  script: ReadonlyArray<MockLanguageModel.Reply>,
  body: Effect.Effect<A, E, R | DurableRunner.Services | SqlClient | MockLanguageModel.MockLanguageModel>
) => {
  const temp = tempDir()
  return body.pipe(
    Effect.provide(agents.pipe(Layer.provideMerge(embedded(Path.join(temp.dir, "runs.db"), script)))),
    Effect.ensuring(Effect.sync(temp.remove))
  )
}
