/**
 * A request to end the whole run.
 *
 * A tool fails with `Halt` to end the run rather than just its call, and an
 * agent hook fails with it to end the run after a turn. The model is not asked
 * again, and the agent loop ends with `Termination.Halted` carrying the reason.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * Ends the run; `reason` is what the `Halted` termination says.
 *
 * @example
 * ```ts
 * import { AgentLoop, Halt, Tool, Toolkit } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Schema } from "effect"
 *
 * // A tool that ends the whole run, not just its call.
 * const shutdown = Tool.make({
 *   name: "shutdown",
 *   description: "Stops the agent",
 *   input: Schema.Struct({}),
 *   output: Schema.Null,
 *   execute: () => Effect.fail(new Halt.Halt({ reason: "the operator pressed stop" }))
 * })
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   const termination = yield* agent.run({ input: "Go", toolkit: Toolkit.make(shutdown) }).pipe(Effect.flip)
 *   console.log(termination._tag) // Halted
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.callsTurn([{ name: "shutdown", arguments: {} }])])
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))))
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class Halt extends Schema.TaggedError<Halt>()("Halt", { reason: Schema.String }) {}
