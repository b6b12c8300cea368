/**
 * What the parts of a run store (see `RunStore`) share: what their statements
 * read of a run and of its steps, the rows a run's steps are written as, and
 * how a part fails.
 *
 * The store's own models (`RunStore.RunKey`, `RunStore.StepRecord`, its
 * schemas and error) live in `RunStore`, which builds its service from these
 * parts, so the parts cannot import them: they name only the fields they
 * read, and are handed the store's schemas and failure.
 *
 * @internal
 */

/** A run, by the columns its rows are keyed on: the agent's name and the run's id. */
export interface Run {
  readonly agent: string
  readonly runId: string
}

/** A record's place in its run's course, and when it was written (epoch milliseconds). */
export interface Stamp {
  readonly seq: number
  readonly at: number
}

/** A step to write: its name, its JSON `body`, and its {@link Stamp} if it has one. */
export interface Step {
  readonly name: string
  readonly body: string
  readonly stamp?: Stamp | undefined
}

/** The store's failure of `operation`, from what went wrong. */
export type Fail<E> = (operation: string) => (error: { readonly message: string }) => E

/** The rows of the steps `records` of `run`, as its table of steps holds them. */
export const stepRows = (run: Run, records: ReadonlyArray<Step>) =>
  records.map((record): Record<string, unknown> => ({
    agent: run.agent,
    run_id: run.runId,
    name: record.name,
    body: record.body,
    seq: record.stamp?.seq ?? null,
    recorded_at: record.stamp?.at ?? null
  }))
