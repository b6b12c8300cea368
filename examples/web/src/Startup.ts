/**
 * What the web demo prints when it cannot start: what failed, and what to do
 * about it (a port that is taken, or that needs privileges, besides the
 * terminal demo's settings and keys).
 */
import * as TerminalStartup from "@agentloop/example-terminal/Startup"
import { Predicate } from "effect"
import { HttpServerError } from "effect/http"

const codeOf = (cause: unknown): string | undefined =>
  Predicate.hasProperty(cause, "code") && typeof cause.code === "string" ? cause.code : undefined

/** One line for a web demo that could not start, saying what failed and what to do. */
export const explain = (error: unknown): string => {
  if (!(error instanceof HttpServerError.ServeError)) return TerminalStartup.explain(error)
  const port = Predicate.hasProperty(error.cause, "port") ? String(error.cause.port) : "its port"
  const where = `127.0.0.1:${port}`
  switch (codeOf(error.cause)) {
    case "EADDRINUSE":
      return `${where} is already in use by another program: stop it, or choose a free port with AGENTLOOP_WEB_PORT=<port>`
    case "EACCES":
      return `listening on ${where} needs privileges: choose a port above 1023 with AGENTLOOP_WEB_PORT=<port>`
    default: {
      const cause = Predicate.hasProperty(error.cause, "message") ? String(error.cause.message) : String(error.cause)
      return `the server could not listen on ${where} (${cause}): choose another port with AGENTLOOP_WEB_PORT=<port>`
    }
  }
}
