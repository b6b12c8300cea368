/**
 * An `AgentLoop` run recorded by a `Checkpointer`, served as Server-Sent
 * Events that survive a reload: each event its log records goes out with an
 * id (see `RunCursor`), and a client that reconnects with `Last-Event-ID` (a
 * browser's `EventSource` does it by itself; `EventStreamClient.entries` with
 * `lastEventId`) gets every recorded event after it, once, then the rest as
 * the run streams it. A client that connects to a finished run gets the
 * events its log holds and how it ended: the whole run, unless the log was
 * compacted (`compactAfter`: the events after its last snapshot) or cut down
 * to its result by retention (the last decision and `Finished`). A run live
 * in this server sends every event it streamed, compacted or not.
 *
 * The run outlives its clients: the server executes it in a fiber of its own
 * (see `LiveRuns`), and a client attaches to it; disconnecting does not stop
 * it. {@link cancel} does: it interrupts the run, records in its log that a
 * person cancelled it, and every attached client gets `Halted` whose `source`
 * is `"person"` as the stream's typed failure, as does any client or
 * execution that comes later. A run's process that died is resumed from its
 * checkpoints by the next client that connects; a run another process
 * executes is followed by reading its log, and taken over once its lease is
 * free.
 *
 * Events the log does not record (the model's deltas, tools' progress) go out
 * without an id, so a client's last id stays that of the last recorded event
 * it has: reconnecting, it gets the turn in progress again from its start
 * (what it had of it past that id must be dropped: an `EventSource` page
 * clears the turn when it reconnects), or whole in its `TurnCompleted` when
 * the turn completed meanwhile, or sent more unrecorded events than
 * `LiveRuns` keeps.
 *
 * @since 0.3.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { HttpServerResponse } from "effect/http"
import * as Pull from "effect/Pull"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Accounting from "../Accounting.ts"
import * as AgentCheckpoint from "../agent/AgentCheckpoint.ts"
import type * as AgentEvent from "../agent/AgentEvent.ts"
import * as AgentHistory from "../agent/AgentHistory.ts"
import { AgentLoop } from "../agent/AgentLoop.ts"
import { Checkpointer } from "../Checkpointer.ts"
import { CheckpointMismatch, RunInProgress } from "../CheckpointStore.ts"
import * as RunFingerprint from "../RunFingerprint.ts"
import * as Termination from "../Termination.ts"
import * as EventStream from "./EventStream.ts"
import * as ClientCursor from "./internal/clientCursor.ts"
import * as SseFrames from "./internal/sseFrames.ts"
import * as LiveRuns from "./LiveRuns.ts"
import * as RunCursor from "./RunCursor.ts"

/**
 * An event as the stream sends it, with its SSE id when the run's log records
 * it (`undefined`: no `id:` line, the client keeps its last id).
 *
 * @since 0.3.0
 * @category models
 */
export interface Entry<A> {
  readonly id: string | undefined
  readonly event: A
}

/**
 * The server stopped sending a run's events to a client that should come
 * back for the rest: the server is stopping (`shutdown`), or the client fell
 * too far behind the run (`behind`). The response ends without `end`, so the
 * client sees the stream cut off, and reconnects with its last id.
 *
 * @since 0.3.0
 * @category errors
 */
export class Detached extends Schema.TaggedError<Detached>()("Detached", {
  runId: Schema.String,
  reason: Schema.Literals(["shutdown", "behind"])
}) {
  override get message() {
    return this.reason === "shutdown"
      ? `the server stopped following run "${this.runId}": it is stopping`
      : `the server stopped following run "${this.runId}" for a client too far behind`
  }
}

/**
 * Where a client starts and how often a run another process executes is read.
 *
 * @since 0.3.0
 * @category models
 */
export interface Options {
  /** What the client has: the cursor its `Last-Event-ID` names (see {@link lastEventId}); from the start when absent. */
  readonly after?: RunCursor.Cursor | undefined
  /**
   * How long to wait before reading again the log of a run another process executes (default 500 ms): each look
   * reads what the run appended since the last one (see `AgentHistory.follow`).
   */
  readonly pollInterval?: Duration.Input | undefined
}

