/**
 * Approval of tool calls: the gate between a model asking for a tool that
 * `needsApproval` and the tool running.
 *
 * `Approval` is a `Context.Reference`: with no layer it denies every such call
 * with a reason the model can read, so a destructive tool never runs by
 * accident. Applications plug in a queue, an HTTP endpoint or a terminal
 * prompt with {@link layer}.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Item from "./Item.ts"

/**
 * A tool call waiting for a decision. `input` is the decoded input, ready to show to a person.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly tool: string
  readonly call: Item.FunctionCall
  readonly input: unknown
}

/**
 * Run the call.
 *
 * @since 0.1.0
 * @category models
 */
export interface Approved {
  readonly _tag: "Approved"
}

/**
 * Do not run the call; `reason` is sent to the model as the call's output.
 *
 * @since 0.1.0
 * @category models
 */
export interface Denied {
  readonly _tag: "Denied"
  readonly reason: string
}

/**
 * The answer to a {@link Request}.
 *
 * @since 0.1.0
 * @category models
 */
export type Decision = Approved | Denied

/**
 * Approves the call.
 *
 * @since 0.1.0
 * @category constructors
 */
export const approved: Decision = { _tag: "Approved" }

/**
 * Denies the call, telling the model why.
 *
 * @since 0.1.0
 * @category constructors
 */
export const denied = (reason: string): Decision => ({ _tag: "Denied", reason })

/**
 * The approval service: decides each call of a tool that needs approval.
 *
 * @since 0.1.0
 * @category models
 */
export interface Service {
  readonly decide: (request: Request) => Effect.Effect<Decision>
}

const denyUnconfigured: Service = {
  decide: (request) =>
    Effect.succeed(
      denied(
        `Tool "${request.tool}" requires approval and no approver is configured, so the call was not run.`
      )
    )
}

/**
 * The approval service. Its default denies every call that needs approval;
 * provide {@link layer} or {@link allowAll} to change that.
 *
 * @since 0.1.0
 * @category services
 */
export const Approval: Context.Reference<Service> = Context.Reference<Service>("@agentloop/core/Approval", {
  defaultValue: () => denyUnconfigured
})

/**
 * An approver from a function. The function may wait as long as it likes (a
 * person answering a prompt): tool timeouts do not count the wait.
 *
 * @example
 * ```ts
 * import { Approval, Item, Tool, Toolkit } from "@agentloop/core"
 * import { Effect, Schema } from "effect"
 *
 * const deleteFile = Tool.make({
 *   name: "delete_file",
 *   description: "Deletes a file",
 *   input: Schema.Struct({ path: Schema.String }),
 *   output: Schema.Boolean,
 *   needsApproval: true,
 *   execute: () => Effect.succeed(true)
 * })
 *
 * // Approve deletions under /tmp only; the model reads the reason of a denial.
 * const approver = Approval.layer((request) =>
 *   Effect.succeed(
 *     JSON.stringify(request.input).includes("/tmp/") ? Approval.approved : Approval.denied("Only /tmp may be cleaned.")
 *   )
 * )
 *
 * const call = (id: string, path: string): Item.FunctionCall => ({
 *   type: "function_call",
 *   id: `fc_${id}`,
 *   status: "completed",
 *   call_id: id,
 *   name: "delete_file",
 *   arguments: JSON.stringify({ path })
 * })
 *
 * const program = Effect.gen(function*() {
 *   const results = yield* Toolkit.executeAllSafe(Toolkit.make(deleteFile), [call("1", "/tmp/a"), call("2", "/etc/hosts")])
 *   console.log(results.map((result) => result.outcome)) // [ 'success', 'denied' ]
 * })
 *
 * Effect.runPromise(program.pipe(Effect.provide(approver)))
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <R = never>(
  decide: (request: Request) => Effect.Effect<Decision, never, R>
): Layer.Layer<never, never, R> =>
  Layer.effect(
    Approval,
    Effect.map(Effect.context<R>(), (context): Service => ({
      decide: (request) => Effect.provide(decide(request), context)
    }))
  )

/**
 * Approves every call: for tests and trusted environments.
 *
 * @since 0.1.0
 * @category layers
 */
export const allowAll: Layer.Layer<never> = Layer.succeed(Approval, { decide: () => Effect.succeed(approved) })

/**
 * Denies every call with the given reason.
 *
 * @since 0.1.0
 * @category layers
 */
export const denyAll = (reason: string): Layer.Layer<never> =>
  Layer.succeed(Approval, { decide: () => Effect.succeed(denied(reason)) })
