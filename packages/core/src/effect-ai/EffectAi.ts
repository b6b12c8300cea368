/**
 * The bridge to `effect/ai`: its toolkits and language models as agentloop's,
 * and agentloop's as its, so an Effect application can mix both.
 *
 * | agentloop | `effect/ai` | from `effect/ai` | to `effect/ai` |
 * |---|---|---|---|
 * | `Toolkit.Toolkit` | `Toolkit.WithHandler` | {@link fromEffectAiToolkit} | {@link toEffectAiToolkit} |
 * | `LanguageModel` (service) | `LanguageModel.LanguageModel` (service) | {@link fromEffectAiLanguageModel} | {@link toEffectAiLanguageModel} |
 *
 * The small modules behind it (`EffectAiPrompt`, `EffectAiResponse`,
 * `EffectAiError`) convert histories, answers and errors one by one.
 *
 * @example
 * ```ts
 * import { EffectAi, Tool, Toolkit } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Schema } from "effect"
 * import { LanguageModel } from "effect/ai"
 *
 * const add = Tool.make({
 *   name: "add",
 *   description: "Adds two numbers",
 *   input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
 *   output: Schema.Finite,
 *   execute: ({ a, b }) => Effect.succeed(a + b)
 * })
 *
 * // agentloop's model and toolkit, used through effect/ai's API.
 * const program = Effect.gen(function*() {
 *   const toolkit = yield* EffectAi.toEffectAiToolkit(Toolkit.make(add))
 *   const response = yield* LanguageModel.generateText({ prompt: "2 + 3?", toolkit })
 *   console.log(response.toolResults.map((result) => result.result)) // [ 5 ]
 * })
 *
 * const model = EffectAi.toEffectAiLanguageModel.pipe(
 *   Layer.provide(MockLanguageModel.layer([MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 2, b: 3 } }])]))
 * )
 * Effect.runPromise(program.pipe(Effect.provide(model)))
 * ```
 *
 * @since 0.2.0
 */
export { fromEffectAiLanguageModel, toEffectAiLanguageModel } from "./EffectAiLanguageModel.ts"
export { type EffectAiTool, fromEffectAiToolkit, toEffectAiToolkit } from "./EffectAiToolkit.ts"
