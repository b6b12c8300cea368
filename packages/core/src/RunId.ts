/**
 * The id of a recorded run: what an `AgentLoop` run's `runId` and a step
 * program's `id` must be for a `Checkpointer` to keep it.
 *
 * One schema checks every id, wherever it comes from, before anything runs:
 * not empty, at most {@link maxLength} characters, no control characters, and
 * well-formed Unicode (every store keeps it as UTF-8). Any id that passes works
 * on every store: a file store names its files after a digest of the id and
 * keeps the id itself inside them, so a long id (or one in any script) never
 * meets a file-name limit.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/**
 * The longest id, in UTF-16 code units.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxLength = 512

/** Whether `id` has a C0 or C1 control character, or DEL. */
const hasControl = (id: string): boolean => {
  for (let i = 0; i < id.length; i++) {
    const code = id.charCodeAt(i)
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true
  }
  return false
}
// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * The schema of a run id.
 *
 * @since 0.2.0
 * @category schemas
 */
export const RunId = Schema.String.check(
  Schema.isMinLength(1, { message: "a run id must not be empty" }),
  Schema.isMaxLength(maxLength, { message: `a run id must be at most ${maxLength} characters long` }),
  Schema.makeFilter((id: string) => !hasControl(id), { message: "a run id must not contain control characters" }),
  Schema.makeFilter((id: string) => !loneSurrogate.test(id), { message: "a run id must be well-formed Unicode" })
)

/**
 * A run id that {@link RunId} refuses: `reason` says which rule it breaks.
 *
 * @since 0.2.0
 * @category errors
 */
export class InvalidRunId extends Schema.TaggedError<InvalidRunId>()("InvalidRunId", {
  /** The id, cut to 80 characters and with its control characters escaped. */
  id: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid run id "${this.id}": ${this.reason}`
  }
}

const shown = (id: string): string => JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id).slice(1, -1)

const decode = Schema.decodeUnknownEffect(RunId)

/**
 * Checks `id`: succeeds with it, or fails with {@link InvalidRunId}.
 *
 * @example
 * ```ts
 * import { RunId } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * const error = Effect.runSync(Effect.flip(RunId.validate("")))
 * console.log(error.reason) // a run id must not be empty
 * ```
 *
 * @since 0.2.0
 * @category validation
 */
export const validate = (id: string): Effect.Effect<string, InvalidRunId> =>
  decode(id).pipe(
    Effect.mapError((error) =>
      new InvalidRunId({
        id: typeof id === "string" ? shown(id) : String(id),
        reason: error.message
      })
    )
  )
