/**
 * `npm run web`: the chat page on http://127.0.0.1:3000 (`AGENTLOOP_WEB_PORT`
 * to change it). The scripted model by default; a real provider by the same
 * variables as the terminal demo (`AGENTLOOP_PROVIDER` and its key).
 */
import * as Provider from "@agentloop/example-terminal/Provider"
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import * as Server from "./Server.ts"
import * as Startup from "./Startup.ts"

const program = Effect.gen(function*() {
  const port = yield* Config.Port("AGENTLOOP_WEB_PORT").pipe(Config.withDefault(3000))
  const provider = yield* Provider.name
  // A real provider is built once, at start (a missing key is reported now); the mock anew for every chat.
  const model = provider === "mock" ? Provider.mock : Layer.succeedContext(yield* Layer.build(Provider.layer))
  yield* Layer.launch(
    HttpRouter.serve(Server.routes({ provider, model }), { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" })),
      Layer.tap(() =>
        Effect.sync(() => console.log(`agentloop web demo · provider: ${provider} · http://127.0.0.1:${port}`))
      )
    )
  )
})

program.pipe(
  Effect.scoped,
  Effect.catch((error) =>
    Effect.sync(() => {
      process.stderr.write(`agentloop web demo: ${Startup.explain(error)}\n`)
      process.exitCode = 1
    })
  ),
  NodeRuntime.runMain
)
