/**
 * Tool approvals over a chat's requests: a call of a tool that `needsApproval`
 * ends the response with a `data-agentloop-approval` part instead of waiting
 * on the server; the person's decision comes back with the next request (a
 * `data-agentloop-decision` part, or a tool part `useChat` marked
 * `approval-responded`), and the run goes on from there: the decided call
 * runs (or is denied, with the reason the model reads), then the model.
 *
 * Nothing waits on the server between the two requests: the chat's messages
 * are the state, as they are for the rest of the conversation. So that a
 * client cannot make up a call and approve it itself, each request carries a
 * token, the HMAC-SHA256 of the call (its id, its tool, its exact arguments)
 * under a secret of the server's, and a call left pending by the messages
 * runs only when its decision comes back with the token that was issued for
 * it.
 *
 * @since 0.2.0
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import { Base64Url } from "effect/encoding"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../agent/AgentEvent.ts"
import * as Approval from "../Approval.ts"
import { sha256Hex } from "../internal/sha256.ts"
import * as InvalidOptions from "../InvalidOptions.ts"
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
 * Options of {@link stream}.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /**
   * The key that signs approval tokens: at least 32 bytes (UTF-8 for a
   * string), known only to the server. Every server that may answer the chat
   * needs the same one, and a token stays good as long as its secret does: keep
   * a stable secret in the app's configuration so approvals survive a restart,
   * and change it to void every token issued.
   */
  readonly secret: Redacted.Redacted<string> | Uint8Array
}

/**
 * The fewest bytes a secret may have: an HMAC-SHA256 key as long as its output.
 *
 * @since 0.2.0
 * @category constants
 */
export const minSecretBytes = 32

/**
 * What the model reads for a pending call that does not run because no token
 * the server issued came with it: made up by the client, changed since it
 * was asked about, decided with another call's token, or never asked about
 * (a call of a tool that needs no approval is never left to the client).
 *
 * @since 0.2.0
 * @category constants
 */
export const notIssuedReason =
  "This call was not run: it came back without a decision carrying the approval token the server issued for it (this call was not issued by the server as it stands). Make the call again if it is still needed."

/**
 * Answers `conversation`: first the calls it left pending, then `run` on the
 * history with their outputs. A pending call runs (or is denied, with the
 * person's reason) only when its decision came with the token issued for
 * that very call; any other (no decision, no token, another call's token, a
 * token of other arguments or of another secret) does not run, and the model
 * reads {@link notIssuedReason} as its output. Nor does a call id run twice in
 * one request, or once its output is in the history; a call that runs gets a
 * `Tool.IdempotencyKey` derived from its token, the same if a client posts the
 * approval again in another request (the server keeps no record), for a tool
 * whose effect must happen once to deduplicate. A call the run makes that
 * needs approval ends the response with its request and its token: the run is
 * interrupted while it waits, and its other calls with it.
 *
 * `run` gets the history to continue; the approvals it needs are provided to
 * it. The stream fails with `InvalidOptions` when the secret is shorter than
 * {@link minSecretBytes}.
 *
 * @example
 * ```ts
 * import { AgentLoop, ChatApprovals, UIMessage, UIMessageStream } from "@agentloop/core"
 * import type { Toolkit } from "@agentloop/core"
 * import { Effect, Redacted } from "effect"
 *
 * // In production: a stable secret from the app's configuration, so approvals survive a restart.
 * const secret = Redacted.make("a secret of at least 32 bytes, from config")
 *
 * const answer = (messages: ReadonlyArray<UIMessage.UIMessage>, toolkit: Toolkit.Toolkit<never>) =>
 *   Effect.map(AgentLoop.AgentLoop, (agent) =>
 *     UIMessageStream.fromEvents(
 *       ChatApprovals.stream(UIMessage.toConversation(messages), toolkit, (input) => agent.stream({ input, toolkit }), {
 *         secret
 *       })
 *     ))
 * void answer
 * ```
 *
 * @since 0.2.0
 * @category approvals
 */
