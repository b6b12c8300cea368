/**
 * Runs benchmarks: `npm run bench` runs the default suites, each printing its
 * ratios, then a summary of every ratio with its goal and the machine's load.
 * `npm run bench -- peers` (or any suite names, or file names of `src/`
 * without `.ts`, as `peerSteps`) runs those only; `scale` and `runners` are
 * heavy and run only when named.
 */
import { load, summary } from "./measure.ts"

const suites: Readonly<Record<string, ReadonlyArray<string>>> = {
  loop: ["./loop.ts"],
  stream: ["./uiStream.ts"],
  agent: ["./agent.ts"],
  steps: ["./steps.ts"],
  checkpoint: ["./checkpoint.ts", "./stepCheckpoint.ts"],
  retention: ["./retention.ts"],
  history: ["./history.ts", "./durableHistory.ts"],
  durable: ["./durable.ts"],
  providers: ["./gemini.ts", "./responses.ts", "./anthropic.ts", "./chatCompletions.ts"],
  mcp: ["./mcp.ts"],
  peers: ["./peerSteps.ts", "./peerAgent.ts", "./delivery.ts", "./peerDurable.ts"],
  scale: ["./scale.ts"],
  runners: ["./runners.ts"]
}

/** Run only when named: minutes each, and gigabytes for `scale`. */
const heavy = new Set(["scale", "runners"])

const modules = new Set(Object.values(suites).flat())
const resolve = (name: string): ReadonlyArray<string> | undefined =>
  suites[name] ?? (modules.has(`./${name}.ts`) ? [`./${name}.ts`] : undefined)

const named = process.argv.slice(2)
const unknown = named.filter((name) => resolve(name) === undefined)
if (unknown.length > 0) {
  console.error(`unknown suite ${unknown.join(", ")}; the suites are ${Object.keys(suites).join(", ")}`)
  process.exit(2)
}
const chosen = named.length > 0 ? named : Object.keys(suites).filter((name) => !heavy.has(name))

console.log(`suites: ${chosen.join(", ")} · load ${load().toFixed(2)} on ${navigator.hardwareConcurrency} cores`)
for (const name of chosen) {
  for (const module of resolve(name) ?? []) await import(module)
}

const cell = (text: string) => text.replaceAll("|", "/")
const rows = summary()
if (rows.length > 0) {
  console.log("\nSummary: ratio = agentloop's time over the peer's; load = 1-minute load average when measured\n")
  console.log("| case | agentloop | peer | ratio | goal | load |")
  console.log("|---|---|---|---|---|---|")
  for (const row of rows) {
    const ratio = row.ratio === undefined ? "" : `${row.ratio.toFixed(2)}x`
    const verdict = row.met === undefined ? "" : row.met ? " (met)" : " (NOT met)"
    console.log(
      `| ${cell(row.title)} | ${cell(row.subject)}: ${row.measured} | ${cell(row.peer)}${
        row.peerMeasured === "" ? "" : `: ${row.peerMeasured}`
      } | ${ratio} | ${cell(row.goal)}${verdict} | ${row.load.toFixed(2)} |`
    )
  }
}
