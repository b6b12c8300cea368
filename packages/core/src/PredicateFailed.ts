/**
 * The error of a predicate that could not answer.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A predicate could not answer. `message` says how (threw, rejected, failed,
 * died, returned something else); `cause` is what it threw or failed with.
 *
 * @example
 * ```ts
 * import { Snapshot, Until } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // A stop predicate that throws does not crash the run: it fails with PredicateFailed, a termination's cause.
 * const broken = Until.custom(() => {
 *   throw new Error("the judge is down")
 * })
 * Effect.runPromise(Effect.flip(Until.evaluate(broken, Snapshot.make({ runId: "run-1" })))).then((error) =>
 *   console.log(error._tag) // PredicateFailed
 * )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class PredicateFailed extends Schema.TaggedError<PredicateFailed>()("PredicateFailed", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}
