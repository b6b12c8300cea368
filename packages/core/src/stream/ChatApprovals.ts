/**
 * Tool approvals over a chat's requests: a call of a tool that `needsApproval`
 * ends the response with a `data-agentloop-approval` part instead of waiting
 * on the server; the person's decision comes back with the next request (a
 * `data-agentloop-decision` part, or a tool part `useChat` marked
 * `approval-responded`), and the run goes on from there: the decided call
 * runs (or is denied, with the reason the model reads), then the model.
 *
 * Nothing waits on the server between the two requests: the chat's messages
 * are the state, as they are for the rest of the conversation.
 *
 * @since 0.2.0
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../agent/AgentEvent.ts"
import * as Approval from "../Approval.ts"
import type * as Item from "../Item.ts"
import * as Toolkit from "../Toolkit.ts"
import type * as UIMessage from "./UIMessage.ts"
import type { ApprovalRequested } from "./UIMessageStream.ts"

/**
 * What the response streams: the run's events, the pending calls' results, and approval requests.
 *
 * @since 0.2.0
 * @category models
 */
export type Event = AgentEvent.AgentEvent | ApprovalRequested

/**
 * Answers `conversation`: first the calls it left pending (each with the
 * person's decision; one still undecided ends the response with its approval
 * request again), then `run` on the history with their outputs. A call the run
 * makes that needs approval ends the response with its request: the run is
 * interrupted while it waits, and its other calls with it.
 *
 * `run` gets the history to continue; the approvals it needs are provided to it.
 *
 * @example
 * ```ts
 * import { AgentLoop, ChatApprovals, UIMessage, UIMessageStream } from "@agentloop/core"
 * import type { Toolkit } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * const answer = (messages: ReadonlyArray<UIMessage.UIMessage>, toolkit: Toolkit.Toolkit<never>) =>
 *   Effect.map(AgentLoop.AgentLoop, (agent) =>
 *     UIMessageStream.fromEvents(ChatApprovals.stream(UIMessage.toConversation(messages), toolkit, (input) =>
 *       agent.stream({ input, toolkit }))))
 * void answer
 * ```
 *
 * @since 0.2.0
 * @category approvals
 */
export const stream = <R, E, R2>(
  conversation: UIMessage.Conversation,
  toolkit: Toolkit.Toolkit<R>,
  run: (history: ReadonlyArray<Item.Item>) => Stream.Stream<AgentEvent.AgentEvent, E, R2>
): Stream.Stream<Event, E, R | R2> =>
  Stream.unwrap(Effect.gen(function*() {
    const step = conversation.history.filter((item) => item.type === "function_call").length + 1
    const undecided = conversation.pending.filter(({ call, decision }) =>
      decision === undefined && Toolkit.needsApproval(toolkit, call)
    )
    if (undecided.length > 0) {
      return Stream.fromIterable(undecided.map(({ call }): Event => request(step, call)))
    }
    const decisions = new Map(conversation.pending.flatMap(({ call, decision }) =>
      decision === undefined ? [] : [[call.call_id, decision] as const]
    ))
    const results = yield* Toolkit.executeAllSafe(
      toolkit,
      conversation.pending.map(({ call }) =>
        call
      )
    ).pipe(
      Effect.provide(
        Approval.layer((asked) =>
          Effect.succeed(decisions.get(asked.call.call_id) ?? Approval.denied("no decision was given"))
        )
      )
    )
    const resumed = results.map((result): Event => ({
      _tag: "ToolResult",
      step,
      outcome: result.outcome,
      call: result.call,
      output: result.output,
      ...(result.outcome === "success" ? {} : { reason: result.reason })
    }))
    const history = [
      ...conversation.history,
      ...results.map((result) => result.call),
      ...Toolkit.outputs(results)
    ]
    // A call that needs a person interrupts the run: its request is the response's last word.
    const asked = yield* Deferred.make<Approval.Request>()
    let turn = step
    const waitForAPerson = Approval.layer((wanted) => Effect.andThen(Deferred.succeed(asked, wanted), Effect.never))
    const answered = run(history).pipe(
      Stream.map((event) => {
        if (event._tag === "TurnStarted") turn = event.step
        return event
      }),
      Stream.provide(waitForAPerson),
      Stream.interruptWhen(Deferred.await(asked)),
      Stream.concat(Stream.unwrap(Effect.map(
        Deferred.isDone(asked),
        (done): Stream.Stream<Event> =>
          done
            ? Stream.fromEffect(Effect.map(Deferred.await(asked), (wanted) => request(turn, wanted.call)))
            : Stream.empty
      )))
    )
    return Stream.concat(Stream.fromIterable(resumed), answered)
  }))

const request = (step: number, call: Item.FunctionCall): ApprovalRequested => ({
  _tag: "ApprovalRequested",
  step,
  call,
  token: call.call_id
})
