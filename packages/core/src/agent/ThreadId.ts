/**
 * Thread ids, and where a thread's log lives in the `Checkpointer`: under a
 * reserved prefix no run id may start with, so no run's log is ever a
 * thread's (see `Thread`).
 *
 * @since 0.2.0
 */
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { threadPrefix } from "../internal/retention.ts"
import * as InvalidOptions from "../InvalidOptions.ts"
import * as RunId from "../RunId.ts"

/**
 * The prefix of a thread's log id in the `Checkpointer`: run ids starting
 * with it are refused, and `Checkpointer.prune` never takes a log under it.
 *
 * @since 0.2.0
 * @category constants
 */
export const prefix = threadPrefix

/**
 * The longest thread id: a run id's longest, less the {@link prefix}.
 *
 * @since 0.2.0
 * @category constants
 */
export const maxLength = RunId.maxLength - prefix.length

/**
 * A thread id: a run id (see `RunId`) of at most {@link maxLength}
 * characters.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ThreadId = RunId.RunId.check(
  Schema.isMaxLength(maxLength, { message: `a thread id must be at most ${maxLength} characters long` })
)

/**
 * The id of thread `thread`'s log in the `Checkpointer`.
 *
 * @example
 * ```ts
 * import { ThreadId } from "@agentloop/core"
 *
 * console.log(ThreadId.logId("user-42")) // @agentloop/thread/user-42
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const logId = (thread: string): string => `${prefix}${thread}`

/**
 * The id of the log that lists the threads in the `Checkpointer`: the
 * {@link prefix} alone, which no thread's log id is (a thread id is never
 * empty).
 *
 * @since 0.2.0
 * @category constants
 */
export const indexLogId: string = prefix

const isThreadId = Schema.is(ThreadId)

/**
 * A run's (or a step program's) `thread` option, as the options' check
 * takes it: a thread id, or `{ id, maxItems? }` with a positive integer.
 *
 * @example
 * ```ts
 * import { ThreadId } from "@agentloop/core"
 *
 * console.log(ThreadId.option.test("user-42"), ThreadId.option.test({ id: "user-42", maxItems: 0 })) // true false
 * ```
 *
 * @since 0.3.0
 * @category validation
 */
export const option: InvalidOptions.Rule = {
  expected: `a thread id (not empty, at most ${maxLength} characters, no control characters), or { id, maxItems? }`,
  test: (value) =>
    isThreadId(value) ||
    (Predicate.hasProperty(value, "id") && isThreadId(value.id) &&
      (!Predicate.hasProperty(value, "maxItems") || value.maxItems === undefined ||
        InvalidOptions.positiveInteger.test(value.maxItems)))
}

/**
 * A run id (or a step program's execution id) that is not a thread's log id:
 * one that does not start with the {@link prefix}.
 *
 * @since 0.3.0
 * @category validation
 */
export const notThreadLog: InvalidOptions.Rule = {
  expected: `a run id that does not start with "${prefix}" (reserved for threads)`,
  test: (value) => typeof value !== "string" || !value.startsWith(prefix)
}
