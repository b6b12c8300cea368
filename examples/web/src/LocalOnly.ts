/**
 * What keeps a demo server to its own pages. It listens on the loopback
 * address and spends its provider's key on every run, so any site the person
 * visits meanwhile could use it: a page may post a form, or `fetch` with a
 * text body, to `127.0.0.1` without the browser asking anyone; and a name of
 * the site's own that resolves to `127.0.0.1` (DNS rebinding) makes it the
 * same origin as the server, so that the page reads the answers too. A request
 * that names another host than a loopback one, or comes from a page of
 * another origin than the server's, is refused with 403; a client that is no
 * page (curl, a test) sends no `Origin` and is answered.
 */
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"

const loopback = new Set(["127.0.0.1", "localhost", "[::1]"])

/** Whether a request with these headers named the server by a loopback name, from no page or one of its own. */
export const isLocal = (headers: Readonly<Record<string, string | undefined>>): boolean => {
  const host = headers["host"] ?? ""
  if (!URL.canParse(`http://${host}`)) return false
  const server = new URL(`http://${host}`)
  const origin = headers["origin"]
  return loopback.has(server.hostname) && (origin === undefined || origin === server.origin)
}

/** The guard, for every route of the router it is provided with. */
export const layer = HttpRouter.middleware(
  (handler) =>
    Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (request) =>
        isLocal(request.headers)
          ? handler
          : Effect.succeed(HttpServerResponse.text("forbidden: this server answers only its own pages\n", {
            status: 403
          }))
    ),
  { global: true }
)
