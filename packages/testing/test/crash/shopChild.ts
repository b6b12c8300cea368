/**
 * The shop's run in a child process of `CrashTest.everyCheckpointKilled`: on
 * the file store in the directory its config names, with a short lease so
 * the process that resumes a killed run takes it over quickly. It imports
 * modules by subpath: each kill point starts two of it.
 */
import * as AgentLoop from "@agentloop/core/agent/AgentLoop"
import * as Checkpointer from "@agentloop/core/Checkpointer"
import * as CrashChild from "@agentloop/testing/CrashChild"
import * as TestProcess from "@agentloop/testing/TestProcess"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { order } from "./shop.ts"

const { directory } = TestProcess.config(Schema.Struct({ directory: Schema.String }))

CrashChild.run({
  program: order("Tea and cake, please", "order-1"),
  layer: AgentLoop.layer,
  checkpointer: Checkpointer.layerFileSystem(directory, { lease: "200 millis" }).pipe(
    Layer.provide(NodeFileSystem.layer),
    Layer.provide(NodePath.layer)
  )
})
