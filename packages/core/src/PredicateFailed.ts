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
 * @since 0.1.0
 * @category errors
 */
export class PredicateFailed extends Schema.TaggedError<PredicateFailed>()("PredicateFailed", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}
