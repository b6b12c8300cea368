/**
 * Approvals of a durable run: a call of a tool that `needsApproval` waits on a
 * `DurableDeferred`, so the run can be stopped, moved to another runner and
 * resumed while it waits, and the decision can come hours later from another
 * process that reaches the same database.
 *
 * A wait point is issued by the run when it reaches the call: the run stores a
 * random secret for it (32 bytes from the platform's CSPRNG) and logs a token
 * that carries it. A decision is accepted only with that token, only for a
 * wait point the run issued, and only once. The secret is random rather than
 * derived from a server key: nothing has to be configured, shared or rotated
 * between runners and the processes that approve, a leaked key cannot open
 * every run, and the store already has to hold each wait point (to refuse one
 * that was never issued, and to record its decision once).
 *
 * @since 0.1.0
 */
import type * as Approval from "@agentloop/core/Approval"
import * as RunId from "@agentloop/core/RunId"
import * as Effect from "effect/Effect"
import * as Base64Url from "effect/encoding/Base64Url"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import * as DurableDeferred from "effect/workflow/DurableDeferred"
import type * as Workflow from "effect/workflow/Workflow"
import type { WorkflowEngine } from "effect/workflow/WorkflowEngine"
import { timingSafeEqual } from "node:crypto"
import type { RunKey, RunStoreError } from "./RunStore.ts"
import { RunStore } from "./RunStore.ts"

/**
 * A decision as the run records it: `Approval.Decision` as a Schema.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Decision = Schema.Union([
  Schema.TaggedStruct("Approved", {}),
  Schema.TaggedStruct("Denied", { reason: Schema.String })
])
export type Decision = typeof Decision.Type

const DecisionJson = Schema.fromJsonString(Decision)

/**
 * The name of the wait point of call number `index` of turn `step`.
 *
 * @since 0.2.0
 * @category wait points
 */
export const waitName = (step: number, index: number): string => `approval/${step}/${index}`

/**
 * The turn and position of the call a wait point's name (see
 * {@link waitName}) is for; `undefined` for any other name.
 *
 * @since 0.3.0
 * @category wait points
 */
export const parseWait = (wait: string): { readonly step: number; readonly index: number } | undefined => {
  const match = /^approval\/(\d{1,9})\/(\d{1,6})$/.exec(wait)
  return match === null ? undefined : { step: Number(match[1]), index: Number(match[2]) }
}

/**
 * The wait point of call number `index` of turn `step`.
 *
 * @since 0.1.0
 * @category wait points
 */
export const deferred = (step: number, index: number) =>
  DurableDeferred.make(waitName(step, index), { success: Decision })

/**
 * What a token says: the agent, the run, the wait point and the secret the
 * run issued for it.
 *
 * @since 0.2.0
 * @category schemas
 */
export const Token = Schema.Struct({
  agent: Schema.String,
  runId: Schema.String,
  wait: Schema.String,
  secret: Schema.String
})
export type Token = typeof Token.Type

/**
 * A token as it travels: the base64url of a JSON array.
 *
 * @example
 * ```ts
 * import { DurableApproval } from "@agentloop/durable"
 * import { Schema } from "effect"
 *
 * // The token a UI gets with an approval request: which run, which wait point, and its secret, in one string.
 * const token = Schema.encodeSync(DurableApproval.TokenFromString)({
 *   agent: "cleaner",
 *   runId: "cleanup-42",
 *   wait: DurableApproval.waitName(1, 0),
 *   secret: "s3cret"
 * })
 * console.log(Schema.decodeSync(DurableApproval.TokenFromString)(token).wait) // approval/1/0
 * ```
 *
 * @since 0.2.0
 * @category schemas
 */
export const TokenFromString = Schema.String.pipe(
  Schema.decodeTo(Schema.fromJsonString(Schema.Tuple([Schema.String, Schema.String, Schema.String, Schema.String])), {
    decode: SchemaGetter.decodeBase64UrlString(),
    encode: SchemaGetter.encodeBase64Url()
  }),
  Schema.decodeTo(Token, {
    decode: SchemaGetter.transform(([agent, runId, wait, secret]) => ({ agent, runId, wait, secret })),
    encode: SchemaGetter.transform(({ agent, runId, secret, wait }) => [agent, runId, wait, secret] as const)
  })
)

const encodeToken = Schema.encodeSync(TokenFromString)