export const stream = <R, E, R2>(
  conversation: UIMessage.Conversation,
  toolkit: Toolkit.Toolkit<R>,
  run: (history: ReadonlyArray<Item.Item>) => Stream.Stream<AgentEvent.AgentEvent, E, R2>,
  options: Options
): Stream.Stream<Event, E | InvalidOptions.InvalidOptions, R | R2> =>
  Stream.unwrap(Effect.gen(function*() {
    const key = yield* importKey(options.secret)
    const step = conversation.history.filter((item) => item.type === "function_call").length + 1
    // Each call id runs at most once a request, and never when the history has its output already.
    const seen = new Set(
      conversation.history.flatMap((item) => item.type === "function_call_output" ? [item.call_id] : [])
    )
    const issued: Array<Issued> = []
    for (const { call, decision, token } of conversation.pending) {
      const first = !seen.has(call.call_id)
      seen.add(call.call_id)
      if (first && decision !== undefined && token !== undefined && (yield* verify(key, call, token))) {
        issued.push({ call, decision, token })
      }
    }
    const decisions = new Map(issued.map(({ call, decision }) => [call.call_id, decision]))
    const ran = new Map<Item.FunctionCall, Toolkit.Result>()
    yield* Toolkit.streamAll(toolkit, issued.map(({ call }) => call), {
      idempotencyKey: (index) => sha256Hex(`agentloop/ChatApprovals/${issued[index]?.token}`)
    }).pipe(
      Stream.runForEach((event) => {
        const decided = issued[event.index]
        return Effect.sync(() => {
          if (event._tag === "Result" && decided !== undefined) ran.set(decided.call, event.result)
        })
      }),
      Effect.provide(
        Approval.layer((asked) =>
          Effect.succeed(decisions.get(asked.call.call_id) ?? Approval.denied("no decision was given"))
        )
      )
    )
    const results = conversation.pending.map(({ call }) =>
      ran.get(call) ?? Toolkit.mistake(call, "denied", notIssuedReason)
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
            ? Stream.fromEffect(
              Effect.flatMap(
                Deferred.await(asked),
                ({ call }) =>
                  Effect.map(
                    sign(key, call),
                    (token): Event => ({ _tag: "ApprovalRequested", step: turn, call, token })
                  )
              )
            )
            : Stream.empty
      )))
    )
    return Stream.concat(Stream.fromIterable(resumed), answered)
  }))

/** A pending call whose decision came with the token the server issued for it. */
interface Issued {
  readonly call: Item.FunctionCall
  readonly decision: Approval.Decision
  readonly token: string
}

const hmac = { name: "HMAC", hash: "SHA-256" } as const

/** An HMAC key of Web Crypto's (its type named this way: core is built without the DOM's types). */
type Key = Awaited<ReturnType<typeof globalThis.crypto.subtle.importKey>>

const importKey = (secret: Options["secret"]): Effect.Effect<Key, InvalidOptions.InvalidOptions> => {
  const bytes = Redacted.isRedacted(secret) ? new TextEncoder().encode(Redacted.value(secret)) : secret
  return bytes.length < minSecretBytes
    ? Effect.fail(InvalidOptions.make({
      field: "ChatApprovals.stream secret",
      // The secret itself is never printed.
      value: `${bytes.length} bytes`,
      expected: `at least ${minSecretBytes} bytes, known only to the server`
    }))
    : Effect.promise(() => globalThis.crypto.subtle.importKey("raw", bytes, hmac, false, ["sign", "verify"]))
}

/** What a token binds: the call's id, its tool and its exact arguments, unambiguously. */
const signed = (call: Item.FunctionCall): Uint8Array =>
  new TextEncoder().encode(JSON.stringify(["agentloop/ChatApprovals/1", call.call_id, call.name, call.arguments]))

const sign = (key: Key, call: Item.FunctionCall): Effect.Effect<string> =>
  Effect.map(
    Effect.promise(() => globalThis.crypto.subtle.sign(hmac, key, signed(call))),
    (signature) => Base64Url.encode(new Uint8Array(signature))
  )

/** Whether `token` is the one issued for `call`; Web Crypto compares the signatures in constant time. */
const verify = (key: Key, call: Item.FunctionCall, token: string): Effect.Effect<boolean> => {
  const signature = Base64Url.decode(token)
  return Result.isFailure(signature)
    ? Effect.succeed(false)
    : Effect.promise(() => globalThis.crypto.subtle.verify(hmac, key, signature.success, signed(call)))
}
