/**
 * The entry a read of a run's log starts from (see `Store.readFrom`): an
 * integer of at least 0, checked by every store before it reads.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as InvalidOptions from "../InvalidOptions.ts"

/** Fails with `InvalidOptions` unless `from` is an integer of at least 0. */
export const check = (from: number): Effect.Effect<void, InvalidOptions.InvalidOptions> =>
  InvalidOptions.nonNegativeInteger.test(from)
    ? Effect.void
    : Effect.fail(
      InvalidOptions.make({ field: "from", value: from, expected: InvalidOptions.nonNegativeInteger.expected })
    )
