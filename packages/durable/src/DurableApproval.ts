/**
 * Approvals of a durable run: a call of a tool that `needsApproval` waits on a
 * `DurableDeferred`, so the run can be stopped, moved to another runner and
 * resumed while it waits, and the decision can come hours later from another
 * process that reaches the same database.
 *
 * @since 0.1.0
 */
import type * as Approval from "@agentloop/core/Approval"
import { Effect, Exit, Schema } from "effect"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import type { WorkflowEngine } from "effect/workflow/WorkflowEngine"

/** A decision as the run records it: `Approval.Decision` as a Schema. */
export const Decision = Schema.Union([
  Schema.TaggedStruct("Approved", {}),
  Schema.TaggedStruct("Denied", { reason: Schema.String })
])
export type Decision = typeof Decision.Type

/** The wait point of call number `index` of turn `step`. */
export const deferred = (step: number, index: number) =>
  DurableDeferred.make(`approval/${step}/${index}`, { success: Decision })

/** A token that does not name an approval of this agent's runs: mistyped, cut, or another agent's. */
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", {
  token: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `not an approval token of this agent: ${this.reason}`
  }
}

/**
 * Records `decision` for the call that `token` names (from its
 * `ApprovalRequested` event) in a run of the workflow `workflow`. The run
 * resumes on its runner; recording a second decision for the same call changes
 * nothing.
 */
export const approve = (
  workflow: string,
  token: string,
  decision: Approval.Decision
): Effect.Effect<void, InvalidToken, WorkflowEngine> =>
  Effect.gen(function*() {
    const parsed = yield* Schema.decodeUnknownEffect(DurableDeferred.TokenParsed.FromString)(token).pipe(
      Effect.mapError(() => new InvalidToken({ token, reason: "it does not decode" }))
    )
    if (parsed.workflowName !== workflow || !parsed.deferredName.startsWith("approval/")) {
      return yield* new InvalidToken({ token, reason: `it names ${parsed.deferredName} of ${parsed.workflowName}` })
    }
    // The token names the wait point; the deferred given here only lends its schemas.
    yield* DurableDeferred.done(deferred(0, 0), { token: parsed.asToken, exit: Exit.succeed(decision) })
  })

/** The approval service that answers a call's tool with the decision the run recorded for it. */
export const recorded = (decision: Decision): Approval.Service => ({ decide: () => Effect.succeed(decision) })
