/**
 * A durable run's records in the order of its course (see `DurableHistory`):
 * what each record is, from its name (see `StepName`); the order the run
 * wrote them in, by their place (`seq`), the records written before they
 * were stamped first, by turn; and which of them are checkpoints.
 *
 * @internal
 */
import * as RunHistory from "@agentloop/core/RunHistory"
import * as Effect from "effect/Effect"
import { RunStore } from "../RunStore.ts"
import type { IssuedApproval, RunKey, RunStoreError, Stamp } from "../RunStore.ts"
import * as StepName from "../StepName.ts"

/** What a record of the run is: a step of a kind `StepName` parses, a call that started, or a step it does not know. */
export type RecordKind = StepName.Parsed["kind"] | "started" | "other"

/** A record of the run: what it is, its turn and position there, its body, and its place in the run's course. */
export interface CourseRecord {
  readonly kind: RecordKind
  readonly name: string
  readonly step: number
  readonly index: number
  readonly body: string
  readonly stamp: Stamp | undefined
}

const courseRecord = (name: string, body: string, stamp: Stamp | undefined, claim: boolean): CourseRecord => {
  const parsed = StepName.parse(name)
  if (parsed === undefined) return { kind: "other", name, step: 0, index: 0, body, stamp }
  // A fork's checkpoint comes after its own records, which share its place.
  if (parsed.kind === "fork") return { kind: "fork", name, step: Number.MAX_SAFE_INTEGER, index: 0, body, stamp }
  return { kind: claim ? "started" : parsed.kind, name, step: parsed.step, index: parsed.index, body, stamp }
}

/** Within a turn of the run's course: the turn, then its calls' starts and ends, then its decision, then a fork. */
const phase: Record<RecordKind, number> = {
  start: 0,
  input: 0,
  other: 0,
  turn: 1,
  started: 2,
  tool: 3,
  decide: 4,
  edited: 5,
  fork: 6
}

/**
 * The run's course: records written before they were stamped first (by turn,
 * then phase), then by their place; a fork's own records share its place,
 * and come before its checkpoint.
 */
const byCourse = (a: CourseRecord, b: CourseRecord): number =>
  (a.stamp === undefined ? 0 : 1) - (b.stamp === undefined ? 0 : 1) ||
  (a.stamp?.seq ?? 0) - (b.stamp?.seq ?? 0) ||
  a.step - b.step ||
  phase[a.kind] - phase[b.kind] ||
  a.index - b.index

/** A run's records in the order of its course, which of them are checkpoints, and its approvals. */
export interface Course {
  readonly records: ReadonlyArray<CourseRecord>
  /** The position in `records` of each checkpoint. */
  readonly checkpoints: ReadonlyArray<number>
  readonly approvals: ReadonlyArray<IssuedApproval>
}

/** The course of `run`, in one read; `UnknownRun` when it has no checkpoint. */
export const read = (run: RunKey): Effect.Effect<Course, RunStoreError | RunHistory.UnknownRun, RunStore> =>
  Effect.gen(function*() {
    const recorded = yield* (yield* RunStore).records(run)
    const records = [
      ...recorded.steps.map((step) => courseRecord(step.name, step.body, step.stamp, false)),
      ...recorded.claims.map((claim) => courseRecord(claim.call, "", claim.stamp, true))
    ].sort(byCourse)
    // A fork's own records (its edited decision, its calls cut off) are folded into its checkpoint.
    const marks = new Set(
      records.flatMap((record) => record.kind === "fork" && record.stamp !== undefined ? [record.stamp.seq] : [])
    )
    const ownOfFork = (record: CourseRecord) => record.stamp !== undefined && marks.has(record.stamp.seq)
    const checkpoints = records.flatMap((record, position) =>
      record.kind === "fork" ||
        ((record.kind === "turn" || record.kind === "started" || record.kind === "tool" || record.kind === "decide") &&
          !ownOfFork(record))
        ? [position]
        : []
    )
    if (checkpoints.length === 0) return yield* new RunHistory.UnknownRun({ id: run.runId })
    return { records, checkpoints, approvals: recorded.approvals }
  })
