/**
 * The agent of the crash tests, the same in every process: tools that append
 * a line (the runner's name) to `<markers>/<tool>.log` each time they start;
 * the first run of `add` and `charge` never ends (so a test can kill it),
 * `pay` (not idempotent either) always ends, `remove` needs approval, and
 * `explode` kills its own process while the file `<markers>/fuse` exists.
 */
import * as Tool from "@agentloop/core/Tool"
import * as Toolkit from "@agentloop/core/Toolkit"
import * as TestProcess from "@agentloop/testing/TestProcess"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as DurableAgent from "../src/DurableAgent.ts"

export interface Options {
  readonly markers: string
  readonly runner: string
  readonly maxCrashes?: number | undefined
}

export const make = (options: Options) => {
  /** Counts a start of `tool`; true when it is the first. */
  const started = (tool: string) =>
    Effect.tap(
      Effect.sync(() => {
        const file = Path.join(options.markers, `${tool}.log`)
        const before = Fs.existsSync(file) ? Fs.readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0
        Fs.appendFileSync(file, `${options.runner}\n`)
        return before === 0
      }),
      () => TestProcess.report({ toolStarted: tool, runner: options.runner })
    )
  const hangFirst = <A>(tool: string, value: A) =>
    Effect.flatMap(started(tool), (first) => first ? Effect.never : Effect.succeed(value))

  const add = Tool.make({
    name: "add",
    description: "Adds two numbers",
    input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
    output: Schema.Finite,
    idempotent: true,
    execute: ({ a, b }) => hangFirst("add", a + b)
  })
  const charge = Tool.make({
    name: "charge",
    description: "Charges a card",
    input: Schema.Struct({ cents: Schema.Int }),
    output: Schema.String,
    execute: ({ cents }) => hangFirst("charge", `charged ${cents}`)
  })
  const pay = Tool.make({
    name: "pay",
    description: "Pays an invoice",
    input: Schema.Struct({ cents: Schema.Int }),
    output: Schema.String,
    execute: ({ cents }) => Effect.as(started("pay"), `paid ${cents}`)
  })
  const remove = Tool.make({
    name: "remove",
    description: "Removes a file",
    input: Schema.Struct({ path: Schema.String }),
    output: Schema.String,
    needsApproval: true,
    execute: ({ path }) => Effect.as(started("remove"), `removed ${path}`)
  })
  const explode = Tool.make({
    name: "explode",
    description: "Kills its own process while the fuse is there",
    input: Schema.Struct({}),
    output: Schema.String,
    idempotent: true,
    execute: () =>
      Effect.flatMap(started("explode"), () =>
        Effect.sync(() => {
          if (Fs.existsSync(Path.join(options.markers, "fuse"))) process.kill(process.pid, "SIGKILL")
          return "defused"
        }))
  })
  return DurableAgent.make("crash-test", {
    instructions: "Use the tools.",
    toolkit: Toolkit.make(add, charge, pay, remove, explode),
    ...(options.maxCrashes === undefined ? {} : { maxCrashes: options.maxCrashes })
  })
}
