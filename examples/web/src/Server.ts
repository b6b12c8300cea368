/**
 * The chat server: the page, its script, and `POST /chat`, which streams the
 * demo agent's (calculator and unit converter) run on one message of a
 * conversation to the browser as Server-Sent Events. Each message is a run of
 * its own on the conversation before it (which the page sends, see
 * `Conversation`), recorded by the `Checkpointer` under the id
 * `<conversation>-<message>`, and executed by the server (see `LiveRuns`), not
 * by the request: a page that goes away (a reload, a closed tab, a network
 * cut) does not stop it, and a page that comes back gets the whole run, or
 * the rest of it after its `Last-Event-ID`. `POST /chat/cancel` stops a run
 * for good: every page following it sees it ended by a person. Only its own
 * pages are answered (see `LocalOnly`).
 */
import { AgentLoop, EventStream, Item, ResumableStream } from "@agentloop/core"
import type { LanguageModel } from "@agentloop/core"
import { instructions } from "@agentloop/example-terminal/Demo"
import { question } from "@agentloop/example-terminal/script"
import { toolkit } from "@agentloop/example-terminal/tools"
import { ByteSize, Effect, Layer, Schema } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { bundle } from "./bundle.ts"
import * as Conversation from "./Conversation.ts"
import * as LocalOnly from "./LocalOnly.ts"
import { page } from "./page.ts"

/**
 * What the page posts: which message of which conversation, the message, and
 * the conversation before it (see `Conversation`): its run's input.
 */
export const ChatRequest = Schema.Struct({
  conversation: Schema.String.check(Schema.isPattern(/^[\w-]{8,64}$/)),
  index: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 999 })),
  message: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4000)),
  context: Conversation.Context
})

/**
 * The run of one message. Its id names the conversation and the message; its
 * input is the conversation before it and the message, which the page sends
 * again when it comes back (a run recorded with another input refuses it).
 * The items come from the page: a person can make up the conversation the
 * model reads, as they could write the message.
 */
const runOf = ({ context, conversation, index, message }: typeof ChatRequest.Type) => ({
  input: [...context, Item.userMessage(message)],
  instructions,
  toolkit,
  limits: { maxTurns: 8, maxBudgetUsd: 0.25 },
  runId: `${conversation}-${index}`
})

/** The body is read whole: bounded, so that one request cannot take the server's memory. */
const chatRequest = HttpServerRequest.schemaBodyJson(ChatRequest).pipe(
  Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.kibibytes(256))
)

const badRequest = (error: { readonly message: string }) =>
  Effect.succeed(HttpServerResponse.text(`bad request: ${error.message}\n`, { status: 400 }))

/**
 * The routes, on the `Checkpointer` and the `LiveRuns` in context. The agent
 * and its `model` are built once, with the routes (a failure to build them
 * fails the server's start): a run goes on after the request that started it,
 * so its services must outlive that request.
 */
export const routes = <E>(options: {
  readonly provider: string
  readonly model: Layer.Layer<LanguageModel.LanguageModel, E>
}) =>
  Layer.mergeAll(
    LocalOnly.layer,
    HttpRouter.add("GET", "/", HttpServerResponse.html(page(options.provider, question))),
    HttpRouter.add(
      "GET",
      "/client.js",
      Effect.map(bundle, (script) => HttpServerResponse.text(script, { contentType: "text/javascript; charset=utf-8" }))
    ),
    HttpRouter.add(
      "POST",
      "/chat",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const chat = yield* chatRequest
        return yield* ResumableStream.toHttpResponse(runOf(chat), EventStream.agent, { headers: request.headers })
      }).pipe(Effect.catch(badRequest))
    ),
    HttpRouter.add(
      "POST",
      "/chat/cancel",
      Effect.gen(function*() {
        const cancelled = yield* ResumableStream.cancel(runOf(yield* chatRequest), { reason: "stopped from the page" })
        return HttpServerResponse.text(cancelled ? "cancelled\n" : "the run had ended\n")
      }).pipe(Effect.catch(badRequest))
    )
  ).pipe(HttpRouter.provideRequest(AgentLoop.layer.pipe(Layer.provide(options.model))))
