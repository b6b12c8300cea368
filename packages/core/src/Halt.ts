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
 * @since 0.1.0
 * @category errors
 */
export class Halt extends Schema.TaggedError<Halt>()("Halt", { reason: Schema.String }) {}
