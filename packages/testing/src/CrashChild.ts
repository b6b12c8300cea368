/**
 * The child process of a crash test with real kills: the module an app gives
 * `CrashTest.everyCheckpointKilled` calls {@link run} with its program, and
 * the test starts it once per run and kill point. The kit tells the child,
 * in the `AGENTLOOP_CRASH_TEST` variable, where its model is and after which
 * append to die: the child then sends itself `SIGKILL` the moment that append
 * reached the store, with no finalizer run and nothing flushed, as a crash
 * would. It reports, one JSON line each, every append, every effect recorded
 * in the `CrashJournal`, and the program's result.
 *
 * The app's module may read a config of its own (a store's directory) with
 * `TestProcess.config`. It imports no more than it needs: children start
 * once per kill point.
 *
 * @since 0.2.0
 */
import { Checkpointer } from "@agentloop/core/Checkpointer"
import { LanguageModel } from "@agentloop/core/LanguageModel"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Fs from "node:fs"
import * as CrashJournal from "./CrashJournal.ts"
import * as CrashReport from "./CrashReport.ts"
import * as CrashCheckpointer from "./internal/crashCheckpointer.ts"
import * as LoopbackModel from "./LoopbackModel.ts"

/**
 * The environment variable that carries a child's {@link Settings}.
 *
 * @since 0.2.0
 * @category constants
 */
export const variable = "AGENTLOOP_CRASH_TEST"

/**
 * What the kit tells a child: the loopback server its model asks (`provider`,
 * as `runner`), where its runs are filed in the store (`scope`), and after
 * which append it dies (`null`: it runs to the end).
 *
 * @since 0.2.0
 * @category models
 */
export const Settings = Schema.Struct({
  provider: Schema.String,
  runner: Schema.String,
  scope: Schema.String,
  killAfter: Schema.NullOr(Schema.Int)
})

/**
 * @since 0.2.0
 * @category models
 */
export type Settings = typeof Settings.Type

/**
 * What a child reports, one JSON line each: an append that reached the
 * store, an effect recorded in the journal, and how the program ended (its
 * value as JSON).
 *
 * @since 0.2.0
 * @category models
 */
export const Message = Schema.Union([
  Schema.TaggedStruct("Appended", { entry: Schema.String }),
  Schema.TaggedStruct("Effect", { effect: CrashJournal.SideEffect }),
  Schema.TaggedStruct("Ended", {
    result: Schema.Union([
      Schema.TaggedStruct("Success", { value: Schema.Json }),
      Schema.TaggedStruct("Failure", { message: Schema.String })
    ])
  })
])

/**
 * @since 0.2.0
 * @category models
 */
export type Message = typeof Message.Type

/**
 * Reports `message` on standard output, written before it returns (the
 * process may kill itself next): every report is written the same way, so
 * they arrive in order.
 */
const report = (message: Message) =>
  Effect.sync(() => {
    const bytes = Buffer.from(`${JSON.stringify({ crashTest: Schema.encodeSync(Message)(message) })}\n`)
    let written = 0
    while (written < bytes.length) {
      try {
        written += Fs.writeSync(process.stdout.fd, bytes, written)
      } catch (error) {
        // A full pipe the test has not read yet: try again.
        if (!(error instanceof Error && "code" in error && error.code === "EAGAIN")) throw error
      }
    }
  })

/**
 * Runs `program` in this child, as the crash test that started it says: on
 * the `LanguageModel` that asks the test's loopback server, and on
 * `checkpointer` (a store that outlives the process: files or a database),
 * with `layer`'s services built on both (`Layer.empty` when it needs none).
 * Its value must be JSON (the test compares it with the uninterrupted
 * run's). The process exits when the program ends, or dies by `SIGKILL` at
 * its kill point.
 *
 * A run the killed process held is opened again once its lease lapses: give
 * the store a short lease (a second or less) to keep the test fast.
 *
 * @example
 * ```ts
 * // crash-child.ts, the module `CrashTest.everyCheckpointKilled` starts
 * import { AgentLoop, Checkpointer } from "@agentloop/core"
 * import { CrashChild, TestProcess } from "@agentloop/testing"
 * import { NodeFileSystem, NodePath } from "@effect/platform-node"
 * import { Effect, Layer, Schema } from "effect"
 *
 * // Only as a crash test's child: imported elsewhere, the module does nothing.
 * if (process.env[CrashChild.variable] !== undefined) {
 *   const { directory } = TestProcess.config(Schema.Struct({ directory: Schema.String }))
 *   CrashChild.run({
 *     program: Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run({ input: "Hello", runId: "greeting" })).pipe(
 *       Effect.map((result) => result._tag === "Stopped" ? result.output : result._tag)
 *     ),
 *     layer: AgentLoop.layer,
 *     checkpointer: Checkpointer.layerFileSystem(directory, { lease: "300 millis" }).pipe(
 *       Layer.provide(NodeFileSystem.layer),
 *       Layer.provide(NodePath.layer)
 *     )
 *   })
 * }
 * ```
 *
 * @since 0.2.0
 * @category running
 */
export const run = <A, E, ROut, LE, CE>(options: {
  readonly program: Effect.Effect<A, E, ROut | LanguageModel | Checkpointer>
  readonly layer: Layer.Layer<ROut, LE, LanguageModel | Checkpointer>
  readonly checkpointer: Layer.Layer<Checkpointer, CE>
}): void => {
  const given = process.env[variable]
  if (given === undefined) {
    throw new Error(
      `CrashChild.run: ${variable} is not set; this module runs as a child of CrashTest.everyCheckpointKilled`
    )
  }
  const settings = Schema.decodeUnknownSync(Schema.fromJsonString(Settings))(given)
  const killAfter = settings.killAfter
  const store = Layer.effect(Checkpointer)(Effect.map(Checkpointer, (inner) =>
    CrashCheckpointer.wrap(inner, {
      scope: settings.scope,
      onAppend: (entry) => report({ _tag: "Appended", entry }),
      kill: killAfter === null ? undefined : {
        after: killAfter,
        // A real kill, at once: no finalizer runs, no lease is released, nothing is flushed.
        kill: () => Effect.andThen(Effect.sync(() => process.kill(process.pid, "SIGKILL")), Effect.never)
      }
    }))).pipe(Layer.provide(options.checkpointer))
  const world = Layer.merge(LoopbackModel.layer(settings.provider, settings.runner), store)
  const services = Layer.provideMerge(options.layer, world)
  const main = options.program.pipe(
    Effect.provide(services),
    Effect.provideService(CrashJournal.Journal, (effect) => report({ _tag: "Effect", effect })),
    Effect.exit,
    Effect.flatMap((exit) => {
      const result = CrashReport.outcome(exit)
      if (result._tag === "Failure") return report({ _tag: "Ended", result })
      return Schema.decodeUnknownEffect(Schema.Json)(result.value).pipe(
        Effect.map((value) => ({ _tag: "Success" as const, value })),
        Effect.orElseSucceed(() => ({
          _tag: "Failure" as const,
          message: `the program's value is not JSON: ${JSON.stringify(String(result.value))}`
        })),
        Effect.flatMap((ended) => report({ _tag: "Ended", result: ended }))
      )
    })
  )
  Effect.runPromise(main).then(() => process.exit(0), (error) => {
    console.error(error)
    process.exit(1)
  })
}