/**
 * A token that names no approval of this agent's runs: mistyped, cut, another
 * agent's, or one whose secret is not the one the run issued (forged).
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", {
  /**
   * The token as an error may show it, without its secret: the approval it
   * names when it decodes, else only its length (a real token with a
   * character pasted after it would carry its secret into a log).
   */
  token: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `not an approval token of this agent: ${this.reason}`
  }
}

/**
 * The run never issued this wait point: it has not reached the call yet (a
 * token made up in advance), or the call does not exist.
 *
 * @since 0.2.0
 * @category errors
 */
export class ApprovalNotIssued extends Schema.TaggedError<ApprovalNotIssued>()("ApprovalNotIssued", {
  runId: Schema.String,
  wait: Schema.String
}) {
  override get message() {
    return `run ${JSON.stringify(this.runId)} has issued no approval ${this.wait}`
  }
}

/**
 * The call was decided already: a decision is recorded once, and the token
 * cannot be used again.
 *
 * @since 0.2.0
 * @category errors
 */
export class ApprovalAlreadyDecided extends Schema.TaggedError<ApprovalAlreadyDecided>()("ApprovalAlreadyDecided", {
  runId: Schema.String,
  wait: Schema.String,
  /** The decision that was recorded. */
  decision: Decision
}) {
  override get message() {
    return `approval ${this.wait} of run ${JSON.stringify(this.runId)} was decided already (${this.decision._tag})`
  }
}

/**
 * Why `approve` refused a decision.
 *
 * @since 0.2.0
 * @category errors
 */
export type ApproveError = InvalidToken | ApprovalNotIssued | ApprovalAlreadyDecided | RunStoreError

/**
 * A wait point the run issued: its token, and the decision recorded for it,
 * if any.
 *
 * @since 0.2.0
 * @category models
 */
export interface Issued {
  readonly token: string
  readonly decision: Decision | undefined
}

/**
 * A new secret for a wait point: 32 bytes from the platform's CSPRNG, in base64url.
 *
 * @since 0.3.0
 * @category wait points
 */
export const newSecret: Effect.Effect<string> = Effect.sync(() =>
  Base64Url.encode(globalThis.crypto.getRandomValues(new Uint8Array(32)))
)

const decodeRecorded = (json: string | null): Effect.Effect<Decision | undefined> =>
  json === null ? Effect.undefined : Effect.orDie(Schema.decodeEffect(DecisionJson)(json))

/**
 * Issues the wait points `waits` of `run`: stores a new secret for each, or
 * reads the one an earlier execution of the run stored (a replaying run logs
 * the same tokens), with the decision recorded since.
 *
 * @since 0.2.0
 * @category wait points
 */
export const issue = (
  run: RunKey,
  waits: ReadonlyArray<string>
): Effect.Effect<ReadonlyMap<string, Issued>, RunStoreError, RunStore> =>
  Effect.gen(function*() {
    if (waits.length === 0) return new Map()
    const store = yield* RunStore
    const offered = yield* Effect.forEach(waits, (wait) => Effect.map(newSecret, (secret) => ({ wait, secret })))
    const stored = yield* store.issue(run, offered)
    const issued = new Map<string, Issued>()
    for (const row of stored) {
      issued.set(row.wait, {
        token: encodeToken({ agent: run.agent, runId: run.runId, wait: row.wait, secret: row.secret }),
        decision: yield* decodeRecorded(row.decision)
      })
    }
    return issued
  })

