/**
 * A process of the resumable-stream tests. As `serve`: an embedded runner on
 * SQLite with an HTTP server (`POST /runs/:id` starts a run, `GET
 * /runs/:id/events` streams its log with `Last-Event-ID`, `POST
 * /runs/:id/cancel` cancels it); it reports `{ url }`. As `read`: a client
 * that reads a run's events from `lastEventId` on and reports each as
 * `{ id, tag }`, then `{ ended }` with the termination or `end`.
 */
import * as Approval from "@agentloop/core/Approval"
import * as EventStreamClient from "@agentloop/core/stream/EventStreamClient"
import * as TokenUsage from "@agentloop/core/TokenUsage"
import * as Tool from "@agentloop/core/Tool"
import * as Toolkit from "@agentloop/core/Toolkit"
import * as MockLanguageModel from "@agentloop/testing/MockLanguageModel"
import * as TestProcess from "@agentloop/testing/TestProcess"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Http from "node:http"
import * as DurableAgent from "../src/DurableAgent.ts"
import * as DurableEvent from "../src/DurableEvent.ts"
import * as DurableRunner from "../src/DurableRunner.ts"
import * as DurableStream from "../src/DurableStream.ts"

export const Config = Schema.Struct({
  action: Schema.Literals(["serve", "read"]),
  filename: Schema.String,
  url: Schema.String,
  lastEventId: Schema.optionalKey(Schema.String)
})
export type Config = typeof Config.Type

const usage = TokenUsage.make(20, 10)

/** Waits `ms` milliseconds, or forever for a negative `ms` (a call only a cancel ends). */
const wait = Tool.make({
  name: "wait",
  description: "Waits",
  input: Schema.Struct({ ms: Schema.Int }),
  output: Schema.String,
  idempotent: true,
  execute: ({ ms }) => ms < 0 ? Effect.never : Effect.as(Effect.sleep(ms), `waited ${ms} ms`)
})

/** Four turns of waiting calls, then an answer; a task that starts with "hang" waits forever at its first call. */
const respond: MockLanguageModel.Respond = ({ history }) => {
  const calls = history.filter((item) => item.type === "function_call").length
  const first = history[0]
  const hang = first?.type === "message" && first.content.some((part) => "text" in part && part.text.startsWith("hang"))
  return calls < 4
    ? MockLanguageModel.callsTurn([{ name: "wait", arguments: { ms: hang ? -1 : 150 }, callId: `call_${calls}` }], {
      text: `Step ${calls + 1}.`,
      usage
    })
    : MockLanguageModel.textTurn("All done.", { usage })
}

const agent = DurableAgent.make("streamed", { toolkit: Toolkit.make(wait), instructions: "Wait." })

const serve = (config: Config) => {
  const routes = Layer.mergeAll(
    HttpRouter.add(
      "POST",
      "/runs/:id",
      Effect.gen(function*() {
        const { id } = yield* HttpRouter.params
        const input = yield* Effect.orDie((yield* HttpServerRequest.HttpServerRequest).text)
        yield* agent.start({ runId: id ?? "", input })
        return HttpServerResponse.empty({ status: 202 })
      })
    ),
    HttpRouter.add(
      "GET",
      "/runs/:id/events",
      Effect.gen(function*() {
        const { id } = yield* HttpRouter.params
        const request = yield* HttpServerRequest.HttpServerRequest
        const after = DurableStream.lastEventId(request.headers)
        if (Option.isNone(after)) return HttpServerResponse.text("bad Last-Event-ID\n", { status: 400 })
        return yield* DurableStream.toHttpResponse(agent.name, id ?? "", { after: after.value, pollInterval: 20 })
      })
    ),
    HttpRouter.add(
      "POST",
      "/runs/:id/cancel",
      Effect.gen(function*() {
        const { id } = yield* HttpRouter.params
        const cancelled = yield* DurableStream.cancel(agent, id ?? "", { reason: "the user pressed stop" })
        return HttpServerResponse.text(cancelled ? "cancelled\n" : "already ended\n")
      }).pipe(Effect.orDie)
    )
  )
  const server = Http.createServer()
  return Effect.gen(function*() {
    yield* Layer.build(
      HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" }))
      )
    )
    const address = server.address()
    yield* TestProcess.report({ url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}` })
    return yield* Effect.never
  }).pipe(
    Effect.scoped,
    Effect.provide(
      agent.layer.pipe(
        Layer.provideMerge(DurableRunner.layerSqlite({ filename: config.filename })),
        Layer.provide(MockLanguageModel.layer(respond, { chunkSize: 4, delay: "5 millis" })),
        Layer.provide(Approval.allowAll)
      )
    )
  )
}

const read = (config: Config) =>
  Effect.promise(async () => {
    try {
      const entries = EventStreamClient.entries(DurableEvent.codec, config.url, undefined, {
        lastEventId: config.lastEventId
      })
      for await (const { event, id } of entries) console.log(JSON.stringify({ id, tag: event._tag }))
      console.log(JSON.stringify({ ended: "end" }))
    } catch (error) {
      const tagged = error instanceof Error && "_tag" in error
      console.log(JSON.stringify({
        ended: tagged ? error._tag : String(error),
        source: tagged && "source" in error ? error.source : undefined
      }))
    }
  })

const config = TestProcess.config(Config)
Effect.runPromise(config.action === "serve" ? serve(config) : read(config)).then(() => process.exit(0))