/**
 * The options of a run served this way: an `AgentLoop` run's, with its
 * `runId` (see `AgentHistory.RunOptions`).
 *
 * @since 0.3.0
 * @category models
 */
export type RunOptions<O, R, E, RU> = AgentHistory.RunOptions<O, R, E, RU>

/**
 * The cursor a reconnecting client's `Last-Event-ID` names: `undefined`
 * without one, {@link EventStream.InvalidLastEventId} for a value that is not
 * an id this module writes (answer `400`).
 *
 * @since 0.3.0
 * @category serving
 */
export const lastEventId = (
  headers: Readonly<Record<string, string | undefined>>
): Effect.Effect<RunCursor.Cursor | undefined, EventStream.InvalidLastEventId> =>
  Effect.fromResult(EventStream.lastEventId(headers, RunCursor.FromEventId))

/** A failure to read or open a run's log, as the termination a client gets. */
const checkpointFailed = (error: AgentHistory.CancelError): Termination.Error =>
  error._tag === "InvalidOptions" ? error : new Termination.CheckpointFailed({
    message: `the run's checkpoint failed: ${error.message}`,
    cause: error,
    accounting: Accounting.empty
  })

/** A run executed elsewhere: another process (or code of this one outside the registry) holds its lease. */
const heldElsewhere = (cause: Cause.Cause<Termination.Error>): boolean => {
  const error = Cause.findErrorOption(cause)
  return error._tag === "Some" && error.value._tag === "CheckpointFailed" && error.value.cause instanceof RunInProgress
}

/** What a read of a run's log found: the events of the entries it read, keyed, and how the run ended. */
interface LogRead<O> {
  readonly events: ReadonlyArray<ClientCursor.Keyed<AgentEvent.AgentEvent<O>>>
  readonly ended: AgentHistory.Replayed<O>["ended"]
}

/** What a client reads next: the live run, the run's log (read already, or to read), or the log after a pause. */
type Source<O> =
  | { readonly _tag: "Live"; readonly live: LiveRuns.Live<O> }
  | { readonly _tag: "Log"; readonly read: LogRead<O> | undefined }
  | { readonly _tag: "Follow" }
  | { readonly _tag: "Failed"; readonly termination: Termination.Error }

/**
 * The events of run `options.runId` for a client that has those up to
 * `from.after`: the recorded events after it, then the rest as the run
 * streams them (executed by this server, see `LiveRuns`, unless another
 * process executes it), ending after `Finished`, or failing with the run's
 * termination (`Halted` by `"person"` once cancelled), or with
 * {@link Detached} when the client should come back for the rest.
 *
 * Built before the response: a cursor past the events the run has recorded
 * (and what it may have sent before recording it: the next turn's start)
 * fails with {@link EventStream.InvalidLastEventId}. Needs the `AgentLoop`,
 * the `Checkpointer` and the services of the run's tools and predicate; a
 * run it starts executes with those of the first client's request, for as
 * long as the `LiveRuns` layer lives. Those services must outlive the
 * request: a layer provided to the request alone (`Effect.provide(layer)` in
 * the route's handler) is closed when the handler returns its response, and
 * the run starts later, when the response's body streams, on services
 * already released (a model's connection pool, a database client). Build
 * them once, with the server (provided to its layer, or to the routes with
 * `HttpRouter.provideRequest`). Runs on a thread are refused (their stream
 * fails with `InvalidOptions`).
 *
 * @example
 * ```ts
 * import { AgentLoop, Checkpointer, LiveRuns, ResumableStream } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Stream } from "effect"
 *
 * const options = { input: "Say hello", runId: "hello-1" }
 *
 * const program = Effect.gen(function*() {
 *   // A client from the start: the recorded events carry ids, the model's deltas none.
 *   const whole = yield* Stream.runCollect(yield* ResumableStream.events(options))
 *   console.log(whole.map((entry) => entry.id ?? "-").join(" ")) // 1.0 - - 1.1 1.3 1.5
 *   // A client back with the id of the turn it had: the rest, once. The run is not executed again.
 *   const after = yield* ResumableStream.lastEventId({ "last-event-id": "1.1" })
 *   const rest = yield* Stream.runCollect(yield* ResumableStream.events(options, { after }))
 *   console.log(rest.map((entry) => entry.event._tag)) // [ 'Verdict', 'Finished' ]
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")])
 * Effect.runPromise(program.pipe(Effect.provide(Layer.mergeAll(
 *   LiveRuns.layer,
 *   Checkpointer.layerMemory,
 *   AgentLoop.layer.pipe(Layer.provide(model))
 * ))))
 * ```
 *
 * @since 0.3.0
 * @category serving
 */
