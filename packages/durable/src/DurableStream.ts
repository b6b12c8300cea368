/**
 * A durable run's events served to a UI so that they survive a reload: each
 * event goes out as Server-Sent Events with its position in the run's log as
 * its id, so a client that reconnects with `Last-Event-ID` (a browser's
 * `EventSource` does it by itself; `EventStreamClient.entries` with
 * `lastEventId`) gets every event after it, once, then the rest as the run
 * logs them. A client that connects to a finished run gets the whole run and
 * how it ended (until the run is pruned, see `RunRetention`). A
 * `Last-Event-ID` that names no entry of the run's log is answered `400`, and
 * a run the store has no record of (never started, or pruned) fails the
 * stream after a while (`startTimeout`) rather than being waited for without
 * end.
 *
 * Disconnecting does not stop a durable run: only {@link cancel} does. It
 * interrupts the run's workflow and logs the run's end as a `Halted`
 * termination whose `source` is `"person"`, which every connected client
 * receives as the stream's typed failure.
 *
 * @since 0.2.0
 */
import * as Accounting from "@agentloop/core/Accounting"
import * as EventStream from "@agentloop/core/stream/EventStream"
import * as Termination from "@agentloop/core/Termination"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { HttpServerResponse } from "effect/http"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import * as Stream from "effect/Stream"
import { WorkflowEngine } from "effect/workflow/WorkflowEngine"
import type * as DurableAgent from "./DurableAgent.ts"
import * as DurableEvent from "./DurableEvent.ts"
import { RunStore, RunStoreError } from "./RunStore.ts"
import type { Entry, RunKey } from "./RunStore.ts"

/**
 * One entry of a run's log as the stream sends it: its position (`seq`, the
 * SSE id), and the event, or the termination the run failed with.
 *
 * @since 0.2.0
 * @category models
 */
export type Logged<O> =
  | { readonly _tag: "Event"; readonly seq: number; readonly event: DurableEvent.DurableEvent<O> }
  | { readonly _tag: "Failure"; readonly seq: number; readonly termination: Termination.Error }

/**
 * Where a reader starts and how often it looks for more.
 *
 * @since 0.2.0
 * @category models
 */
export interface ReadOptions {
  /** The position of the last event the client has (its `Last-Event-ID`); from the first event when absent. */
  readonly after?: number | undefined
  /** How long to wait before looking again when the log has nothing new (default 100 ms). */
  readonly pollInterval?: Duration.Input | undefined
  /**
   * How long to wait for a run the store has no record of (default 30 seconds): never started, pruned, or
   * started and not begun by a runner yet. @since 0.3.0
   */
  readonly startTimeout?: Duration.Input | undefined
}

const failureJson = Schema.fromJsonString(Schema.toCodecJson(Termination.Error))

/**
 * The log of `run` after position `after`: the entries logged so far, then
 * the rest as they are logged, ending with `Finished` or the failure entry.
 * Fails with `RunStoreError` when an entry does not decode, and when the
 * store still has no record of the run after `startTimeout` (a run id never
 * started, or pruned, would be waited for without end).
 *
 * @since 0.2.0
 * @category reading
 */
export const read = <O>(
  run: RunKey,
  events: Schema.Codec<DurableEvent.DurableEvent<O>, unknown>,
  options: ReadOptions = {}
): Stream.Stream<Logged<O>, RunStoreError, RunStore> =>
  Stream.unwrap(Effect.gen(function*() {
    const store = yield* RunStore
    const decodeEvent = Schema.decodeUnknownEffect(Schema.fromJsonString(Schema.toCodecJson(events)))
    const decodeFailure = Schema.decodeUnknownEffect(failureJson)
    const corrupt = (entry: Entry) => (error: Schema.SchemaError) =>
      new RunStoreError({ operation: "decode", message: `entry ${entry.seq}: ${error.message}` })
    const pause = Duration.fromInputUnsafe(options.pollInterval ?? Duration.millis(100))
    const startBy = (yield* Clock.currentTimeMillis) +
      Duration.toMillis(Duration.fromInputUnsafe(options.startTimeout ?? Duration.seconds(30)))
    // Once the store has a record of the run, the wait for its next entry has no bound: it is running, or waits.
    let known = false
    const unknown = new RunStoreError({
      operation: "read",
      message: `run "${run.runId}" of agent "${run.agent}" has no record: it was never started, or was pruned`
    })
    const decode = (entry: Entry): Effect.Effect<Logged<O>, RunStoreError> =>
      entry.kind === "failure"
        ? Effect.map(
          Effect.mapError(decodeFailure(entry.body), corrupt(entry)),
          (termination) => ({ _tag: "Failure", seq: entry.seq, termination })
        )
        : Effect.map(
          Effect.mapError(decodeEvent(entry.body), corrupt(entry)),
          (event) => ({ _tag: "Event", seq: entry.seq, event })
        )
    return Stream.paginate<number | undefined, Logged<O>, RunStoreError>(options.after ?? -1, (afterSeq) =>
      Effect.gen(function*() {
        if (afterSeq === undefined) {
          return [[], Option.none()] as const
        }
        const entries = yield* store.read(run, { afterSeq, fromStep: 0, limit: 256 })
        if (entries.length === 0) {
          known ||= yield* store.exists(run)
          if (!known && (yield* Clock.currentTimeMillis) >= startBy) {
            return yield* unknown
          }
          yield* Effect.sleep(pause)
          return [[], Option.some(afterSeq)] as const
        }
        known = true
        const out: Array<Logged<O>> = []
        for (const entry of entries) {
          const logged = yield* decode(entry)
          out.push(logged)
          if (logged._tag === "Failure" || logged.event._tag === "Finished") {
            return [out, Option.some(undefined)] as const
          }
        }
        return [out, Option.some(entries[entries.length - 1]!.seq)] as const
      }))
  }))

