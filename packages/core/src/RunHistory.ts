/**
 * A recorded run's history, whoever wrote it: reading its log as a list of
 * checkpoints (entry `i` is checkpoint `i`: the run as it was once that entry
 * was written), and forking it, a new run that starts from one of them.
 *
 * What a checkpoint holds is its writer's business: `AgentHistory` reads an
 * `AgentLoop` run's, `StepHistory` a step program's. Both go through this
 * module, so they work on every `Checkpointer`, and fail alike: a run with no
 * checkpoint is {@link UnknownRun}, an index out of range
 * {@link CheckpointNotFound}, a fork onto an id that already has checkpoints
 * {@link RunExists}, an edit a checkpoint does not allow
 * {@link UneditableCheckpoint}.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Checkpointer } from "./Checkpointer.ts"
import type { CheckpointError, OpenError } from "./CheckpointStore.ts"
import type * as RunFingerprint from "./RunFingerprint.ts"
import type { InvalidRunId } from "./RunId.ts"

/**
 * Run `id` has no checkpoint: it was never recorded, or was cleared.
 *
 * @since 0.2.0
 * @category errors
 */
export class UnknownRun extends Schema.TaggedError<UnknownRun>()("UnknownRun", { id: Schema.String }) {
  override get message() {
    return `run "${this.id}" has no checkpoint: it was never recorded, or was cleared`
  }
}

/**
 * Run `id` has `count` checkpoints (`0` to `count - 1`), none at `index`.
 *
 * @since 0.2.0
 * @category errors
 */
export class CheckpointNotFound extends Schema.TaggedError<CheckpointNotFound>()("CheckpointNotFound", {
  id: Schema.String,
  index: Schema.Number,
  count: Schema.Number
}) {
  override get message() {
    return `run "${this.id}" has no checkpoint ${this.index}: its checkpoints are 0 to ${this.count - 1}`
  }
}

/**
 * A fork onto run `id`, which already has checkpoints: a fork starts a new run.
 *
 * @since 0.2.0
 * @category errors
 */
export class RunExists extends Schema.TaggedError<RunExists>()("RunExists", { id: Schema.String }) {
  override get message() {
    return `run "${this.id}" already has checkpoints: fork onto a new id`
  }
}

/**
 * A fork that cannot edit checkpoint `index` of run `id`; `reason` says why.
 *
 * @since 0.2.0
 * @category errors
 */
export class UneditableCheckpoint extends Schema.TaggedError<UneditableCheckpoint>()("UneditableCheckpoint", {
  id: Schema.String,
  index: Schema.Number,
  reason: Schema.String
}) {
  override get message() {
    return `checkpoint ${this.index} of run "${this.id}" cannot be edited: ${this.reason}`
  }
}

/**
 * Why a run's log could not be read as a history.
 *
 * @since 0.2.0
 * @category errors
 */
export type ReadError = CheckpointError | InvalidRunId | UnknownRun

/**
 * Every entry of run `id` in the `Checkpointer` in context, oldest first,
 * without taking its lease; {@link UnknownRun} when it has none.
 *
 * @since 0.2.0
 * @category reading
 */
export const read = (id: string): Effect.Effect<ReadonlyArray<string>, ReadError, Checkpointer> =>
  Effect.flatMap(Checkpointer, (checkpointer) => checkpointer.read(id)).pipe(
    Effect.filterOrFail((entries) => entries.length > 0, () => new UnknownRun({ id }))
  )

/**
 * The checkpoint `index` of run `id`, which has `count`: `index` itself, or
 * counted from the end when negative (`-1` for the last, as `Array.at`
 * counts); {@link CheckpointNotFound} when there is none.
 *
 * @example
 * ```ts
 * import { RunHistory } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // A run with 5 checkpoints: -1 is the last, 7 is none of them.
 * console.log(Effect.runSync(RunHistory.checkIndex("run-1", 5, -1))) // 4
 * const missing = Effect.runSync(Effect.flip(RunHistory.checkIndex("run-1", 5, 7)))
 * console.log(missing._tag) // CheckpointNotFound
 * ```
 *
 * @since 0.2.0
 * @category reading
 */
export const checkIndex = (id: string, count: number, index: number): Effect.Effect<number, CheckpointNotFound> => {
  const at = index < 0 ? count + index : index
  return Number.isInteger(at) && at >= 0 && at < count
    ? Effect.succeed(at)
    : Effect.fail(new CheckpointNotFound({ id, index, count }))
}

/**
 * Starts run `to` from a checkpoint of run `from`: opens `from` with
 * `fingerprint` (so a fork is only made with the options of the run it forks,
 * and reads a log no executor is appending to), hands its entries to `entries`
 * for the ones the fork starts with, then opens `to` with the same fingerprint
 * and appends them, all at once. `from` is not changed; `to` must have no
 * checkpoint yet ({@link RunExists}). Both leases are held until it is done.
 *
 * @since 0.2.0
 * @category forking
 */
export const fork = <E, R>(options: {
  readonly from: string
  readonly to: string
  readonly fingerprint: RunFingerprint.Fingerprint
  readonly entries: (recorded: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, E, R>
}): Effect.Effect<void, OpenError | UnknownRun | RunExists | E, Checkpointer | R> =>
  Effect.scoped(Effect.gen(function*() {
    const { from, to, fingerprint } = options
    if (from === to) return yield* new RunExists({ id: to })
    const checkpointer = yield* Checkpointer
    // Reading first: opening a run never recorded would record its fingerprint.
    yield* read(from)
    const source = yield* checkpointer.open(from, fingerprint)
    const entries = yield* options.entries(source.entries)
    const target = yield* checkpointer.open(to, fingerprint)
    if (target.entries.length > 0) return yield* new RunExists({ id: to })
    yield* target.append(entries)
  }))
