/**
 * A small benchmark harness: every case does the same amount of work, cases run
 * interleaved for several rounds, and the median rate of each is printed with
 * its ratio to the baseline measured in the same run (absolute times on a shared
 * machine mean little; ratios do).
 *
 * A comparison may name ratios to report on their own, each between two of its
 * cases and with the goal it is held to (issue 20's goals); every ratio is kept
 * for the summary that `main.ts` prints at the end, with the machine's load
 * when it was measured.
 */
import * as Os from "node:os"
import { performance } from "node:perf_hooks"

export interface Case {
  readonly name: string
  /** Does the whole workload once. */
  readonly run: () => Promise<void>
}

/** The most a ratio may be to meet its goal, and where the goal comes from. */
export interface Goal {
  readonly atMost: number
  readonly source: string
}

/** A ratio to report: the time of case `of` over the time of case `to`, both of the same comparison. */
export interface Ratio {
  readonly of: string
  readonly to: string
  readonly goal?: Goal | undefined
  /** Said of a ratio with no goal (what was quoted before, say). */
  readonly note?: string | undefined
}

export interface Comparison {
  readonly title: string
  /** What the summary calls it (default: the title). */
  readonly label?: string | undefined
  /** How many units one run of a case processes, and what a unit is called. */
  readonly units: number
  readonly unit: string
  readonly baseline: Case
  readonly cases: ReadonlyArray<Case>
  readonly rounds?: number
  readonly ratios?: ReadonlyArray<Ratio>
}

/** A line of the summary: a measured ratio, or a measured figure with no peer. */
export interface Row {
  readonly title: string
  readonly subject: string
  /** What the subject measured, with its unit (`12.3 µs/turn`). */
  readonly measured: string
  readonly peer: string
  readonly peerMeasured: string
  /** The subject's time over the peer's, when there is a peer. */
  readonly ratio: number | undefined
  readonly goal: string
  readonly met: boolean | undefined
  /** The 1-minute load average when it was measured. */
  readonly load: number
}

const rows: Array<Row> = []

/** Every row recorded so far, in order. */
export const summary = (): ReadonlyArray<Row> => rows

/** The machine's 1-minute load average. */
export const load = (): number => Os.loadavg()[0] ?? Number.NaN

const describeGoal = (ratio: Ratio): string =>
  ratio.goal === undefined
    ? `none (${ratio.note ?? "for reference"})`
    : `≤ ${ratio.goal.atMost}x (${ratio.goal.source})`

/** Records a row for the summary, and prints it under the comparison it belongs to. */
export const record = (row: Omit<Row, "load">): void => {
  const full = { ...row, load: load() }
  rows.push(full)
  const verdict = full.met === undefined ? "" : full.met ? "  met" : "  NOT met"
  const ratio = full.ratio === undefined ? `: ${full.measured}` : ` = ${full.ratio.toFixed(2)}x ${full.peer}`
  console.log(`  → ${full.subject}${ratio}; goal ${full.goal}${verdict}`)
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

const format = (rate: number): string => rate.toLocaleString("en-US", { maximumFractionDigits: 0 })

/** Microseconds per unit at `rate` units per second, as printed. */
export const perUnit = (rate: number, unit: string): string => `${(1e6 / rate).toFixed(2)} µs/${unit}`

/** Runs the comparison and prints one line per case; returns the median rate of each case by name. */
export const compare = async (comparison: Comparison): Promise<ReadonlyMap<string, number>> => {
  const all = [comparison.baseline, ...comparison.cases]
  for (const ratio of comparison.ratios ?? []) {
    for (const name of [ratio.of, ratio.to]) {
      if (!all.some((c) => c.name === name)) throw new Error(`${comparison.title}: no case is named ${name}`)
    }
  }
  const samples = new Map<string, Array<number>>(all.map((c) => [c.name, []]))
  for (const c of all) await c.run() // warm-up
  for (let round = 0; round < (comparison.rounds ?? 5); round++) {
    for (const c of all) {
      const start = performance.now()
      await c.run()
      samples.get(c.name)!.push(comparison.units / ((performance.now() - start) / 1000))
    }
  }
  const rates = new Map([...samples].map(([name, values]) => [name, median(values)]))
  const base = rates.get(comparison.baseline.name)!
  console.log(`\n${comparison.title}`)
  for (const c of all) {
    const rate = rates.get(c.name)!
    const micros = 1e6 / rate
    console.log(
      `  ${c.name.padEnd(44)} ${format(rate).padStart(12)} ${comparison.unit}/s  ${
        micros.toFixed(2).padStart(8)
      } µs/${comparison.unit}  ${(base / rate).toFixed(2)}x the baseline's time`
    )
  }
  for (const ratio of comparison.ratios ?? []) {
    const of = rates.get(ratio.of)!
    const to = rates.get(ratio.to)!
    const value = to / of
    record({
      title: comparison.label ?? comparison.title,
      subject: ratio.of,
      measured: perUnit(of, comparison.unit),
      peer: ratio.to,
      peerMeasured: perUnit(to, comparison.unit),
      ratio: value,
      goal: describeGoal(ratio),
      met: ratio.goal === undefined ? undefined : value <= ratio.goal.atMost
    })
  }
  return rates
}

/** Heap in use after a full collection (run node with --expose-gc), in MiB. */
export const heapUsedMiB = (): number => {
  globalThis.gc?.()
  return process.memoryUsage().heapUsed / 1024 / 1024
}
