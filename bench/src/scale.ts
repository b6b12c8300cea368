/**
 * Runs at scale, in one process, on the mock model (`npm run bench -- scale`:
 * a few minutes and several GiB; `AGENTLOOP_BENCH_SCALE_RUNS` sets the count,
 * 100,000 by default). Each run is two turns of `agentScript.ts`: a call of
 * `add`, then the answer; every run's first model request waits at a gate of
 * its own (one `Deferred` shared by all would make interrupting them quadratic:
 * each interrupted waiter is spliced out of the one array of waiters), so all
 * of them are in flight at once. Three rounds, each:
 *
 * - start every run and wait until all wait at the gate: the heap per run in
 *   flight (issue 20: at most 20 KiB);
 * - open the gate: the time until every run has finished;
 * - start them all again, and interrupt them all once they wait: the time
 *   until every one has ended (issue 20: under 2 s);
 * - the heap after the round, which must not grow from round to round.
 *
 * Then 10,000 runs of agentloop and of the AI SDK's `streamText` (the same
 * two turns from its mock model, interrupted through `abortSignal`), side by
 * side, once each.
 */
import { AgentLoop, LanguageModel } from "@agentloop/core"
import type { AgentEvent } from "@agentloop/core"
import { Deferred, Effect, Exit, Fiber, Layer, ManagedRuntime, Stream } from "effect"
import { performance } from "node:perf_hooks"
import { checkResult, deltasFor, options, resultsIn } from "./agentScript.ts"
import * as AiSdk from "./aiSdkModel.ts"
import { heapUsedMiB, record } from "./measure.ts"

const runs = Number(process.env["AGENTLOOP_BENCH_SCALE_RUNS"] ?? 100_000)
const peers = Math.min(runs, 10_000)
const turns = 2
const rounds = 3

/** Counts arrivals at the gate, resolving `all` once `expected` have come. */
const arrivals = (expected: number) => {
  let count = 0
  let resolve = () => {}
  const all = new Promise<void>((done) => (resolve = done))
  return {
    all,
    arrive: () => {
      if (++count === expected) resolve()
    }
  }
}

/** The gates of the runs waiting in their first model request, one each. */
let gates: Array<Deferred.Deferred<void>> = []
let waiting = arrivals(0)

const model = Layer.succeed(LanguageModel.LanguageModel, {
  provider: "bench",
  streamTurn: (history) => {
    const results = resultsIn(history)
    const deltas = Stream.fromIterable(deltasFor(results, turns))
    if (results > 0) return deltas
    return Stream.unwrap(Effect.suspend(() => {
      const gate = Deferred.makeUnsafe<void>()
      gates.push(gate)
      waiting.arrive()
      return Effect.as(Deferred.await(gate), deltas)
    }))
  }
})
const runtime = ManagedRuntime.make(AgentLoop.layer.pipe(Layer.provide(model)))
const run = AgentLoop.AgentLoop.use((agent) => agent.run({ ...options, limits: { maxTurns: turns + 1 } }))

