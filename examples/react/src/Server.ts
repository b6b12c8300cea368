/**
 * The React chat's server: the page, its bundled script, and `POST /api/chat`,
 * the endpoint `useChat`'s `DefaultChatTransport` posts the conversation to.
 * It turns the chat's UI messages into the agent's history, runs the demo
 * agent (calculator and unit converter) on it, and answers with the run as
 * the AI SDK's UI message stream. Stop in the page aborts the request, which
 * interrupts the run, down to the model's HTTP request. Only its own pages
 * are answered (see `LocalOnly`).
 */
import { AgentLoop, ChatApprovals, UIMessage, UIMessageStream } from "@agentloop/core"
import type { Item, LanguageModel, Toolkit } from "@agentloop/core"
import { instructions } from "@agentloop/example-terminal/Demo"
import { question } from "@agentloop/example-terminal/script"
import { toolkit as demoTools } from "@agentloop/example-terminal/tools"
import { memoized } from "@agentloop/example-web/bundle"
import * as LocalOnly from "@agentloop/example-web/LocalOnly"
import { ByteSize, Effect, Layer, Stream } from "effect"
import type { Redacted } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { page } from "./page.ts"

/** The page's script: `client.tsx` with React, `@ai-sdk/react` and what they import. */
export const bundle = memoized(new URL("./client.tsx", import.meta.url))

/** One answer: the demo agent's run on `history`, on a `LanguageModel` built from `model` for it alone. */
const chat = (
  model: Layer.Layer<LanguageModel.LanguageModel>,
  toolkit: Toolkit.Toolkit<never>,
  history: ReadonlyArray<Item.Item>
) =>
  Stream.unwrap(
    Effect.map(AgentLoop.AgentLoop, (agent) =>
      agent.stream({ input: history, instructions, toolkit, limits: { maxTurns: 8, maxBudgetUsd: 0.25 } }))
  ).pipe(Stream.provide(AgentLoop.layer.pipe(Layer.provide(model))))

/**
 * The key that signs the approval requests of this process: random, so an
 * approval asked before a restart is refused after it. Use a stable secret
 * from config in production so approvals survive a restart (and every server
 * of the app accepts them).
 */
const processSecret = globalThis.crypto.getRandomValues(new Uint8Array(32))

const badRequest = (message: string) => HttpServerResponse.text(`bad request: ${message}\n`, { status: 400 })

/** The body is read whole: bounded, so that one request cannot take the server's memory. */
const bounded = Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.mebibytes(1))

/**
 * The routes. `model` is built anew for every request, so a scripted model
 * replays its script each time; pass a built layer (`Layer.succeedContext`) to share one.
 * `toolkit` is the demo's calculator and unit converter unless given; a call of
 * a tool that needs approval ends the answer with a request the page shows,
 * signed with `secret` (this process's random one unless given).
 */
export const routes = (options: {
  readonly provider: string
  readonly model: Layer.Layer<LanguageModel.LanguageModel>
  readonly toolkit?: Toolkit.Toolkit<never> | undefined
  readonly secret?: Redacted.Redacted<string> | Uint8Array | undefined
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
      "/api/chat",
      HttpServerRequest.schemaBodyJson(UIMessage.ChatRequest).pipe(
        bounded,
        Effect.flatMap(({ messages }) => {
          const conversation = UIMessage.toConversation(messages)
          const toolkit = options.toolkit ?? demoTools
          return conversation.history.length === 0
            ? Effect.succeed(badRequest("the conversation has no message to answer"))
            : UIMessageStream.toHttpResponse(
              ChatApprovals.stream(conversation, toolkit, (history) => chat(options.model, toolkit, history), {
                secret: options.secret ?? processSecret
              })
            )
        }),
        Effect.catch((error) => Effect.succeed(badRequest(error.message)))
      )
    )
  )
