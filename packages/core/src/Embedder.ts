/**
 * The embedding service: text in, vector out.
 *
 * `Until.converged` with a threshold below 1 asks it for the vectors it compares,
 * unless the predicate was given its own `embed` function.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { AiError } from "./AiError.ts"

/**
 * Embeds text as a vector. Vectors from one embedder all have the same length,
 * and only vectors from the same embedder are comparable.
 *
 * @since 0.1.0
 * @category services
 */
export class Embedder extends Context.Service<Embedder, {
  embed(text: string): Effect.Effect<ReadonlyArray<number>, AiError>
}>()("@agentloop/core/Embedder") {}

/**
 * The cosine of the angle between two vectors of the same length: 1 for the
 * same direction, 0 for orthogonal ones, and 0 when either vector is all zeros.
 *
 * @example
 * ```ts
 * import { Embedder } from "@agentloop/core"
 *
 * console.log(Embedder.cosineSimilarity([1, 0], [1, 0])) // 1
 * console.log(Embedder.cosineSimilarity([1, 0], [0, 1])) // 0
 * ```
 *
 * @since 0.1.0
 * @category math
 */
export const cosineSimilarity = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): number => {
  let dot = 0
  let normA = 0
  let normB = 0
  for (let i = 0; i < a.length; i++) {
    const x = a[i] ?? 0
    const y = b[i] ?? 0
    dot += x * y
    normA += x * x
    normB += y * y
  }
  return normA === 0 || normB === 0 ? 0 : dot / Math.sqrt(normA * normB)
}
