/**
 * What every test project shares: the workspace's packages resolve to their
 * TypeScript sources (the `@agentloop/source` export condition), not to their
 * builds, so tests need no build and always test the code as it is.
 */
import { defaultServerConditions } from "vite"

// Vite's `module` condition picks bundler-only entry points (such as
// `@opentelemetry/api`'s extensionless ESM build), which Node cannot load once
// vitest leaves the dependency to it.
const conditions = ["@agentloop/source", ...defaultServerConditions.filter((condition) => condition !== "module")]

export const sources = { resolve: { conditions }, ssr: { resolve: { conditions } } }

// How many test files run at once, in the whole run: the projects share one pool of workers (vitest runs projects of
// the same `sequence.groupOrder` together, with the `maxWorkers` they all name). Much of the suite waits (child
// processes, a browser, sockets, real-time servers): with two workers on a two-core machine, the cores' time went
// partly idle while both files waited. Three keep them busy with less contention than four (the whole suite on a
// fresh clone, the machine otherwise idle: 2 workers 101 s wall, 171 s CPU; 4 workers 111 s, 210 s; 3 workers
// 92-99 s, 170-183 s).
export const maxWorkers = 3

// With more files than cores at once, a test that computes for a second or two (a stream split at every byte, say)
// can take several on a busy machine, and one that runs a durable runner on a real database, or talks to processes
// that load the sources, more: the limit only ends a test that hangs.
export const testTimeout = 30_000
