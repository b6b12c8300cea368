/**
 * What a demo prints when it cannot start: what failed, and what to do about it.
 */
import { Config, Predicate } from "effect"
import { McpClientError } from "effect/ai"
import { MissingApiKey } from "./Provider.ts"

/** The settings the demos read from the environment, and what each must be. */
const settings =
  "AGENTLOOP_PROVIDER is mock, responses, gemini, anthropic or chat-completions; AGENTLOOP_WEB_PORT is a port number"

/** An error's tag and message, whichever it has, or its text. */
const describe = (error: unknown): string => {
  const tag = Predicate.hasProperty(error, "_tag") && typeof error._tag === "string" ? error._tag : undefined
  const message = Predicate.hasProperty(error, "message") && typeof error.message === "string" && error.message !== ""
    ? error.message
    : undefined
  if (tag !== undefined && message !== undefined) return `${tag}: ${message}`
  return message ?? tag ?? String(error)
}

/** One line for a demo that could not start, saying what failed and what to do. */
export const explain = (error: unknown): string => {
  if (error instanceof Config.ConfigError) {
    const problem = error.cause.message.replace(/\s*\n\s*/g, " ")
    return `a setting in the environment is not valid (${problem}): fix it or unset it (${settings})`
  }
  if (error instanceof MissingApiKey) {
    return `${error.message}: set it, or unset AGENTLOOP_PROVIDER to use the scripted model`
  }
  if (McpClientError.isMcpClientError(error)) {
    return `${error.message}: check the --mcp command, which must start an MCP server on standard input and output`
  }
  return `${describe(error)} (this is a bug of the demo: please report it with this message)`
}
