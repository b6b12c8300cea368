/**
 * The id of a durable run, checked in one place before anything is stored:
 * non-empty, at most {@link maxLength} characters, and no control characters
 * (PostgreSQL's text refuses a NUL byte, and a log line or a terminal should
 * never be steered by an id).
 *
 * @since 0.2.0
 */
import { Effect, Schema } from "effect"

/**
 * The longest run id, in UTF-16 code units.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxLength = 256

// Unicode control characters (Cc): C0 (NUL included), DEL and C1.
const controlCharacter = /\p{Cc}/u

/**
 * A run id as the engine stores it.
 *
 * @since 0.2.0
 * @category schemas
 */
export const RunId = Schema.String.check(
  Schema.isNonEmpty({ message: "a run id is not empty" }),
  Schema.isMaxLength(maxLength, { message: `a run id has at most ${maxLength} characters` }),
  Schema.makeFilter((id: string) => !controlCharacter.test(id), {
    message: "a run id has no control characters"
  })
)

/**
 * A run id that is empty, too long or holds a control character: refused
 * before anything is stored or asked.
 *
 * @since 0.2.0
 * @category errors
 */
export class InvalidRunId extends Schema.TaggedError<InvalidRunId>()("InvalidRunId", {
  /** The id as given, with its control characters escaped, cut to {@link maxLength} characters. */
  runId: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid run id ${this.runId}: ${this.reason}`
  }
}

const shown = (runId: unknown): string => JSON.stringify(String(runId).slice(0, maxLength))

/**
 * Checks `runId`: succeeds with it, or fails with {@link InvalidRunId}.
 *
 * @since 0.2.0
 * @category validation
 */
export const validate = (runId: unknown): Effect.Effect<string, InvalidRunId> =>
  Schema.decodeUnknownEffect(RunId)(runId).pipe(
    Effect.mapError((error) => new InvalidRunId({ runId: shown(runId), reason: reasonOf(error) }))
  )

const reasonOf = (error: Schema.SchemaError): string => {
  const message = error.message
  // The first line names the check that failed; the rest repeats the value.
  return message.split("\n")[0] ?? message
}
