/**
 * How a tool call ended, as a `Schema`: what a `Toolkit.Result`, a
 * `ToolRecord` and a run's `ToolResult` event carry.
 *
 * @since 0.2.0
 */
// Subpath imports: this module is part of what a browser decodes (see `stream/EventStreamClient`).
import * as Schema from "effect/Schema"

/**
 * How a call ended. Every outcome but `"success"` is a mistake of the model or of a tool,
 * and `"halted"` (the tool failed with `Halt`) asks the agent to end its run.
 *
 * @example
 * ```ts
 * import { ToolOutcome } from "@agentloop/core"
 * import { Schema } from "effect"
 *
 * console.log(Schema.is(ToolOutcome.Outcome)("timeout")) // true
 * console.log(ToolOutcome.Outcome.literals.length) // 8
 * ```
 *
 * @since 0.2.0
 * @category models
 */
export const Outcome = Schema.Literals([
  "success",
  "unknown_tool",
  "invalid_arguments",
  "failure",
  "defect",
  "timeout",
  "denied",
  "halted"
])
export type Outcome = typeof Outcome.Type