const eventsJson = Schema.fromJsonString(Schema.toCodecJson(DurableEvent.DurableEvent))

/**
 * The SSE text of a run's log (a run whose output is text): `id:` and `data:`
 * per event, `event: failure` with the encoded termination, `event: end`
 * after `Finished`. It reads as `EventStream.agent`'s codec does, plus
 * `ApprovalRequested` (`DurableEvent.codec`).
 *
 * @since 0.2.0
 * @category serving
 */
export const encode = (
  logged: Stream.Stream<Logged<string>, RunStoreError, RunStore>
): Stream.Stream<string, never, RunStore> => {
  const encodeEvent = Schema.encodeSync(eventsJson)
  const encodeFailure = Schema.encodeSync(failureJson)
  return logged.pipe(
    Stream.map((entry) =>
      entry._tag === "Failure"
        ? `id: ${entry.seq}\nevent: failure\ndata: ${encodeFailure(entry.termination)}\n\n`
        : `id: ${entry.seq}\ndata: ${encodeEvent(entry.event)}\n\n${
          entry.event._tag === "Finished" ? "event: end\ndata: {}\n\n" : ""
        }`
    ),
    Stream.catch((error) =>
      Stream.succeed(
        `event: failure\ndata: ${
          JSON.stringify({ _tag: "RunStoreError", operation: error.operation, message: error.message })
        }\n\n`
      )
    )
  )
}

/**
 * An event's position in a run's log, as its SSE id: a non-negative integer of at most 15 digits, no leading zero.
 *
 * @since 0.3.0
 * @category schemas
 */
export const Position = Schema.String.check(Schema.isPattern(/^(?:0|[1-9]\d{0,14})$/)).pipe(
  Schema.decodeTo(Schema.Int, SchemaTransformation.numberFromString)
)

/**
 * The `Last-Event-ID` a client sent, as a position in the log (read by
 * `EventStream.lastEventId`, with {@link Position}): `undefined`
 * without one, `None` when it is not one this server wrote (not a small
 * non-negative integer).
 *
 * @example
 * ```ts
 * import { DurableStream } from "@agentloop/durable"
 *
 * // A reconnecting EventSource says where it was; the stream goes on after that event.
 * console.log(DurableStream.lastEventId({ "last-event-id": "17" })) // { _id: 'Option', _tag: 'Some', value: 17 }
 * // No header: from the start.
 * console.log(DurableStream.lastEventId({})) // { _id: 'Option', _tag: 'Some', value: undefined }
 * // Not a position this server wrote: refused.
 * console.log(DurableStream.lastEventId({ "last-event-id": "abc" })._tag) // None
 * ```
 *
 * @since 0.2.0
 * @category serving
 */
export const lastEventId = (
  headers: Readonly<Record<string, string | undefined>>
): Option.Option<number | undefined> => Result.getSuccess(EventStream.lastEventId(headers, Position))

const sseHeaders = { "cache-control": "no-cache", "x-accel-buffering": "no" }

/**
 * An `effect/http` response streaming run `runId` of the durable agent
 * named `agent` (whose output is text) from after `after`: see {@link read};
 * `400` when the run's log has no event at `after` (the client's
 * `Last-Event-ID` was not written by this run). The client going away ends
 * the response, not the run.
 *
 * @since 0.2.0
 * @category serving
 */
