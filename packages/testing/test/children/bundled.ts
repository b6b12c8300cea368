/**
 * A child for the TestProcess tests, to be bundled: imports a module beside
 * it (which it finds from its own place), effect, and agentloop's sources,
 * reports what it got from each, and throws at the end, so its stack trace
 * shows where the source map points.
 */
import { Item } from "@agentloop/core"
import { Effect, Schema } from "effect"
import { readFileSync } from "node:fs"
import * as TestProcess from "../../src/TestProcess.ts"
import { greeting } from "./greeting.ts"

const config = TestProcess.config(Schema.Struct({ name: Schema.String }))
const beside = readFileSync(new URL("./greeting.ts", import.meta.url), "utf8").includes("greeting")
Effect.runSync(TestProcess.report({ greeting: greeting(config.name), beside, item: Item.userMessage("hi").type }))
throw new Error("the end of the bundled child")
