/**
 * The bridge to `effect/ai`: its toolkits and language models as agentloop's,
 * and agentloop's as its, with the conversions of histories, answers and
 * errors they are built from.
 *
 * @since 0.2.0
 */
export * as EffectAi from "./EffectAi.ts"
export * as EffectAiContent from "./EffectAiContent.ts"
export * as EffectAiError from "./EffectAiError.ts"
export * as EffectAiLanguageModel from "./EffectAiLanguageModel.ts"
export * as EffectAiPrompt from "./EffectAiPrompt.ts"
export * as EffectAiResponse from "./EffectAiResponse.ts"
export * as EffectAiToolkit from "./EffectAiToolkit.ts"
