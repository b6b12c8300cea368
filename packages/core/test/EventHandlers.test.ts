import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import * as AiError from "../src/AiError.ts"
import * as EventHandlers from "../src/provider/EventHandlers.ts"
import type * as TurnDelta from "../src/TurnDelta.ts"

interface State {
  readonly seen: Array<string>
}

const on = EventHandlers.on<State>("toy")

const handlers: EventHandlers.Handlers<State> = new Map([
  [
    "text.delta",
    on(Schema.Struct({ delta: Schema.String }), (state, e, out, event) => {
      state.seen.push(event)
      out.push({ type: "text_delta", delta: e.delta })
    })
  ],
  ["boom", on(Schema.Struct({}), () => new AiError.Unavailable({ provider: "toy", message: "boom" }))]
])

const handle = (
  dispatch: ReturnType<typeof EventHandlers.dispatch<State>>,
  name: string,
  data: string
) => {
  const state: State = { seen: [] }
  const out: Array<TurnDelta.TurnDelta> = []
  const error = dispatch(state, name, data, out)
  return { seen: state.seen, out, error }
}

describe("EventHandlers.dispatch", () => {
  const byType = EventHandlers.dispatch("toy", handlers)

  it("runs the handler of the event's JSON type, whatever the SSE name, with the type as the event's name", () => {
    expect(handle(byType, "anything", `{"type":"text.delta","delta":"Hi"}`)).toStrictEqual({
      seen: ["text.delta"],
      out: [{ type: "text_delta", delta: "Hi" }],
      error: undefined
    })
    expect(handle(byType, "message", `{"type":"boom"}`).error).toBeInstanceOf(AiError.Unavailable)
  })

  it("skips a type without a handler, and fails on data that is not JSON, has no type or does not decode", () => {
    expect(handle(byType, "message", `{"type":"ping"}`)).toStrictEqual({ seen: [], out: [], error: undefined })
    expect(handle(byType, "message", "{").error).toMatchObject({
      _tag: "MalformedEvent",
      provider: "toy",
      event: "message"
    })
    expect(handle(byType, "named", `{"delta":"Hi"}`).error).toMatchObject({
      _tag: "MalformedEvent",
      event: "named",
      message: expect.stringContaining("type")
    })
    expect(handle(byType, "message", `{"type":"text.delta","delta":1}`).error).toMatchObject({
      _tag: "MalformedEvent",
      event: "text.delta",
      message: expect.stringContaining("delta")
    })
  })

  it("with byName, reads a named event by its name without a type, and skips an unknown name unparsed", () => {
    const byName = EventHandlers.dispatch("toy", handlers, { byName: true })
    expect(handle(byName, "text.delta", `{"delta":"Hi"}`).out).toStrictEqual([{ type: "text_delta", delta: "Hi" }])
    // Not JSON, but nothing reads it.
    expect(handle(byName, "ping", "{").error).toBeUndefined()
    expect(handle(byName, "text.delta", "{").error).toMatchObject({ _tag: "MalformedEvent", event: "text.delta" })
    // An unnamed event is read for its type.
    expect(handle(byName, "message", `{"type":"text.delta","delta":"Yo"}`).seen).toStrictEqual(["text.delta"])
  })
})
