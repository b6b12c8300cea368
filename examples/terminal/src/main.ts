/**
 * `npm run demo [question]`: the terminal demo. It exits with status 1 when the
 * run ends with an error termination (or cannot start), 0 when it ends well.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AgentLoop, Termination } from "@agentloop/core"
import * as Demo from "./Demo.ts"
import * as Provider from "./Provider.ts"
import { question } from "./script.ts"

const asked = process.argv.slice(2).join(" ").trim()

const write = (text: string) => Effect.sync(() => process.stdout.write(text))

const program = Effect.gen(function*() {
  const provider = yield* Provider.name
  yield* write(`agentloop demo · provider: ${provider}${provider === "mock" ? " (scripted: set AGENTLOOP_PROVIDER to use a real model)" : ""}\n`)
  const ended = yield* Demo.run(asked === "" ? question : asked, write)
  if (Termination.isError(ended)) process.exitCode = 1
})

program.pipe(
  Effect.provide(AgentLoop.layer.pipe(Layer.provide(Provider.layer))),
  Effect.catch((error) =>
    Effect.sync(() => {
      process.stderr.write(`agentloop demo: ${error.message}\n`)
      process.exitCode = 1
    })
  ),
  NodeRuntime.runMain
)
