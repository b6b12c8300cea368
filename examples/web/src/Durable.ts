/**
 * The demo agent as a durable run whose page survives a reload: `POST
 * /runs/:id` starts run `id` on the message, `GET /runs/:id` is its page,
 * which follows `GET /runs/:id/events` (the run's log as Server-Sent Events
 * with ids: a page loaded again gets the whole run, then the rest live), and
 * `POST /runs/:id/cancel` stops it for good. Closing or reloading the page
 * does not stop the run. Only its own pages are answered (see `LocalOnly`).
 */
import type { LanguageModel } from "@agentloop/core"
import { DurableAgent, DurableRunner, DurableStream } from "@agentloop/durable"
import { instructions } from "@agentloop/example-terminal/Demo"
import { toolkit } from "@agentloop/example-terminal/tools"
import { ByteSize, Effect, Layer, Option, Schema } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { memoized } from "./bundle.ts"
import * as LocalOnly from "./LocalOnly.ts"

/** The demo agent, durable. */
export const agent = DurableAgent.make("demo", { instructions, toolkit, limits: { maxTurns: 8 } })

/** The run page's script. */
export const bundle = memoized(new URL("./run.ts", import.meta.url))

const RunId = Schema.String.check(Schema.isPattern(/^[\w-]{1,64}$/))

const runId = Effect.flatMap(
  HttpRouter.params,
  ({ id }) => Schema.decodeUnknownEffect(RunId)(id)
)

const badRequest = (message: string) => HttpServerResponse.text(`bad request: ${message}\n`, { status: 400 })

const page = (id: string) =>
  `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>agentloop · run ${id}</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 46rem; margin: 0 auto; padding: 1.5rem; background: #f5f5f7; }
  .assistant { background: white; border-radius: .8rem; padding: .75rem 1rem; }
  .turn + .turn { border-top: 1px solid #e5e5ea; margin-top: .6rem; padding-top: .6rem; }
  .text { white-space: pre-wrap; }
  .call, .result, .meta, .ending { font-size: .82rem; font-family: ui-monospace, monospace; margin-top: .35rem; }
</style></head>
<body>
<h1>run ${id}</h1>
<main id="log"></main>
<button id="cancel">Cancel the run</button>
<div id="status" data-state="running">running…</div>
<script type="module" src="/run.js"></script>
</body>
</html>
`

/** The routes; the agent runs on the durable runner the layer is provided with. */
export const routes = Layer.mergeAll(
  LocalOnly.layer,
  HttpRouter.add(
    "POST",
    "/runs/:id",
    Effect.gen(function*() {
      const id = yield* runId
      // Read whole, so bounded: a message is at most 4000 characters, of at most 4 bytes each.
      const input = yield* (yield* HttpServerRequest.HttpServerRequest).text.pipe(
        Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.kibibytes(16))
      )
      if (input === "" || input.length > 4000) return badRequest("the message is empty or too long")
      yield* agent.start({ runId: id, input })
      return HttpServerResponse.empty({ status: 202 })
    }).pipe(Effect.catch((error) => Effect.succeed(badRequest(error.message))))
  ),
  HttpRouter.add(
    "GET",
    "/runs/:id",
    Effect.map(runId, (id) => HttpServerResponse.html(page(id))).pipe(
      Effect.catch((error) => Effect.succeed(badRequest(error.message)))
    )
  ),
  HttpRouter.add(
    "GET",
    "/run.js",
    Effect.map(bundle, (script) => HttpServerResponse.text(script, { contentType: "text/javascript; charset=utf-8" }))
  ),
  HttpRouter.add(
    "GET",
    "/runs/:id/events",
    Effect.gen(function*() {
      const id = yield* runId
      const after = DurableStream.lastEventId((yield* HttpServerRequest.HttpServerRequest).headers)
      return Option.isNone(after)
        ? badRequest("Last-Event-ID is not an id of this stream")
        : yield* DurableStream.toHttpResponse(agent.name, id, { after: after.value })
    }).pipe(Effect.catch((error) => Effect.succeed(badRequest(error.message))))
  ),
  HttpRouter.add(
    "POST",
    "/runs/:id/cancel",
    Effect.gen(function*() {
      const cancelled = yield* DurableStream.cancel(agent, yield* runId, { reason: "cancelled from the page" })
      return HttpServerResponse.text(cancelled ? "cancelled\n" : "the run had ended\n")
    }).pipe(Effect.catch((error) => Effect.succeed(badRequest(error.message))))
  )
)

/** The embedded runner on the SQLite file `filename`, running the agent on `model`. */
export const runner = (filename: string, model: Layer.Layer<LanguageModel.LanguageModel>) =>
  agent.layer.pipe(Layer.provideMerge(DurableRunner.layerSqlite({ filename })), Layer.provide(model))
