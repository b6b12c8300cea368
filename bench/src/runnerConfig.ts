/**
 * What the fleet benchmark (`runners.ts`) tells each runner process it starts
 * (`runnerProcess.ts`), and the name of the agent they share.
 */
import { Schema } from "effect"

/** A runner's config: its name in the group, and the prefix of the group's tables. */
export const Config = Schema.Struct({ name: Schema.String, prefix: Schema.String })
export type Config = typeof Config.Type

/** The fleet's agent: runners define it with its tool, clients by its name alone. */
export const agentName = "fleet"
