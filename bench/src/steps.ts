/**
 * What a step program adds to the work it runs, against the same work done
 * with plain Effect, in the same run:
 *
 * - a `run` step: 1,000 of them in sequence in one program (a loop of one
 *   iteration whose steps they are), against `Effect.sync` in a loop; and one
 *   program of one `run` step, executed 2,000 times (with `Step.execute`'s own
 *   cost: the context, the frame), against `Effect.sync`;
 * - a 3-way `fork` (`all`): one program of it, executed 2,000 times, against
 *   `Effect.all` of the three effects with unbounded concurrency.
 *
 * The work is tiny on purpose (an addition), so the ratios are the machinery's
 * cost per step; a model turn or a tool call costs milliseconds.
 */
import { Step, Until } from "@agentloop/core"
import { Effect } from "effect"
import { compare } from "./measure.ts"

const work = (n: number) => n + 1

const sequence = 1_000
const runStep = Step.run({ id: "work", execute: work })
const steps = Array.from({ length: sequence }, (_, i) => Step.run({ id: `work-${i}`, execute: work }))
const [first, ...rest] = steps
const program = Step.loop({ id: "sequence", steps: [first!, ...rest], until: Until.maxSteps(1) })

await compare({
  title: `run step: ${sequence.toLocaleString("en-US")} run steps in sequence in one program`,
  units: sequence,
  unit: "step",
  baseline: {
    name: "Effect.sync in a loop (plain Effect)",
    run: () =>
      Effect.runPromise(Effect.gen(function*() {
        let n = 0
        for (let i = 0; i < sequence; i++) n = yield* Effect.sync(() => work(n))
      }))
  },
  rounds: 15,
  cases: [{
    name: "run steps in a loop's sequence",
    run: () => Effect.runPromise(Effect.asVoid(Step.execute(program, 0)))
  }]
})

const executions = 2_000

const times = <E>(effect: Effect.Effect<unknown, E>) => () =>
  Effect.runPromise(Effect.gen(function*() {
    for (let i = 0; i < executions; i++) yield* effect
  }))

const plainFork = Effect.all(
  [Effect.sync(() => work(1)), Effect.sync(() => work(2)), Effect.sync(() => work(3))],
  { concurrency: "unbounded" }
).pipe(Effect.map((results) => results.reduce((a, b) => a + b, 0)))

const fork = Step.fork({
  id: "three",
  mode: "all",
  paths: (_: number) => [runStep, Step.run({ id: "b", execute: work }), Step.run({ id: "c", execute: work })],
  merge: (results) => results.reduce((a, b) => a + b, 0)
})

await compare({
  title: `run step on its own: one program of one run step, executed ${executions.toLocaleString("en-US")} times`,
  units: executions,
  unit: "execution",
  rounds: 15,
  baseline: { name: "Effect.sync (plain Effect)", run: times(Effect.sync(() => work(1))) },
  cases: [{ name: "Step.execute(run step)", run: times(Step.execute(runStep, 1)) }]
})

await compare({
  title: `3-way fork: one program of one fork (all) of three run steps, executed ${
    executions.toLocaleString("en-US")
  } times`,
  units: executions,
  unit: "execution",
  rounds: 15,
  baseline: { name: "Effect.all of 3, unbounded (plain Effect)", run: times(plainFork) },
  cases: [{ name: "Step.execute(3-way fork, all)", run: times(Step.execute(fork, 1)) }]
})
