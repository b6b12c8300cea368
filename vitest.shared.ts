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

// Every project runs its files on this many workers, all projects at once (vitest's default is one
// worker fewer than the cores: one, on a two-core machine, which ran every file of the suite one
// after another). Much of the suite waits (child processes, a browser, sockets, real-time servers),
// so more workers than cores keep both cores busy.
export const maxWorkers = 2