const sameSecret = (given: string, issued: string): boolean => {
  const a = Buffer.from(given)
  const b = Buffer.from(issued)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * Records `decision` for the call that `token` names (from its
 * `ApprovalRequested` event) in a run of `workflow`, then wakes the run, which
 * resumes on its runner. Refused, with nothing recorded, when the token does
 * not decode or is another agent's ({@link InvalidToken}), when its secret is
 * not the one the run issued ({@link InvalidToken}), when the run never issued
 * the wait point ({@link ApprovalNotIssued}), and when the call was decided
 * already ({@link ApprovalAlreadyDecided}).
 *
 * @example
 * ```ts
 * import { Approval, Tool, Toolkit } from "@agentloop/core"
 * import { DurableAgent, DurableRunner } from "@agentloop/durable"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Schema, Stream } from "effect"
 * import { mkdtempSync } from "node:fs"
 * import { tmpdir } from "node:os"
 * import { join } from "node:path"
 *
 * // A tool that deletes: every call waits, durably, for a person's decision.
 * const remove = Tool.make({
 *   name: "remove",
 *   description: "Removes a file",
 *   input: Schema.Struct({ path: Schema.String }),
 *   output: Schema.String,
 *   needsApproval: true,
 *   execute: ({ path }) => Effect.succeed(`removed ${path}`)
 * })
 * const cleaner = DurableAgent.make("cleaner", { instructions: "Clean up.", toolkit: Toolkit.make(remove) })
 *
 * const program = Effect.gen(function*() {
 *   yield* cleaner.start({ runId: "cleanup-42", input: "Remove /tmp/old.log" })
 *   // A UI follows the run's log and shows the request; any process that reaches the database may decide.
 *   const request = yield* cleaner.events("cleanup-42", { fromStep: 1 }).pipe(
 *     Stream.filter((event) => event._tag === "ApprovalRequested"),
 *     Stream.runHead
 *   )
 *   if (request._tag === "Some" && request.value._tag === "ApprovalRequested") {
 *     yield* cleaner.approve(request.value.token, Approval.approved)
 *   }
 *   const result = yield* cleaner.run({ runId: "cleanup-42", input: "Remove /tmp/old.log" })
 *   if (result._tag === "Stopped") console.log(result.output) // Removed /tmp/old.log.
 * })
 *
 * const model = MockLanguageModel.layer([
 *   MockLanguageModel.callsTurn([{ name: "remove", arguments: { path: "/tmp/old.log" } }]),
 *   MockLanguageModel.textTurn("Removed /tmp/old.log.")
 * ])
 * const runner = cleaner.layer.pipe(
 *   Layer.provideMerge(DurableRunner.layerSqlite({ filename: join(mkdtempSync(join(tmpdir(), "runs-")), "runs.db") })),
 *   Layer.provide(model)
 * )
 * Effect.runPromise(program.pipe(Effect.provide(runner)))
 * ```
 *
 * @since 0.1.0
 * @category approving
 */
export const approve = (
  workflow: Workflow.Any,
  token: string,
  decision: Approval.Decision
): Effect.Effect<void, ApproveError, WorkflowEngine | RunStore> =>
  Effect.gen(function*() {
    const parsed = yield* Schema.decodeUnknownEffect(TokenFromString)(token).pipe(
      Effect.mapError(() =>
        new InvalidToken({ token: `${token.length} characters that do not decode`, reason: "it does not decode" })
      )
    )
    const invalid = (reason: string) =>
      new InvalidToken({
        token: `${parsed.wait.slice(0, 80)} of run ${JSON.stringify(parsed.runId.slice(0, 80))} of agent ${
          JSON.stringify(parsed.agent.slice(0, 80))
        }`,
        reason
      })
    if (parsed.agent !== workflow._tag) {
      return yield* invalid(`it names ${parsed.wait} of agent ${JSON.stringify(parsed.agent)}`)
    }
    const runId = yield* RunId.validate(parsed.runId).pipe(Effect.mapError((error) => invalid(error.message)))
    const run: RunKey = { agent: parsed.agent, runId }
    const store = yield* RunStore
    const recorded = yield* store.readApproval(run, parsed.wait)
    if (recorded === undefined) return yield* new ApprovalNotIssued({ runId, wait: parsed.wait })
    if (!sameSecret(parsed.secret, recorded.secret)) {
      return yield* invalid(`its secret is not the one run ${JSON.stringify(runId)} issued for ${parsed.wait}`)
    }
    const wait = DurableDeferred.make(parsed.wait, { success: Decision })
    const wake = (value: Decision) =>
      Effect.flatMap(
        workflow.executionId({ runId, input: "" }),
        (executionId) =>
          DurableDeferred.done(wait, {
            token: DurableDeferred.tokenFromExecutionId(wait, { workflow, executionId }),
            exit: Exit.succeed(value)
          })
      )
    const earlier = yield* decodeRecorded(recorded.decision)
    const won = earlier === undefined &&
      (yield* store.decide(run, parsed.wait, Schema.encodeSync(DecisionJson)(decision)))
    if (!won) {
      const first = earlier ??
        (yield* Effect.flatMap(store.readApproval(run, parsed.wait), (row) => decodeRecorded(row?.decision ?? null)))
      // A process that died between recording and waking left the run asleep: wake it with the first decision.
      if (first !== undefined) yield* wake(first)
      return yield* new ApprovalAlreadyDecided({ runId, wait: parsed.wait, decision: first ?? decision })
    }
    yield* wake(decision)
  })

/**
 * The approval service that answers a call's tool with the decision the run
 * recorded for it.
 *
 * @since 0.1.0
 * @category approving
 */
export const recorded = (decision: Decision): Approval.Service => ({ decide: () => Effect.succeed(decision) })