export const events = <O = string, R = never, E = never, RU = never>(
  options: RunOptions<O, R, E, RU>,
  from: Options = {}
): Effect.Effect<
  Stream.Stream<Entry<AgentEvent.AgentEvent<O>>, Termination.Error | Detached>,
  EventStream.InvalidLastEventId,
  LiveRuns.LiveRuns | AgentLoop | Checkpointer | R | RU
> =>
  Effect.gen(function*() {
    const registry = yield* LiveRuns.LiveRuns
    const context = yield* Effect.context<AgentLoop | Checkpointer | R | RU>()
    const { runId } = options
    const fingerprint = yield* AgentCheckpoint.fingerprint(options)
    const pause = Duration.fromInputUnsafe(from.pollInterval ?? Duration.millis(500))
    /**
     * Reads of the run's log as it grows (see `AgentHistory.follow`): the first reads it whole, each after only what
     * it appended since (all of it again once it was compacted or pruned), each event keyed on from the one before.
     */
    const reader = Effect.map(AgentHistory.follow(options), (follower) => {
      let keyOf = RunCursor.keys()
      return follower.read.pipe(
        Effect.map((read): LogRead<O> => {
          if (read.restarted) keyOf = RunCursor.keys()
          return { events: ClientCursor.keyed(read.events, keyOf), ended: read.ended }
        }),
        Effect.mapError(checkpointFailed),
        Effect.provideContext(context)
      )
    })
    let read = yield* reader
    // The run outlives the request that starts it: its scope is the run's own, not the request's.
    const execution = (cancel: Effect.Effect<string>) =>
      Stream.unwrap(Effect.map(Effect.scope, (scope) =>
        Stream.unwrap(Effect.map(AgentLoop, (agent) =>
          agent.stream({ ...options, cancel }))).pipe(
            Stream.provideContext(Context.add(context, Scope.Scope, scope))
          )))

    const after = from.after
    const refuse = (reason: string) =>
      Effect.fail(
        new EventStream.InvalidLastEventId({ value: after === undefined ? "" : RunCursor.eventId(after), reason })
      )
    const live = registry.get<O>(runId)
    let first: Source<O>
    if (live !== undefined && (after === undefined || RunCursor.isWithin(after, live.frontier(), true))) {
      first = { _tag: "Live", live }
    } else {
      const replayed = yield* Effect.result(read)
      if (replayed._tag === "Failure") {
        first = { _tag: "Failed", termination: replayed.failure }
      } else {
        const { ended, events: recorded } = replayed.success
        // The cursor of a client that has every event of the log.
        const log = ClientCursor.make(undefined)
        log.lacks(recorded)
        // Only a run that finished sent nothing past its log: one cancelled or failed in a turn had sent its start.
        if (after !== undefined && !RunCursor.isWithin(after, log.cursor(), ended?._tag !== "Finished")) {
          return yield* refuse(`run "${runId}" has no such event`)
        }
        first = live === undefined ? { _tag: "Log", read: replayed.success } : { _tag: "Live", live }
        // The client gets the live run's events, not this read's: the next read of the log reads it from its start.
        if (live !== undefined) {
          read = yield* reader
        }
      }
    }

    const client = ClientCursor.make<AgentEvent.AgentEvent<O>>(after)

    let next: Source<O> | undefined = first
    const then = (source: Source<O> | undefined) => {
      next = source
      return Stream.empty
    }

    /** The events of a live run: so far, then as they come, then how it ended. */
    const fromAttached = (attached: LiveRuns.Attached<O>) =>
      Stream.fromIterable([...client.lacks(attached.recorded), ...client.lacks(attached.since)]).pipe(
        Stream.concat(client.lacking(Stream.fromQueue(attached.next))),
        Stream.catch((ending): Stream.Stream<Entry<AgentEvent.AgentEvent<O>>, Termination.Error | Detached> => {
          switch (ending._tag) {
            case "Failed":
              return heldElsewhere(ending.cause) ? then({ _tag: "Follow" }) : Stream.failCause(ending.cause)
            case "Stopped":
              return then({ _tag: "Log", read: undefined })
            case "Behind":
              return Stream.fail(new Detached({ runId, reason: "behind" }))
          }
        })
      )

    /** The run's recorded events, then how it ended; a run that has not is executed (or followed). */
    const fromLog = (replayed: LogRead<O>) => {
      const sent = client.lacks(replayed.events)
      const ended = replayed.ended
      const rest: Stream.Stream<Entry<AgentEvent.AgentEvent<O>>, Termination.Error | Detached> =
        ended?._tag === "Finished"
          ? Stream.empty
          : ended !== undefined
          ? Stream.fail(ended)
          : Stream.unwrap(Effect.map(registry.start(runId, fingerprint, execution), (started) =>
            started === undefined
              ? Stream.fail(new Detached({ runId, reason: "shutdown" }))
              : RunFingerprint.differences(started.live.fingerprint, fingerprint).length > 0
              ? Stream.fail(mismatch(started.live.fingerprint))
              : fromAttached(started.attached)))
      return Stream.concat(Stream.fromIterable(sent), rest)
    }

    const mismatch = (recorded: RunFingerprint.Fingerprint) =>
      checkpointFailed(
        new CheckpointMismatch({ id: runId, differences: RunFingerprint.differences(recorded, fingerprint) })
      )

    const play = (source: Source<O>): Stream.Stream<Entry<AgentEvent.AgentEvent<O>>, Termination.Error | Detached> => {
      switch (source._tag) {
        case "Live":
          return RunFingerprint.differences(source.live.fingerprint, fingerprint).length > 0
            ? Stream.fail(mismatch(source.live.fingerprint))
            : Stream.unwrap(Effect.map(source.live.attach, fromAttached))
        case "Log":
          return source.read === undefined
            ? Stream.unwrap(Effect.map(read, fromLog))
            : fromLog(source.read)
        case "Follow":
          return Stream.unwrap(Effect.as(Effect.sleep(pause), play({ _tag: "Log", read: undefined })))
        case "Failed":
          return Stream.fail(source.termination)
      }
    }

    // One source after another, each chosen by how the one before ended.
    const nextSource: Pull.Pull<readonly [Source<O>], never, void> = Effect.suspend(() => {
      const source = next
      next = undefined
      return source === undefined ? Cause.done() : Effect.succeed([source])
    })
    return Stream.flatMap(Stream.fromPull(Effect.succeed(nextSource)), play)
  })

