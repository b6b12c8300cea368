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
 * @since 0.2.0
 */
export { fromEffectAiLanguageModel, toEffectAiLanguageModel } from "./EffectAiLanguageModel.ts"
export { type EffectAiTool, fromEffectAiToolkit, toEffectAiToolkit } from "./EffectAiToolkit.ts"
