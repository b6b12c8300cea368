/**
 * What a Claude model takes, read from its id: how it is asked to think, and
 * whether it has the API's own structured output. The request differs by
 * generation, and the API answers a request a model does not take with a 400.
 *
 * An id this layer does not recognise (a newer model, a proxy's alias) is
 * taken to be a current model: adaptive thinking and structured output.
 *
 * @since 0.1.0
 */

// A snapshot date after an id, as the Claude API (`-20250514`) and Vertex AI (`@20250514`) write it.
const snapshot = "(?:[-@]\\d{8})?$"

// Claude 2 and 3.x, and the Claude 4 ids up to the 4.5 generation (opus-4, opus-4-1, sonnet-4-5, haiku-4-5, …).
const budgetThinking = new RegExp(`^claude-(?:instant|2|3)|^claude-(?:opus|sonnet|haiku)-4(?:-[0-5])?${snapshot}`)

// Claude 2 and 3.x, and Claude Opus 4 and Sonnet 4 (opus-4, opus-4-0, sonnet-4-20250514).
const noStructuredOutput = new RegExp(`^claude-(?:instant|2|3)|^claude-(?:opus|sonnet)-4(?:-0)?${snapshot}`)

/**
 * How `model` is asked to think: `adaptive` (`thinking: { type: "adaptive" }`
 * with `output_config.effort`) for Claude 4.6 and later, which deprecate or
 * refuse a token budget; `budget` (`thinking: { type: "enabled", budget_tokens }`)
 * for the 4.5 generation and older, which refuse adaptive thinking.
 *
 * @example
 * ```ts
 * import { AnthropicModels } from "@agentloop/anthropic"
 *
 * console.log(AnthropicModels.thinking("claude-opus-4-6")) // adaptive
 * console.log(AnthropicModels.thinking("claude-sonnet-4-5")) // budget
 * console.log(AnthropicModels.structuredOutput("claude-3-5-haiku-latest")) // false
 * ```
 *
 * @since 0.1.0
 * @category capabilities
 */
export const thinking = (model: string): "adaptive" | "budget" => budgetThinking.test(model) ? "budget" : "adaptive"

/**
 * Whether `model` has the API's structured output (`output_config.format`):
 * every model from Claude Opus 4.1, Sonnet 4.5 and Haiku 4.5 on. For the others
 * a structured output goes through a tool (see `AnthropicRequest`).
 *
 * @since 0.1.0
 * @category capabilities
 */
export const structuredOutput = (model: string): boolean => !noStructuredOutput.test(model)
