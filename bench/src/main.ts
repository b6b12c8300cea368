/**
 * Runs every benchmark in turn: `npm run bench`.
 */
const suites = [
  "./loop.ts",
  "./agent.ts",
  "./steps.ts",
  "./checkpoint.ts",
  "./durable.ts",
  "./gemini.ts",
  "./responses.ts",
  "./anthropic.ts",
  "./chatCompletions.ts",
  "./mcp.ts"
]

for (const suite of suites) await import(suite)
