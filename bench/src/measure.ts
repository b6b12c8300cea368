/**
 * A small benchmark harness: every case does the same amount of work, cases run
 * interleaved for several rounds, and the median rate of each is printed with
 * its ratio to the baseline measured in the same run (absolute times on a shared
 * machine mean little; ratios do).
 */
import { performance } from "node:perf_hooks"

export interface Case {
  readonly name: string
  /** Does the whole workload once. */
  readonly run: () => Promise<void>
}

export interface Comparison {
  readonly title: string
  /** How many units one run of a case processes, and what a unit is called. */
  readonly units: number
  readonly unit: string
  readonly baseline: Case
  readonly cases: ReadonlyArray<Case>
  readonly rounds?: number
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

const format = (rate: number): string => rate.toLocaleString("en-US", { maximumFractionDigits: 0 })

/** Runs the comparison and prints one line per case; returns the median rate of each case by name. */
export const compare = async (comparison: Comparison): Promise<ReadonlyMap<string, number>> => {
  const all = [comparison.baseline, ...comparison.cases]
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
  return rates
}

/** Heap in use after a full collection (run node with --expose-gc), in MiB. */
export const heapUsedMiB = (): number => {
  globalThis.gc?.()
  return process.memoryUsage().heapUsed / 1024 / 1024
}
