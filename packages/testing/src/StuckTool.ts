/**
 * A tool that never returns, for tests that stop a run in the middle of a
 * call (a cancel, a deadline, a client that goes away): it says when its call
 * started, so the test stops the run then, and when the call was interrupted,
 * so the test can prove the call really stopped.
 *
 * @since 0.3.0
 */
import { Tool } from "@agentloop/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * A stuck tool and its two signals.
 *
 * @since 0.3.0
 * @category models
 */
export interface StuckTool<Name extends string> {
  /** The tool: no input, a string output it never gives. */
  readonly tool: Tool.Tool<Name, {}, string>
  /** Completed when a call of the tool starts. */
  readonly started: Deferred.Deferred<void>
  /** Completed when a call of the tool is interrupted. */
  readonly stopped: Deferred.Deferred<void>
}

/**
 * A tool named `name` whose calls wait until they are interrupted.
 *
 * @example
 * ```ts
 * import { AgentLoop, Toolkit } from "@agentloop/core"
 * import { MockLanguageModel, StuckTool } from "@agentloop/testing"
 * import { Deferred, Effect, Fiber } from "effect"
 *
 * const stuck = StuckTool.make("wait")
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   const run = yield* Effect.forkChild(agent.run({ input: "Wait", toolkit: Toolkit.make(stuck.tool) }))
 *   yield* Deferred.await(stuck.started)
 *   yield* Fiber.interrupt(run)
 *   yield* Deferred.await(stuck.stopped)
 *   console.log("the call stopped") // the call stopped
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.callsTurn([{ name: "wait", arguments: {} }])])
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer), Effect.provide(model)))
 * ```
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = <const Name extends string>(name: Name): StuckTool<Name> => {
  const started = Deferred.makeUnsafe<void>()
  const stopped = Deferred.makeUnsafe<void>()
  const tool = Tool.make({
    name,
    description: "Runs until it is interrupted",
    input: Schema.Struct({}),
    output: Schema.String,
    execute: () =>
      Deferred.succeed(started, undefined).pipe(
        Effect.andThen(Effect.never),
        Effect.onInterrupt(() => Deferred.succeed(stopped, undefined))
      )
  })
  return { tool, started, stopped }
}
