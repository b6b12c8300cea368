/**
 * What a step program adds to the work it runs, against the same work done
 * with plain Effect, in the same run:
 *
 * - a `run` step: 1,000 of them in sequence in one program (a loop of one
 *   iteration whose steps they are), against `Effect.sync` in a loop; and one
 *   program of one `run` step, executed 2,000 times (with `Step.execute`'s own
 *   cost: the context, the frame), against `Effect.sync`;
 * - a 3-way `fork` (`all`): one program of it, executed 2,000 times, against
 *   `Effect.all` of the three effects with unbounded concurrency;
 * - a long `loop`: the time per iteration of the first 1,000 of 50,000
 *   iterations against the last 1,000's, in one run (the ratio is 1 when an
 *   iteration costs the same however many came before), and the heap after
 *   1,000 and after 50,000 iterations.
 *
 * The work is tiny on purpose (an addition), so the ratios are the machinery's
 * cost per step; a model turn or a tool call costs milliseconds.
 */
import { Step, Until } from "@agentloop/core"
import { Effect } from "effect"
import { performance } from "node:perf_hooks"
import { compare, heapUsedMiB } from "./measure.ts"

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

const iterations = 50_000
const window = 1_000

/**
 * One run of a loop of `iterations` iterations of one `run` step: when the
 * first and the last `window` iterations started and ended, or (with `heap`)
 * the heap after the first `window` and after the last iteration.
 */
const longLoop = async (heap: boolean): Promise<ReadonlyArray<number>> => {
  const marks: Array<number> = []
  const mark = () => marks.push(heap ? heapUsedMiB() : performance.now())
  const tick = Step.run({
    id: "tick",
    execute: (n: number) => {
      if (n === window || n === iterations - window || n === iterations - 1) mark()
      return n + 1
    }
  })
  const long = Step.loop({ id: "long", steps: [tick], until: Until.maxSteps(iterations), maxIterations: iterations })
  if (!heap) mark()
  await Effect.runPromise(Effect.asVoid(Step.execute(long, 0)))
  return marks
}

await longLoop(false) // warm-up
const rounds: Array<readonly [number, number]> = []
for (let round = 0; round < 5; round++) {
  const [start, firstEnd, lastStart, lastEnd] = await longLoop(false)
  rounds.push([(firstEnd! - start!) * 1000 / window, (lastEnd! - lastStart!) * 1000 / (window - 1)])
}
const medianOf = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const firstWindow = medianOf(rounds.map(([early]) => early))
const lastWindow = medianOf(rounds.map(([, late]) => late))
const [heapEarly, , heapLate] = await longLoop(true)
console.log(`\nloop: one program of a loop of ${iterations.toLocaleString("en-US")} iterations of one run step`)
console.log(
  `  first ${window.toLocaleString("en-US")} iterations${" ".repeat(22)} ${
    firstWindow.toFixed(2).padStart(8)
  } µs/iteration`
)
console.log(
  `  last ${window.toLocaleString("en-US")} iterations${" ".repeat(23)} ${
    lastWindow.toFixed(2).padStart(8)
  } µs/iteration  ${(lastWindow / firstWindow).toFixed(2)}x the first's time`
)
console.log(
  `  heap after ${window.toLocaleString("en-US")} iterations: ${heapEarly!.toFixed(1)} MiB; after ${
    iterations.toLocaleString("en-US")
  }: ${heapLate!.toFixed(1)} MiB`
)