export const toHttpResponse = (
  agent: string,
  runId: string,
  options: ReadOptions = {}
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, RunStore> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<RunStore>()
    const run = { agent, runId }
    const events = HttpServerResponse.stream(
      Stream.provideContext(Stream.encodeText(encode(read(run, DurableEvent.DurableEvent, options))), context),
      { contentType: "text/event-stream; charset=utf-8", headers: sseHeaders }
    )
    const after = options.after
    if (after === undefined) return events
    // The server sends only events its log holds: a position past the log is no event of this run's.
    // A store that fails here is reported by the stream, which reads it next.
    const at = yield* Effect.option((yield* RunStore).read(run, { afterSeq: after - 1, fromStep: 0, limit: 1 }))
    if (at._tag === "None" || at.value.length > 0) return events
    const refused = new EventStream.InvalidLastEventId({
      value: String(after),
      reason: `run "${runId}" has no such event`
    })
    return HttpServerResponse.text(`${refused.message}\n`, { status: 400 })
  })

/**
 * Cancels run `runId` of `agent` (whose output is text): interrupts it wherever it is (a model request, a tool call, a wait
 * for approval) and logs its end as `Halted` by `"person"`, with the run's
 * accounting at its last completed turn. A run that has ended already is left
 * as it is, and so is a run id the store has no record of (never started, or
 * pruned): answers whether this call cancelled it.
 *
 * It checks no one's right to: whoever knows a run's id can cancel it (and
 * read its events, see {@link toHttpResponse}). A server whose runs are not
 * everyone's makes their ids unguessable, or checks the caller before it
 * calls this.
 *
 * @since 0.2.0
 * @category cancelling
 */
export const cancel = <R, RU>(
  agent: DurableAgent.DurableAgent<string, R, RU>,
  runId: string,
  options: { readonly reason?: string | undefined } = {}
): Effect.Effect<boolean, RunStoreError, WorkflowEngine | RunStore> =>
  Effect.gen(function*() {
    const run: RunKey = { agent: agent.name, runId }
    const store = yield* RunStore
    // A run id with no record (never started, or pruned) names nothing to cancel; its end written now would be
    // the end of a run started under that id later.
    if (!(yield* store.exists(run))) return false
    // The end is written first, at the end of the log: the execution the interruption cuts off replays, finds it and
    // stops (interrupted first, a replay could ask the model again before the end is written).
    let end = yield* logEnd(store, run, logStart)
    while (true) {
      if (end._tag === "Ended") return false
      const halted = new Termination.Halted({
        reason: options.reason ?? "cancelled",
        source: "person",
        accounting: end.accounting
      })
      const body = yield* Schema.encodeEffect(failureJson)(halted).pipe(
        Effect.mapError((error) => new RunStoreError({ operation: "encode", message: error.message }))
      )
      yield* store.commit(run, { steps: [], entries: [{ seq: end.next, step: end.step, kind: "failure", body }] })
      // The run may have logged there first: then the end is written again, after what it logged, read from there on
      // (the entries before it are as they were: the log is only appended to).
      const [there] = yield* store.read(run, { afterSeq: end.next - 1, fromStep: 0, limit: 1 })
      if (there?.kind === "failure" && there.body === body) break
      end = yield* logEnd(store, run, end)
    }
    // Unsafe: the engine's own interruption waits for the execution to suspend, which a long tool call never does.
    const executionId = yield* agent.workflow.executionId({ runId, input: "" })
    yield* Effect.flatMap(WorkflowEngine, (engine) => engine.interruptUnsafe(agent.workflow, executionId))
    return true
  })

/** A log that has not ended: its next position, its last turn, and the run's accounting at its last completed turn. */
interface Open {
  readonly _tag: "Open"
  readonly next: number
  readonly step: number
  readonly accounting: Accounting.Accounting
}

/** An empty log. */
const logStart: Open = { _tag: "Open", next: 0, step: 0, accounting: Accounting.empty }

/**
 * Where run `run`'s log is, read on from `from` (where its entries before `from.next` left it): `Ended` (finished
 * or failed), or `Open`.
 */
const logEnd = (
  store: RunStore["Service"],
  run: RunKey,
  from: Open
): Effect.Effect<Open | { readonly _tag: "Ended" }, RunStoreError> =>
  Effect.gen(function*() {
    let { accounting, next, step } = from
    while (true) {
      const entries = yield* store.read(run, { afterSeq: next - 1, fromStep: 0, limit: 256 })
      if (entries.length === 0) return { _tag: "Open", next, step, accounting } as const
      for (const entry of entries) {
        if (entry.kind === "failure") return { _tag: "Ended" } as const
        const event = Schema.decodeUnknownOption(eventsJson)(entry.body)
        if (Option.isSome(event) && event.value._tag === "Finished") return { _tag: "Ended" } as const
        if (Option.isSome(event) && event.value._tag === "TurnCompleted") accounting = event.value.accounting
        step = entry.step
        next = entry.seq + 1
      }
    }
  })
