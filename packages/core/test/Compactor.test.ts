import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Compactor from "../src/Compactor.ts"
import * as Item from "../src/Item.ts"
import { lookupCall, lookupOutput } from "./fixtures.ts"

const call = lookupCall
const output = (id: string) => lookupOutput(id, "\"a long result\"")

describe("Compactor.dropOldestToolOutputs", () => {
  it.effect("drops the oldest half of the answered calls with their outputs, and keeps messages", () =>
    Effect.gen(function*() {
      const history: ReadonlyArray<Item.Item> = [
        Item.userMessage("question"),
        call("a"),
        call("b"),
        output("a"),
        output("b"),
        Item.assistantMessage("thinking"),
        call("c"),
        output("c"),
        call("pending")
      ]
      const compacted = yield* Compactor.dropOldestToolOutputs.compact(history)
      expect(compacted).toStrictEqual([
        Item.userMessage("question"),
        Item.assistantMessage("thinking"),
        call("c"),
        output("c"),
        call("pending")
      ])
    }))

  it.effect("fails when no answered call is left to drop", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Compactor.dropOldestToolOutputs.compact([Item.userMessage("a long question"), call("pending")])
      )
      expect(error._tag).toBe("CompactionError")
      expect(error.message).toBe("no tool call with an output is left to drop")
    }))
})
