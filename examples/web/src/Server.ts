/**
 * The chat server: the page, its script, and `POST /chat`, which runs the demo
 * agent (calculator and unit converter) on the message and streams the run to
 * the browser as Server-Sent Events with `EventStream`. A browser that goes
 * away (the Stop button, a closed tab) interrupts the run, down to the model's
 * HTTP request.
 */
import { AgentLoop, EventStream } from "@agentloop/core"
import type { LanguageModel } from "@agentloop/core"
import { instructions } from "@agentloop/example-terminal/Demo"
import { question } from "@agentloop/example-terminal/script"
import { toolkit } from "@agentloop/example-terminal/tools"
import { ByteSize, Effect, Layer, Schema, Stream } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { bundle } from "./bundle.ts"
import { page } from "./page.ts"

/** What the page posts to `/chat`. */
export const ChatRequest = Schema.Struct({
  message: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4000))
})

/** One chat: the demo agent's run on `message`, on a `LanguageModel` built from `model` for it alone. */
const chat = (model: Layer.Layer<LanguageModel.LanguageModel>, message: string) =>
  Stream.unwrap(
    Effect.map(AgentLoop.AgentLoop, (agent) =>
      agent.stream({ input: message, instructions, toolkit, limits: { maxTurns: 8, maxBudgetUsd: 0.25 } }))
  ).pipe(
    Stream.provide(AgentLoop.layer.pipe(Layer.provide(model)))
  )

/** The body is read whole: bounded, so that one request cannot take the server's memory. */
const bounded = Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.mebibytes(1))

/**
 * The routes. `model` is built anew for every chat, so a scripted model replays
 * its script each time; pass a built layer (`Layer.succeedContext`) to share one.
 */
export const routes = (options: {
  readonly provider: string
  readonly model: Layer.Layer<LanguageModel.LanguageModel>
}) =>
  Layer.mergeAll(
    HttpRouter.add("GET", "/", HttpServerResponse.html(page(options.provider, question))),
    HttpRouter.add(
      "GET",
      "/client.js",
      Effect.map(bundle, (script) => HttpServerResponse.text(script, { contentType: "text/javascript; charset=utf-8" }))
    ),
    HttpRouter.add(
      "POST",
      "/chat",
      HttpServerRequest.schemaBodyJson(ChatRequest).pipe(
        bounded,
        Effect.flatMap(({ message }) => EventStream.toHttpResponse(chat(options.model, message), EventStream.agent)),
        Effect.catch((error) =>
          Effect.succeed(HttpServerResponse.text(`bad request: ${error.message}\n`, { status: 400 }))
        )
      )
    )
  )