/**
 * Options of a response.
 *
 * @since 0.3.0
 * @category models
 */
export interface ResponseOptions extends EventStream.EncodeOptions {
  /** The request's headers (their names in lower case): its `Last-Event-ID` says where the client is. */
  readonly headers?: Readonly<Record<string, string | undefined>> | undefined
  readonly pollInterval?: Duration.Input | undefined
}

/**
 * The SSE text of a client's events (see {@link events}): `id:` and `data:`
 * per recorded event, `data:` alone for the others, `event: end` after
 * `Finished`, `event: failure` with the encoded termination; a client let go
 * ({@link Detached}) sees the body end with neither.
 *
 * @since 0.3.0
 * @category encoding
 */
export const encode = <A, R>(
  entries: Stream.Stream<Entry<A>, Termination.Error | Detached, R>,
  codec: EventStream.Codec<A, Termination.Error>,
  options: EventStream.EncodeOptions = {}
): Stream.Stream<string, never, R> => {
  // `Detached` is never written (the body ends without a frame), but is in the union the failures are encoded with.
  const encodeFailure = Schema.encodeEffect(
    Schema.fromJsonString(Schema.toCodecJson(Schema.Union([codec.failure, Detached])))
  )
  const frames = SseFrames.messages(entries, codec.events, (entry) => entry.event, (entry) => entry.id).pipe(
    Stream.concat(Stream.succeed(SseFrames.endFrame)),
    Stream.catchCause((cause) => {
      const error = Cause.findErrorOption(cause)
      // Let go: the body ends without `end`, and the client comes back with its last id.
      return error._tag === "Some" && error.value._tag === "Detached"
        ? Stream.empty
        : SseFrames.failed(cause, encodeFailure)
    })
  )
  return SseFrames.keepingAlive(frames, options.keepAlive)
}