const kib = (mib: number, count: number) => (mib * 1024) / count
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`

/**
 * Starts a stopwatch of wall time and of this process's CPU time: on a shared
 * machine the second says how much of the first the process had the CPU.
 */
const stopwatch = () => {
  const wall = performance.now()
  const cpu = process.cpuUsage()
  return () => {
    const used = process.cpuUsage(cpu)
    return { ms: performance.now() - wall, cpuMs: (used.user + used.system) / 1000 }
  }
}
const timing = (t: { readonly ms: number; readonly cpuMs: number }) => `${seconds(t.ms)} (${seconds(t.cpuMs)} of CPU)`
const rssMiB = () => process.memoryUsage().rss / 1024 / 1024

/** Starts `count` runs and waits until all wait at their gates; returns their fibers and the heap they hold. */
const startAll = async (count: number) => {
  gates = []
  waiting = arrivals(count)
  const before = heapUsedMiB()
  const started = performance.now()
  const fibers: Array<Fiber.Fiber<AgentEvent.RunResult, unknown>> = []
  for (let i = 0; i < count; i++) fibers.push(runtime.runFork(run))
  await waiting.all
  const startedMs = performance.now() - started
  const heap = heapUsedMiB() - before
  return { fibers, startedMs, heapPerRun: kib(heap, count), rss: rssMiB() }
}

/** A round: `count` runs finished, then `count` runs interrupted; the fibers are dropped when it returns. */
const agentloopRound = async (count: number) => {
  const { fibers, ...inFlight } = await startAll(count)
  const finishing = stopwatch()
  for (const gate of gates) Deferred.doneUnsafe(gate, Exit.void)
  const results = await runtime.runPromise(Fiber.joinAll(fibers))
  const finish = finishing()
  for (const result of results) checkResult(result, turns)
  const interrupted = await startAll(count)
  const stopping = stopwatch()
  await runtime.runPromise(Fiber.interruptAll(interrupted.fibers))
  const interrupt = stopping()
  gates = []
  return { ...inFlight, finish, interrupt }
}

const aiSdkRound = async (count: number) => {
  let open = () => {}
  let arrived = arrivals(count)
  let opened = new Promise<void>((resolve) => (open = resolve))
  const before = heapUsedMiB()
  const started = performance.now()
  const done = Array.from({ length: count }, () => AiSdk.streamRun({ turns, gate: opened, onStream: arrived.arrive }))
  await arrived.all
  const startedMs = performance.now() - started
  const heapPerRun = kib(heapUsedMiB() - before, count)
  const rss = rssMiB()
  const finishing = stopwatch()
  open()
  await Promise.all(done)
  const finish = finishing()
  arrived = arrivals(count)
  opened = new Promise<void>((resolve) => (open = resolve))
  const controllers = Array.from({ length: count }, () => new AbortController())
  const aborted = controllers.map((controller) =>
    AiSdk.streamRun({ turns, gate: opened, onStream: arrived.arrive, abortSignal: controller.signal })
  )
  await arrived.all
  const stopping = stopwatch()
  for (const controller of controllers) controller.abort()
  await Promise.allSettled(aborted)
  const interrupt = stopping()
  open()
  return { startedMs, heapPerRun, rss, finish, interrupt }
}

const title = `at scale: ${runs.toLocaleString("en-US")} concurrent runs of ${turns} turns in one process, mock model`
console.log(`\n${title}`)
const baseline = heapUsedMiB()
console.log(`  heap before: ${baseline.toFixed(1)} MiB`)
const measured: Array<Awaited<ReturnType<typeof agentloopRound>> & { readonly heapAfter: number }> = []
for (let round = 1; round <= rounds; round++) {
  const r = { ...await agentloopRound(runs), heapAfter: heapUsedMiB() }
  measured.push(r)
  console.log(
    `  round ${round}: all in flight after ${seconds(r.startedMs)}, ${r.heapPerRun.toFixed(1)} KiB heap per run, RSS ${
      r.rss.toFixed(0)
    } MiB; finished in ${timing(r.finish)}; all interrupted in ${timing(r.interrupt)}; heap after ${
      r.heapAfter.toFixed(1)
    } MiB`
  )
}
const last = measured.at(-1)!
const worst = (pick: (r: (typeof measured)[number]) => number) => Math.max(...measured.map(pick))
const growth = last.heapAfter - measured[0]!.heapAfter
const row = { title: `at scale, ${runs.toLocaleString("en-US")} runs`, peer: "", peerMeasured: "", ratio: undefined }
record({
  ...row,
  subject: "heap per run in flight (worst round)",
  measured: `${worst((r) => r.heapPerRun).toFixed(1)} KiB`,
  goal: "≤ 20 KiB (issue 20; 29.8 KiB quoted)",
  met: worst((r) => r.heapPerRun) <= 20
})
record({
  ...row,
  subject: "time to finish all (worst round)",
  measured: seconds(worst((r) => r.finish.ms)),
  goal: "none (for reference)",
  met: undefined
})
record({
  ...row,
  subject: "time to interrupt all (worst round)",
  measured: `${seconds(worst((r) => r.interrupt.ms))} (${seconds(worst((r) => r.interrupt.cpuMs))} of CPU)`,
  goal: "< 2 s (issue 20)",
  met: worst((r) => r.interrupt.ms) < 2000
})
record({
  ...row,
  subject: `heap growth from round 1 to round ${rounds}`,
  measured: `${growth.toFixed(1)} MiB`,
  goal: "no growth (issue 20): under 1 MiB",
  met: growth < 1
})

console.log(`\nat scale: ${peers.toLocaleString("en-US")} concurrent runs, agentloop and the AI SDK's streamText`)
const ours = await agentloopRound(peers)
const theirs = await aiSdkRound(peers)
for (const [name, r] of [["agentloop AgentLoop.run", ours], ["AI SDK streamText", theirs]] as const) {
  console.log(
    `  ${name.padEnd(24)} in flight after ${seconds(r.startedMs)}, ${r.heapPerRun.toFixed(1)} KiB heap per run, RSS ${
      r.rss.toFixed(0)
    } MiB; finished in ${timing(r.finish)}; interrupted in ${timing(r.interrupt)}`
  )
}
const peerRow = { title: `at scale, ${peers.toLocaleString("en-US")} runs`, peer: "AI SDK streamText" }
record({
  ...peerRow,
  subject: "agentloop: time to finish all",
  measured: timing(ours.finish),
  peerMeasured: timing(theirs.finish),
  ratio: ours.finish.ms / theirs.finish.ms,
  goal: "none (for reference; 4.3 s vs 183 s quoted)",
  met: undefined
})
record({
  ...peerRow,
  subject: "agentloop: heap per run in flight",
  measured: `${ours.heapPerRun.toFixed(1)} KiB`,
  peerMeasured: `${theirs.heapPerRun.toFixed(1)} KiB`,
  ratio: ours.heapPerRun / theirs.heapPerRun,
  goal: "none (for reference)",
  met: undefined
})
record({
  ...peerRow,
  subject: "agentloop: time to interrupt all",
  measured: timing(ours.interrupt),
  peerMeasured: timing(theirs.interrupt),
  ratio: ours.interrupt.ms / theirs.interrupt.ms,
  goal: "none (for reference; 348 ms vs 3.7 s quoted)",
  met: undefined
})
await runtime.dispose()
