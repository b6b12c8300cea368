/**
 * The runs a server executes for its clients, by run id: each in a fiber of
 * its own, in the scope of this service's layer (the server's lifetime), so a
 * run goes on when the client that started it goes away, and a client that
 * comes back attaches to it. `ResumableStream` is built on it; provide
 * {@link layer} once, beside the HTTP server.
 *
 * A live run keeps every recorded event it streamed (with its key, see
 * `RunCursor`) and the unrecorded ones since the last recorded one (the
 * deltas of the turn in progress, a tool's progress), so a client attaching
 * gets the run so far and then each event as it comes. The recorded events
 * are few a turn, but kept whole until the run ends (a log's `compactAfter`
 * does not bound them), and each client attaching copies them: memory grows
 * with a live run's length. The unrecorded ones are kept up to `capacity`:
 * past it they are dropped, and a client attaching then gets none of them
 * until the next recorded event (the turn whole in its `TurnCompleted`, a
 * tool's result). A run leaves the registry when it ends; closing the
 * layer's scope interrupts every live run (a `Checkpointer` run resumes from
 * its checkpoints when it is executed again). A client that falls more than
 * `capacity` events behind is let go, to come back with the last id it has:
 * a run never waits for its clients.
 *
 * @since 0.3.0
 */
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Semaphore from "effect/Semaphore"
import * as Stream from "effect/Stream"
import type * as AgentEvent from "../agent/AgentEvent.ts"
import { CheckpointMismatch } from "../CheckpointStore.ts"
import * as RunFingerprint from "../RunFingerprint.ts"
import type * as Termination from "../Termination.ts"
import * as ClientCursor from "./internal/clientCursor.ts"
import * as RunCursor from "./RunCursor.ts"

/**
 * An event of a live run, with its key when its run's log records it.
 *
 * @since 0.3.0
 * @category models
 */
export interface Published<O> {
  readonly key: RunCursor.Key | undefined
  readonly event: AgentEvent.AgentEvent<O>
}

/**
 * How a live run ended for one of its clients: it `Finished` (its last event
 * was `Finished`), `Failed` with a cause (its termination, or a defect), was
 * `Stopped` (cancelled, or the server is stopping: its log says how it
 * stands), or this client fell `Behind`.
 *
 * @since 0.3.0
 * @category models
 */
export type Ending =
  | { readonly _tag: "Finished" }
  | { readonly _tag: "Failed"; readonly cause: Cause.Cause<Termination.Error> }
  | { readonly _tag: "Stopped" }
  | { readonly _tag: "Behind" }

/**
 * A client attached to a live run: the events so far (every recorded one,
 * then the unrecorded ones since the last of those: none once there were
 * more than the registry's `capacity`, and then none of those that come
 * until the next recorded one), and the rest as they come, in `next`, which
 * ends with the run's {@link Ending} (`Cause.Done` after `Finished`).
 *
 * @since 0.3.0
 * @category models
 */
export interface Attached<O> {
  readonly recorded: ReadonlyArray<Published<O>>
  readonly since: ReadonlyArray<Published<O>>
  readonly next: Queue.Dequeue<Published<O>, Exclude<Ending, { readonly _tag: "Finished" }> | Cause.Done>
}

/**
 * A run this server executes.
 *
 * @since 0.3.0
 * @category models
 */
export interface Live<O> {
  readonly id: string
  /** The fingerprint it was started with: a client asking for the run with other options is not attached. */
  readonly fingerprint: RunFingerprint.Fingerprint
  /** The cursor of a client that has every recorded event the run streamed so far. */
  readonly frontier: () => RunCursor.Cursor | undefined
  /** Attaches a client until the scope closes. */
  readonly attach: Effect.Effect<Attached<O>, never, Scope.Scope>
}

/**
 * A run {@link LiveRuns} started or found live, and the client attached to it.
 *
 * @since 0.3.0
 * @category models
 */
export interface Started<O> {
  readonly live: Live<O>
  readonly attached: Attached<O>
}

/**
 * The registry.
 *
 * @since 0.3.0
 * @category services
 */
