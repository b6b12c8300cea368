/**
 * `npm run web`: the chat page on http://127.0.0.1:3000 (`AGENTLOOP_WEB_PORT`
 * to change it). The scripted model by default; a real provider by the same
 * variables as the terminal demo (`AGENTLOOP_PROVIDER` and its key). Runs are
 * recorded in `AGENTLOOP_WEB_CHECKPOINTS` (by default a folder in the system's
 * temporary directory), so a run cut off by a restart resumes when its page
 * comes back.
 */
import { Checkpointer, LiveRuns } from "@agentloop/core"
import * as Provider from "@agentloop/example-terminal/Provider"
import { NodeFileSystem, NodeHttpServer, NodePath, NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Server from "./Server.ts"
import * as Startup from "./Startup.ts"

const program = Effect.gen(function*() {
  const port = yield* Config.Port("AGENTLOOP_WEB_PORT").pipe(Config.withDefault(3000))
  const provider = yield* Provider.name
  const checkpoints = yield* Config.String("AGENTLOOP_WEB_CHECKPOINTS").pipe(
    Config.withDefault(join(tmpdir(), "agentloop-web-checkpoints"))
  )
  yield* Layer.launch(
    // The model is built once, as the server starts: a missing key is reported then.
    HttpRouter.serve(Server.routes({ provider, model: Provider.layer }), {
      disableLogger: true,
      disableListenLog: true
    }).pipe(
      Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" })),
      // The server's runs live as long as the server; their checkpoints in a folder, across restarts.
      Layer.provide(LiveRuns.layer),
      Layer.provide(
        Checkpointer.layerFileSystem(checkpoints).pipe(
          Layer.provide(NodeFileSystem.layer),
          Layer.provide(NodePath.layer)
        )
      ),
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
