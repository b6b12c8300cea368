/**
 * The loop primitive against hand-written streams doing the same work.
 *
 * - baseline: `Stream.flatMap` over one `Stream.make` per iteration, the floor
 *   for any design that builds one stream per iteration;
 * - `Stream.unfold`: the same counter with no per-iteration stream at all;
 * - `loop` + `nextAfter(Stream.make(n), n + 1)`: the primitive as users write it;
 * - `loop` + a naive `nextAfter` (`Stream.concat(Stream.map(values, value), Stream.succeed(next))`):
 *   what the helper costs when built from stock combinators.
 */
import { Loop } from "@agentloop/core"
import { Effect, Stream } from "effect"
import { compare, heapUsedMiB } from "./measure.ts"

const iterations = 200_000

const run = <A, E>(stream: Stream.Stream<A, E>) => () => Effect.runPromise(Stream.runDrain(stream))

const naiveNextAfter = <A, S>(values: Stream.Stream<A>, state: S): Stream.Stream<Loop.Event<A, S>> =>
  Stream.concat(Stream.map(values, Loop.value), Stream.succeed<Loop.Event<A, S>>(Loop.next(state)))

await compare({
  title: `loop: ${iterations.toLocaleString("en-US")} iterations, one value each`,
  units: iterations,
  unit: "iteration",
  baseline: {
    name: "Stream.flatMap over Stream.make (floor)",
    run: run(Stream.range(0, iterations - 1).pipe(Stream.flatMap((n) => Stream.make(n))))
  },
  cases: [
    {
      name: "Stream.unfold (no stream per iteration)",
      run: run(Stream.unfold(0, (n) => Effect.succeed(n < iterations ? [n, n + 1] as const : undefined)))
    },
    {
      name: "loop + nextAfter(Stream.make(n), n + 1)",
      run: run(Loop.loop(0, (n) => n < iterations ? Loop.nextAfter(Stream.make(n), n + 1) : Loop.stop))
    },
    {
      name: "loop + naive concat/map nextAfter",
      run: run(Loop.loop(0, (n) => n < iterations ? naiveNextAfter(Stream.make(n), n + 1) : Loop.stop))
    },
    {
      name: "loop + Effect body with a finalizer",
      run: run(Loop.loop(0, (n) =>
        Effect.as(
          Effect.addFinalizer(() => Effect.void),
          n < iterations ? Loop.nextAfter(Stream.make(n), n + 1) : Loop.stop
        )))
    }
  ]
})

// Memory: a million iterations of each kind must not grow the heap (the suite checks them at 10,000 for correctness).
const million = 1_000_000

const heapGrowth = async (name: string, stream: Stream.Stream<unknown>) => {
  const before = heapUsedMiB()
  await Effect.runPromise(Stream.runDrain(stream))
  const after = heapUsedMiB()
  console.log(
    `  heap after ${million.toLocaleString("en-US")} ${name}: ${before.toFixed(1)} MiB -> ${after.toFixed(1)} MiB (${
      (after - before).toFixed(2)
    } MiB growth)`
  )
}

await heapGrowth("iterations", Loop.loop(0, (n) => n < million ? Loop.nextAfter(Stream.make(n), n + 1) : Loop.stop))
await heapGrowth(
  "silent iterations",
  Loop.loop(0, (n) => n < million ? Loop.nextAfter(Stream.empty, n + 1) : Loop.stopAfter(Stream.make(n)))
)
await heapGrowth(
  "scoped bodies",
  Loop.loop(
    0,
    (n) =>
      Effect.as(Effect.addFinalizer(() => Effect.void), n < million ? Loop.nextAfter(Stream.empty, n + 1) : Loop.stop)
  )
)