/**
 * An `effect/http` response streaming run `options.runId` to the client whose
 * request has `options.headers`: `400` when its `Last-Event-ID` is not an id
 * of this run's, else its events (see {@link events}) as Server-Sent Events.
 * The client going away ends the response, not the run.
 *
 * @example
 * ```ts
 * import { EventStream, ResumableStream } from "@agentloop/core"
 * import { Effect } from "effect"
 * import { HttpRouter, HttpServerRequest } from "effect/http"
 *
 * // GET /runs/:id/events: run `id` for every client, each from after its Last-Event-ID. The server provides the
 * // AgentLoop, a Checkpointer and LiveRuns.layer (one registry for the server's lifetime).
 * const events = HttpRouter.add(
 *   "GET",
 *   "/runs/:id/events",
 *   Effect.gen(function*() {
 *     const { id } = yield* HttpRouter.params
 *     const request = yield* HttpServerRequest.HttpServerRequest
 *     const options = { input: "Plan the trip", runId: id ?? "" }
 *     return yield* ResumableStream.toHttpResponse(options, EventStream.agent, { headers: request.headers })
 *   })
 * )
 * ```
 *
 * @since 0.3.0
 * @category serving
 */
export const toHttpResponse = <O = string, R = never, E = never, RU = never>(
  options: RunOptions<O, R, E, RU>,
  codec: EventStream.Codec<AgentEvent.AgentEvent<O>, Termination.Error>,
  response: ResponseOptions = {}
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, LiveRuns.LiveRuns | AgentLoop | Checkpointer | R | RU> =>
  Effect.flatMap(
    lastEventId(response.headers ?? {}),
    (after) => events(options, { after, pollInterval: response.pollInterval })
  ).pipe(
    Effect.match({
      onFailure: (error) => HttpServerResponse.text(`${error.message}\n`, { status: 400 }),
      onSuccess: (entries) =>
        HttpServerResponse.stream(Stream.encodeText(encode(entries, codec, response)), {
          headers: EventStream.headers
        })
    })
  )

/**
 * Cancels run `options.runId`: interrupts it when this server executes it,
 * and records in its log that a person cancelled it, saying `reason` (see
 * `AgentHistory.cancel`). Every client attached to it gets `Halted` whose
 * `source` is `"person"`, and so does every client and execution after.
 * Answers whether this call cancelled it: `false` for a run that had finished
 * or been cancelled (of cancels at once, one answers `true`). A call
 * interrupted once it told the run (waiting for it to stop) leaves it told.
 * Options other than the run's cancel nothing, live or not:
 * `CheckpointMismatch`. A run another process executes is not cancelled: it
 * fails with `RunInProgress` (cancel it where it runs).
 *
 * @since 0.3.0
 * @category cancelling
 */
export const cancel = <O = string, R = never, E = never, RU = never>(
  options: RunOptions<O, R, E, RU>,
  cancelOptions: { readonly reason?: string | undefined } = {}
): Effect.Effect<boolean, AgentHistory.CancelError, LiveRuns.LiveRuns | Checkpointer> =>
  Effect.flatMap(
    LiveRuns.LiveRuns,
    (registry) =>
      Effect.flatMap(AgentCheckpoint.fingerprint(options), (fingerprint) => {
        const reason = cancelOptions.reason ?? "cancelled"
        return registry.cancel(options.runId, fingerprint, reason, AgentHistory.cancel(options, { reason }))
      })
  )
