/**
 * Runs every benchmark in turn: `npm run bench`.
 */
const suites = [
  "./loop.ts",
  "./uiStream.ts",
  "./agent.ts",
  "./steps.ts",
  "./checkpoint.ts",
  "./durable.ts",
  "./gemini.ts",
  "./responses.ts",
  "./anthropic.ts"
]

for (const suite of suites) await import(suite)
