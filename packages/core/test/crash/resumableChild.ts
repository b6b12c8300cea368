/**
 * A process of the resumable-stream crash tests. As `serve`: an HTTP server of
 * `Checkpointer` runs on files (`GET /runs/:id/events` with `Last-Event-ID`,
 * `POST /runs/:id/cancel`), its leases short so that a server started after
 * one was killed takes its runs over soon; it reports `{ url }`, and
 * `{ asked }` (the turn's number) for each turn the model is asked. As
 * `read`: a client that reads a run's events from `lastEventId` on and
 * reports each as `{ id, tag }`, then `{ ended }` with the termination (and
 * its `source`) or `end`.
 */
import * as MockLanguageModel from "@agentloop/testing/MockLanguageModel"
import * as TestProcess from "@agentloop/testing/TestProcess"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Effect from "effect/Effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Http from "node:http"
import * as AgentLoop from "../../src/agent/AgentLoop.ts"
import * as Checkpointer from "../../src/Checkpointer.ts"
import * as EventStream from "../../src/stream/EventStream.ts"
import * as EventStreamClient from "../../src/stream/EventStreamClient.ts"
import * as LiveRuns from "../../src/stream/LiveRuns.ts"
import * as ResumableStream from "../../src/stream/ResumableStream.ts"
import * as Tool from "../../src/Tool.ts"
import * as Toolkit from "../../src/Toolkit.ts"

export const Config = Schema.Struct({
  action: Schema.Literals(["serve", "read"]),
  /** The checkpoints' folder (serve). */
  dir: Schema.String,
  /** The events' URL (read). */
  url: Schema.String,
  lastEventId: Schema.optionalKey(Schema.String)
})
export type Config = typeof Config.Type

/** Waits `ms` milliseconds, or forever for a negative `ms` (a call only a cancel ends). */
const wait = Tool.make({
  name: "wait",
  description: "Waits",
  input: Schema.Struct({ ms: Schema.Int }),
  output: Schema.String,
  idempotent: true,
  execute: ({ ms }) => ms < 0 ? Effect.never : Effect.as(Effect.sleep(ms), `waited ${ms} ms`)
})

/** Four turns of waiting calls, then an answer; a run whose id starts with "hang" waits forever at its first call. */
const respond: MockLanguageModel.Respond = ({ history }) => {
  const calls = history.filter((item) => item.type === "function_call").length
  const first = history[0]
  const hang = first?.type === "message" && first.content.some((part) => "text" in part && part.text.startsWith("hang"))
  console.log(JSON.stringify({ asked: calls + 1 }))
  return calls < 4
    ? MockLanguageModel.callsTurn([{ name: "wait", arguments: { ms: hang ? -1 : 150 }, callId: `call_${calls}` }], {
      text: `Step ${calls + 1}, in a few words.`
    })
    : MockLanguageModel.textTurn("All done, in a few words.")
}

/** The options of run `id`: its task is its id. */
export const optionsOf = (id: string) => ({ input: id, toolkit: Toolkit.make(wait), runId: id })

const serve = (config: Config) => {
  const routes = Layer.mergeAll(
    HttpRouter.add(
      "GET",
      "/runs/:id/events",
      Effect.gen(function*() {
        const { id } = yield* HttpRouter.params
        const request = yield* HttpServerRequest.HttpServerRequest
        return yield* ResumableStream.toHttpResponse(optionsOf(id ?? ""), EventStream.agent, {
          headers: request.headers,
          pollInterval: 50
        })
      })
    ),
    HttpRouter.add(
      "POST",
      "/runs/:id/cancel",
      Effect.gen(function*() {
        const { id } = yield* HttpRouter.params
        const cancelled = yield* ResumableStream.cancel(optionsOf(id ?? ""), { reason: "the user pressed stop" })
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
    Effect.provide(Layer.mergeAll(
      LiveRuns.layer,
      AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(respond, { chunkSize: 4, delay: "2 millis" }))),
      Checkpointer.layerFileSystem(config.dir, { lease: "1 second" }).pipe(
        Layer.provide(NodeFileSystem.layer),
        Layer.provide(NodePath.layer)
      )
    ))
  )
}

const read = (config: Config) =>
  Effect.promise(async () => {
    try {
      const entries = EventStreamClient.entries(EventStream.agent, config.url, undefined, {
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

// Imported by the test for its types and options: only a child started with its config runs.
if (process.argv[2] !== undefined && import.meta.url === `file://${process.argv[1]}`) {
  const config = TestProcess.config(Config)
  Effect.runPromise(config.action === "serve" ? serve(config) : read(config)).then(() => process.exit(0))
}
