/**
 * Each execution's context as a ledger last wrote it: what the next entry's
 * item log is a change from (a context is written as what changed), and the
 * books a turn's accounting is told against (see `replay.ts`).
 *
 * @internal
 */
import * as AgentCheckpoint from "../../agent/AgentCheckpoint.ts"
import type * as Entries from "./entries.ts"
import type { Execution } from "./execution.ts"
import * as Replay from "./replay.ts"

/** A context to write: its state is checked to be JSON when it is written. */
export type Unchecked = Omit<Entries.Context, "state"> & { readonly state?: unknown }

/** The contexts a ledger wrote last, one for each execution. */
export interface Written {
  /**
   * The context of `execution` to write now, its item log as a change from
   * the one written before: from then on, the one written.
   */
  readonly context: (execution: Execution<unknown>) => Unchecked
  /** The item log and books of execution `execution` as last written (none before its first entry). */
  readonly before: (execution: string) => Replay.Before
}

/** The contexts written, starting from `contexts`: each execution's as the ledger's entries left it. */
export const make = (contexts: ReadonlyMap<string, Replay.Before>): Written => {
  const written = new Map(contexts)
  return {
    context: (execution) => {
      const items = execution.itemLog.items
      const state = execution.getState()
      const context: Unchecked = {
        log: AgentCheckpoint.change(written.get(execution.id)?.items ?? [], items),
        ...(state === undefined ? {} : { state }),
        tokens: execution.tokens,
        cost: execution.cost,
        stepCount: execution.stepCount,
        turns: execution.turns,
        spawns: Object.fromEntries(execution.spawns),
        lastStepMeta: execution.lastStepMeta,
        errors: execution.errors
      }
      written.set(execution.id, { items, tokens: execution.tokens, cost: execution.cost })
      return context
    },
    before: (execution) => written.get(execution) ?? Replay.nothingBefore
  }
}
