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