export class LiveRuns extends Context.Service<LiveRuns, {
  /**
   * Run `id`, when this server executes it. Its events are of the run
   * started under this id, whose output may not be `O`: compare its
   * fingerprint (which has the output's schema) before using them.
   */
  readonly get: <O>(id: string) => Live<O> | undefined
  /**
   * Attaches a client, until the scope closes, to run `id`: the live one, or
   * `run(cancel)` started in a fiber of its own (with the services it was
   * given) when there is none, the client attached before its first event.
   * `cancel` succeeds with a person's reason when `cancel` is called, and the run
   * must then stop, record it and fail with `Halted` (an `AgentLoop` run with
   * the `cancel` option does). `undefined` once the registry is closing. A run
   * found live may have been started with other options: compare its
   * fingerprint.
   */
  readonly start: <O>(
    id: string,
    fingerprint: RunFingerprint.Fingerprint,
    run: (cancel: Effect.Effect<string>) => Stream.Stream<AgentEvent.AgentEvent<O>, Termination.Error>
  ) => Effect.Effect<Started<O> | undefined, never, Scope.Scope>
  /**
   * Cancels run `id` (whose options have `fingerprint`), saying `reason`. A
   * live run is told to, and awaited: `true` once it ended with `Halted` by
   * `"person"` for this reason, for the cancel that told it first (of several
   * at once, one answers `true`); a cancel interrupted while it waits leaves
   * the run told. A live run started with another fingerprint is left
   * running, and the cancel fails with `CheckpointMismatch`. A run that is
   * not live, or ended some other way (it finished first, failed, or another
   * process executes it), is held (no client starts it) while `otherwise`
   * records the cancellation in its log, whose answer is the answer; its
   * clients then read how it stands from its log.
   */
  readonly cancel: <E, R>(
    id: string,
    fingerprint: RunFingerprint.Fingerprint,
    reason: string,
    otherwise: Effect.Effect<boolean, E, R>
  ) => Effect.Effect<boolean, E | CheckpointMismatch, R>
}>()("@agentloop/core/stream/LiveRuns") {}

/** A client's queue of a run's events, ending with how the run ended. */
type Next = Queue.Queue<Published<unknown>, Exclude<Ending, { readonly _tag: "Finished" }> | Cause.Done>

/** A run's state in the registry. */
interface Entry {
  readonly id: string
  readonly fingerprint: RunFingerprint.Fingerprint
  readonly recorded: Array<Published<unknown>>
  /** The unrecorded events since the last recorded one; `undefined` once there were more than `capacity`. */
  since: Array<Published<unknown>> | undefined
  /** What a client that has every recorded event it streamed has. */
  readonly frontier: ReturnType<typeof ClientCursor.make<unknown>>
  readonly clients: Set<Next>
  /** Clients that attached once `since` was dropped: they get no unrecorded event until the next recorded one. */
  readonly skipping: Set<Next>
  /** A person's reason, once the run is cancelled. */
  readonly cancelled: Deferred.Deferred<string>
  ending: Ending | undefined
  /** Its execution; none for a run held while its cancellation is recorded. */
  fiber: Fiber.Fiber<void, Termination.Error> | undefined
}

/**
 * Makes the registry; every live run is interrupted when the scope closes.
 * `capacity` is how many events a client may be behind before it is let go,
 * and how many unrecorded events since the last recorded one a live run
 * keeps for the clients that attach (default 10,000).
 *
 * @since 0.3.0
 * @category constructors
 */
