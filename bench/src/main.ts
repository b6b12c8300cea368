/**
 * Runs every benchmark in turn: `npm run bench`.
 */
const suites = ["./loop.ts", "./agent.ts", "./gemini.ts", "./responses.ts", "./durable.ts"]

for (const suite of suites) await import(suite)