export const make = (
  options: { readonly capacity?: number | undefined } = {}
): Effect.Effect<LiveRuns["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const capacity = options.capacity ?? 10_000
    const entries = new Map<string, Entry>()
    // Starts and cancels one at a time: a run being cancelled is never started behind the cancel's back.
    const lock = yield* Semaphore.make(1)
    const runs = yield* Scope.make()
    let closing = false
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closing = true
        return Scope.close(runs, Exit.void)
      })
    )

    const end = (entry: Entry, ending: Ending) => {
      entry.ending = ending
      // Out of the registry before its clients hear of it: one that comes back at once finds how the run stands.
      if (entries.get(entry.id) === entry) entries.delete(entry.id)
      for (const client of entry.clients) {
        if (ending._tag === "Finished") Queue.endUnsafe(client)
        else Queue.failCauseUnsafe(client, Cause.fail(ending))
      }
      entry.clients.clear()
      entry.skipping.clear()
    }

    const publish = (entry: Entry, keyOf: ReturnType<typeof RunCursor.keys>) =>
    (
      chunk: ReadonlyArray<AgentEvent.AgentEvent<unknown>>
    ) => {
      const items = chunk.map((event): Published<unknown> => ({ key: keyOf(event), event }))
      let firstRecorded = -1
      for (let i = 0; i < items.length; i++) {
        const item = items[i]!
        if (item.key === undefined) {
          if (entry.since !== undefined && entry.since.length < capacity) entry.since.push(item)
          else entry.since = undefined
        } else {
          if (firstRecorded < 0) firstRecorded = i
          entry.recorded.push(item)
          entry.since = []
          entry.frontier.take(item.key)
        }
      }
      // Those who attached past the dropped events get the turn from its next recorded event on.
      const fromRecorded = firstRecorded < 0 ? [] : items.slice(firstRecorded)
      for (const client of entry.clients) {
        const sent = entry.skipping.has(client) ? fromRecorded : items
        if (Queue.offerAllUnsafe(client, sent).length > 0) {
          Queue.failCauseUnsafe(client, Cause.fail({ _tag: "Behind" }))
          entry.clients.delete(client)
        }
      }
      if (firstRecorded >= 0) entry.skipping.clear()
    }

    const endingOf = (exit: Exit.Exit<void, Termination.Error>): Ending =>
      Exit.isSuccess(exit)
        ? { _tag: "Finished" }
        : Cause.hasInterruptsOnly(exit.cause)
        ? { _tag: "Stopped" }
        : { _tag: "Failed", cause: exit.cause }

    const entry = (id: string, fingerprint: RunFingerprint.Fingerprint): Entry => ({
      id,
      fingerprint,
      recorded: [],
      since: [],
      frontier: ClientCursor.make(undefined),
      clients: new Set(),
      skipping: new Set(),
      cancelled: Deferred.makeUnsafe<string>(),
      ending: undefined,
      fiber: undefined
    })

    /** A cancel's answer, or the live run it told and whether it told it first. */
    type Told = boolean | { readonly fiber: Fiber.Fiber<void, Termination.Error>; readonly first: boolean }

    const attach = (entry: Entry): Effect.Effect<Attached<unknown>, never, Scope.Scope> =>
      Effect.flatMap(
        Queue.bounded<Published<unknown>, Exclude<Ending, { readonly _tag: "Finished" }> | Cause.Done>(capacity),
        (next: Next) =>
          Effect.acquireRelease(
            // At once with `publish` (both synchronous): no event is missed or seen twice between the two.
            Effect.sync(() => {
              const ending = entry.ending
              if (ending === undefined) entry.clients.add(next)
              else if (ending._tag === "Finished") Queue.endUnsafe(next)
              else Queue.failCauseUnsafe(next, Cause.fail(ending))
              if (entry.since === undefined) entry.skipping.add(next)
              return { recorded: [...entry.recorded], since: entry.since === undefined ? [] : [...entry.since], next }
            }),
            () =>
              Effect.sync(() => {
                entry.clients.delete(next)
                entry.skipping.delete(next)
                Queue.shutdownUnsafe(next)
              })
          )
      )

    const live = <O>(entry: Entry): Live<O> => {
      const handle: Live<unknown> = {
        id: entry.id,
        fingerprint: entry.fingerprint,
        frontier: entry.frontier.cursor,
        attach: attach(entry)
      }
      // The entry's events are those of the run `start` found or made under this id, whose output is O: a caller
      // compares the fingerprint (which has the output's schema) before it uses a run it did not start.
      return handle as unknown as Live<O>
    }

    return LiveRuns.of({
      get: <O>(id: string) => {
        const entry = entries.get(id)
        return entry === undefined ? undefined : live<O>(entry)
      },
      start: <O>(
        id: string,
        fingerprint: RunFingerprint.Fingerprint,
        run: (cancel: Effect.Effect<string>) => Stream.Stream<AgentEvent.AgentEvent<O>, Termination.Error>
      ) => {
        const attachOrStart = Effect.suspend((): Effect.Effect<Started<O> | undefined, never, Scope.Scope> => {
          if (closing) return Effect.succeed(undefined)
          const found = entries.get(id)
          if (found !== undefined) {
            const handle = live<O>(found)
            return Effect.map(handle.attach, (attached) => ({ live: handle, attached }))
          }
          const started = entry(id, fingerprint)
          entries.set(id, started)
          const handle = live<O>(started)
          const publishing = publish(started, RunCursor.keys())
          const execution = Stream.runForEachArray(
            run(Deferred.await(started.cancelled)),
            (chunk) => Effect.sync(() => publishing(chunk))
          )
          // Attached before the run is forked: the client that starts it misses none of its events.
          return Effect.flatMap(handle.attach, (attached) =>
            Effect.map(Effect.forkIn(execution, runs), (fiber) => {
              started.fiber = fiber
              // Observed from outside: a fiber interrupted before it began runs none of its own finalizers.
              fiber.addObserver((exit) => end(started, endingOf(exit)))
              return { live: handle, attached }
            }))
        })
        // Registered, attached and forked at once (all quick): an interrupted start leaves no id without its run.
        return lock.withPermits(1)(Effect.uninterruptible(attachOrStart))
      },
      cancel: <E, R>(
        id: string,
        fingerprint: RunFingerprint.Fingerprint,
        reason: string,
        otherwise: Effect.Effect<boolean, E, R>
      ) => {
        /** Whether a run ended as told: `Halted` by the person, for this reason. */
        const cancelledAsTold = (exit: Exit.Exit<void, Termination.Error>): boolean => {
          const failure = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
          return failure?._tag === "Some" && failure.value._tag === "Halted" &&
            failure.value.source === "person" && failure.value.reason === reason
        }
        /**
         * Under the lock, and not to be interrupted half done: a live run is told (its execution, and whether
         * this call told it first); one not live gets `otherwise`'s answer.
         */
        const tell = Effect.suspend((): Effect.Effect<Told, E | CheckpointMismatch, R> => {
          const found = entries.get(id)
          if (found?.fiber !== undefined) {
            // Options that are not the run's cancel nothing, as they would not open its log.
            const differences = RunFingerprint.differences(found.fingerprint, fingerprint)
            if (differences.length > 0) return Effect.fail(new CheckpointMismatch({ id, differences }))
            return Effect.succeed({
              fiber: found.fiber,
              first: Deferred.doneUnsafe(found.cancelled, Exit.succeed(reason))
            })
          }
          // Not live: held while the cancellation is written, so that no client starts it meanwhile.
          const held = entry(id, fingerprint)
          entries.set(id, held)
          return otherwise.pipe(Effect.ensuring(Effect.sync(() => end(held, { _tag: "Stopped" }))))
        })
        // Once told, the run stops by itself: waiting for it can be abandoned (a tool that ignores interruption).
        const cancel: Effect.Effect<boolean, E | CheckpointMismatch, R> = Effect.flatMap(
          lock.withPermits(1)(Effect.uninterruptible(tell)),
          (told) =>
            typeof told === "boolean"
              ? Effect.succeed(told)
              // A run that ended otherwise (it finished, failed, or runs in another process) is no longer live:
              // its log says whether there is something to cancel.
              : Effect.flatMap(
                Fiber.await(told.fiber),
                (exit) => cancelledAsTold(exit) ? Effect.succeed(told.first) : cancel
              )
        )
        return cancel
      }
    })
  })

/**
 * The registry, in the layer's scope: provide it once, beside the HTTP
 * server, so that it lives as long as the server.
 *
 * @example
 * ```ts
 * import { AgentLoop, Checkpointer } from "@agentloop/core"
 * import { LiveRuns } from "@agentloop/core/stream"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Layer } from "effect"
 *
 * // What a server of resumable runs provides to its routes (see ResumableStream).
 * const Services = Layer.mergeAll(
 *   LiveRuns.layer,
 *   Checkpointer.layerMemory,
 *   AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")])))
 * )
 * ```
 *
 * @since 0.3.0
 * @category layers
 */
export const layer: Layer.Layer<LiveRuns> = Layer.effect(LiveRuns)(make())
