import { AiError, type Item, ProviderRetry, Turn } from "@agentloop/core"
import { ProviderServer } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule, Stream } from "effect"
import { completeTurn, hello, provider, run, runFailing, Script, TestLayer, usage } from "./fixtures.ts"

const message = (id: string, phase: string, text: string, status = "completed") => ({
  id,
  type: "message",
  status,
  role: "assistant",
  phase,
  content: status === "completed" ? [{ type: "output_text", text, annotations: [] }] : []
})

describe("ResponsesDecoder", () => {
  it.live("keeps each message's phase, on the item and its deltas, and leaves commentary out of the answer", () =>
    Effect.gen(function*() {
      const script = new Script().created()
        .event("response.output_item.added", {
          output_index: 0,
          item: message("msg_c", "commentary", "", "in_progress")
        })
        .textDeltas("msg_c", 0, ["Let me ", "check."])
        .event("response.output_item.done", { output_index: 0, item: message("msg_c", "commentary", "Let me check.") })
        .event("response.output_item.added", {
          output_index: 1,
          item: message("msg_f", "final_answer", "", "in_progress")
        })
        .textDeltas("msg_f", 1, ["It is ", "sunny."])
        .event("response.output_item.done", { output_index: 1, item: message("msg_f", "final_answer", "It is sunny.") })
        .completed(usage(10, 8))
      const deltas = yield* run([ProviderServer.sse(script.frames)])
      expect(deltas.filter((d) => d.type === "text_delta")).toStrictEqual([
        { type: "text_delta", delta: "Let me ", phase: "commentary" },
        { type: "text_delta", delta: "check.", phase: "commentary" },
        { type: "text_delta", delta: "It is ", phase: "final_answer" },
        { type: "text_delta", delta: "sunny.", phase: "final_answer" }
      ])
      const turn = completeTurn(deltas)
      expect(turn.items.map((item) => item.type === "message" ? [item.id, item.phase] : [])).toStrictEqual([
        ["msg_c", "commentary"],
        ["msg_f", "final_answer"]
      ])
      expect(Turn.text(turn)).toBe("It is sunny.")
    }).pipe(Effect.provide(TestLayer)))

  it.live("takes an item left open as the terminal response lists it: its done event never came", () =>
    Effect.gen(function*() {
      const search = { id: "ws_1", type: "web_search_call", status: "completed", action: { query: "weather" } }
      const call = {
        id: "fc_1",
        type: "function_call",
        status: "completed",
        arguments: "{\"city\":\"Paris\"}",
        call_id: "call_1",
        name: "weather"
      }
      const script = new Script().created()
        .event("response.output_item.added", { output_index: 0, item: { ...search, status: "in_progress" } })
        .callStart("fc_1", 1, "call_1", "weather")
        .argumentsDelta("fc_1", 1, "{\"city\":")
        .completed(usage(5, 5), [search, call])
      const deltas = yield* run([ProviderServer.sse(script.frames)])
      const turn = completeTurn(deltas)
      expect(turn.items).toStrictEqual([
        { type: "x-openai.web_search_call", id: "ws_1", status: "completed", data: search },
        {
          type: "function_call",
          id: "fc_1",
          status: "completed",
          call_id: "call_1",
          name: "weather",
          arguments: call.arguments
        }
      ])
      // The call's deltas still concatenate to its arguments, and it is done.
      const streamed = deltas.flatMap((d) => d.type === "function_call_arguments_delta" ? [d.delta] : []).join("")
      expect(streamed).toBe(call.arguments)
      expect(deltas.filter((d) => d.type === "function_call_done")).toHaveLength(1)
    }).pipe(Effect.provide(TestLayer)))

  it.live("finishes a call once when its done event and the terminal response both say it is still in progress", () =>
    Effect.gen(function*() {
      // Programmatic tool calling: a call a program made waits for its output, so the API
      // leaves it in_progress in output_item.done and in the response's output alike.
      const call = {
        id: "fc_prog",
        type: "function_call",
        status: "in_progress",
        arguments: "{\"sku\":\"sku_42\"}",
        call_id: "call_prog",
        caller: { type: "program", caller_id: "call_program" },
        name: "inventory"
      }
      const script = new Script().created()
        .event("response.output_item.added", { output_index: 0, item: { ...call, arguments: "" } })
        .argumentsDelta("fc_prog", 0, call.arguments)
        .event("response.function_call_arguments.done", {
          item_id: "fc_prog",
          output_index: 0,
          arguments: call.arguments
        })
        .event("response.output_item.done", { output_index: 0, item: call })
        .completed(usage(12, 6), [call])
      const deltas = yield* run([ProviderServer.sse(script.frames)])
      expect(deltas.filter((d) => d.type.startsWith("function_call"))).toStrictEqual([
        { type: "function_call_start", call_id: "call_prog", name: "inventory" },
        { type: "function_call_arguments_delta", call_id: "call_prog", delta: call.arguments },
        { type: "function_call_done", call_id: "call_prog", name: "inventory", arguments: call.arguments }
      ])
      expect(Turn.functionCalls(completeTurn(deltas)).map((item) => item.call_id)).toStrictEqual(["call_prog"])
    }).pipe(Effect.provide(TestLayer)))

  it.live("sends each assistant message's phase back on the next request", () =>
    Effect.gen(function*() {
      const first = new Script("resp_1").created()
        .event("response.output_item.added", {
          output_index: 0,
          item: message("msg_c", "commentary", "", "in_progress")
        })
        .textDeltas("msg_c", 0, ["Checking."])
        .event("response.output_item.done", { output_index: 0, item: message("msg_c", "commentary", "Checking.") })
        .callStart("fc_1", 1, "call_1", "weather").callDone("fc_1", 1, "call_1", "weather", "{}")
        .completed(usage(5, 5))
      const turn = completeTurn(yield* run([ProviderServer.sse(first.frames)]))
      const output: Item.FunctionCallOutput = {
        type: "function_call_output",
        id: "o1",
        status: "completed",
        call_id: "call_1",
        output: "\"sun\""
      }
      const second = new Script("resp_2").created().message("msg_2", 0, ["Sun."]).completed(usage(9, 2))
      yield* run([ProviderServer.sse(second.frames)], {}, {}, [...hello, ...turn.items, output])
      const requests = yield* (yield* ProviderServer.ProviderServer).requests
      expect(requests[1]?.body).toMatchObject({
        input: [
          { type: "message", role: "user" },
          {
            type: "message",
            role: "assistant",
            phase: "commentary",
            content: [{ type: "output_text", text: "Checking." }]
          },
          { type: "function_call", call_id: "call_1" },
          { type: "function_call_output", call_id: "call_1" }
        ]
      })
    }).pipe(Effect.provide(TestLayer)))

  it.live("completes a turn whose terminal event has no response id with the id of response.created", () =>
    Effect.gen(function*() {
      const withoutId = (type: string, extra: Record<string, unknown>) =>
        new Script("resp_created").created().message("msg_1", 0, ["ok"])
          .event(type, { response: { object: "response", status: "completed", model: "compat-model", ...extra } })
      const completed = completeTurn(
        yield* run([ProviderServer.sse(withoutId("response.completed", { usage: usage(1, 1) }).frames)])
      )
      expect(completed).toMatchObject({ responseId: "resp_created", model: "compat-model", stopReason: "stop" })
      const incomplete = completeTurn(
        yield* run([
          ProviderServer.sse(
            withoutId("response.incomplete", { incomplete_details: { reason: "max_output_tokens" } }).frames
          )
        ])
      )
      expect(incomplete).toMatchObject({ responseId: "resp_created", stopReason: "max_tokens" })
      // A server that never names its response: the turn has no id rather than a made-up one.
      const anonymous = [
        ProviderServer.sseEvent({ type: "response.created", response: {} }, "response.created"),
        ProviderServer.sseEvent({ type: "response.completed", response: { usage: usage(1, 1) } }, "response.completed")
      ]
      expect(completeTurn(yield* run([ProviderServer.sse(anonymous)])).responseId).toBeUndefined()
    }).pipe(Effect.provide(TestLayer)))

  it.live("takes OpenRouter's usage.cost as the turn's cost, and refuses a cost that is not a price", () =>
    Effect.gen(function*() {
      const priced = new Script().created().message("msg_1", 0, ["4"])
        .completed({ ...usage(78, 37, 0, 22), cost: 0.0000113, is_byok: false } as ReturnType<typeof usage>)
      const turn = completeTurn(yield* run([ProviderServer.sse(priced.frames)]))
      expect(turn.cost).toBe(0.0000113)
      expect(turn.usage).toStrictEqual({ input: 78, output: 37, total: 115, cachedInput: 0, reasoning: 22 })
      const unpriced = new Script().created().message("msg_1", 0, ["4"])
        .completed({ ...usage(1, 1), cost: null } as unknown as ReturnType<typeof usage>)
      expect(completeTurn(yield* run([ProviderServer.sse(unpriced.frames)])).cost).toBeUndefined()
      for (const cost of [-1, "0.1"]) {
        const bad = new Script().created().message("msg_1", 0, ["4"])
          .completed({ ...usage(1, 1), cost } as unknown as ReturnType<typeof usage>)
        const { error } = yield* runFailing([ProviderServer.sse(bad.frames)])
        expect(error).toMatchObject({ _tag: "MalformedEvent", event: "response.completed" })
      }
    }).pipe(Effect.provide(TestLayer)))

  it.live("takes xAI's usage.cost_in_usd_ticks, ten billion to the dollar, as the turn's cost", () =>
    Effect.gen(function*() {
      const costOf = (cost: Record<string, unknown>) =>
        Effect.gen(function*() {
          const script = new Script().created().message("msg_1", 0, ["Sunny."])
            .completed({ ...usage(216, 923, 192, 323), num_sources_used: 0, ...cost } as ReturnType<typeof usage>)
          return completeTurn(yield* run([ProviderServer.sse(script.frames)])).cost
        })
      expect(yield* costOf({ cost_in_usd_ticks: 123_456 })).toBe(0.0000123456)
      expect(yield* costOf({ cost_in_usd_ticks: 123_456, cost: 0.5 })).toBe(0.5)
      const { error } = yield* runFailing([
        ProviderServer.sse(
          new Script().created().message("msg_1", 0, ["4"])
            .completed({ ...usage(1, 1), cost_in_usd_ticks: -3 } as ReturnType<typeof usage>).frames
        )
      ])
      expect(error).toMatchObject({ _tag: "MalformedEvent", event: "response.completed" })
    }).pipe(Effect.provide(TestLayer)))

  it.live("keeps output items it does not model as extension items, and sends them back as they came", () =>
    Effect.gen(function*() {
      const others = [
        {
          type: "custom_tool_call",
          id: "ctc_1",
          status: "completed",
          call_id: "call_c",
          name: "grammar",
          input: "x = 1"
        },
        {
          type: "apply_patch_call",
          id: "apc_1",
          status: "completed",
          call_id: "call_p",
          operation: { type: "create_file", path: "a.txt", diff: "+a" }
        },
        {
          type: "local_shell_call",
          id: "lsc_1",
          status: "completed",
          call_id: "call_l",
          action: { type: "exec", command: ["ls"] }
        },
        { type: "shell_call", id: "sc_1", status: "in_progress", call_id: "call_s", action: { commands: ["pwd"] } },
        { type: "tool_search_call", id: "tsc_1", status: "completed", query: "weather" },
        { type: "mcp_approval_request", id: "mcpr_1", server_label: "deepwiki", name: "ask", arguments: "{}" },
        { type: "web_search_call", id: "ws_1", status: "completed", action: { type: "search", query: "q" } }
      ]
      const script = new Script().created()
      others.forEach((item, index) => {
        script.event("response.output_item.added", { output_index: index, item: { ...item, status: "in_progress" } })
          .event("response.output_item.done", { output_index: index, item })
      })
      script.message("msg_1", others.length, ["Done."]).completed(usage(30, 20))
      const turn = completeTurn(yield* run([ProviderServer.sse(script.frames)]))
      expect(turn.items.slice(0, others.length)).toStrictEqual(others.map((item) => ({
        type: `x-openai.${item.type}`,
        id: item.id,
        status: item.status ?? "completed",
        data: item
      })))
      expect(Turn.text(turn)).toBe("Done.")
      yield* run(
        [ProviderServer.sse(new Script("resp_2").created().message("msg_2", 0, ["ok"]).completed(usage(1, 1)).frames)],
        {},
        {},
        [
          ...hello,
          ...turn.items,
          { type: "x-app-note", id: "n", status: "completed", data: { mine: true } }
        ]
      )
      const requests = yield* (yield* ProviderServer.ProviderServer).requests
      const input = (requests[1]?.body as { readonly input: ReadonlyArray<unknown> }).input
      expect(input.slice(1, 1 + others.length)).toStrictEqual(others)
      expect(input).toHaveLength(1 + others.length + 1)
    }).pipe(Effect.provide(TestLayer)))

  it.live("follows each item by its output_index when every event names it by another id (GitHub Copilot)", () =>
    Effect.gen(function*() {
      let n = 0
      const id = () => `opaque_${n++}`
      const script = new Script().created()
        .event("response.output_item.added", { output_index: 0, item: { id: id(), type: "reasoning", summary: [] } })
      const summary = { output_index: 0, summary_index: 0 }
      for (const delta of ["Counting ", "letters."]) {
        script.event("response.reasoning_summary_text.delta", { ...summary, item_id: id(), delta })
      }
      script.event("response.reasoning_summary_text.done", { ...summary, item_id: id(), text: "Counting letters." })
        .event("response.output_item.done", {
          output_index: 0,
          item: { id: id(), type: "reasoning", summary: [{ type: "summary_text", text: "Counting letters." }] }
        })
        .event("response.output_item.added", {
          output_index: 1,
          item: message(id(), "final_answer", "", "in_progress")
        })
        .event("response.content_part.added", {
          item_id: id(),
          output_index: 1,
          content_index: 0,
          part: { type: "output_text", text: "", annotations: [] }
        })
      for (const delta of ["There are ", "3."]) {
        script.event("response.output_text.delta", { item_id: id(), output_index: 1, content_index: 0, delta })
      }
      script.event("response.output_text.done", {
        item_id: id(),
        output_index: 1,
        content_index: 0,
        text: "There are 3."
      })
        .event("response.output_item.done", { output_index: 1, item: message(id(), "final_answer", "There are 3.") })
        .event("response.output_item.added", {
          output_index: 2,
          item: {
            id: id(),
            type: "function_call",
            status: "in_progress",
            arguments: "",
            call_id: "call_1",
            name: "count"
          }
        })
      for (const delta of ["{\"letter\":", "\"r\"}"]) {
        script.event("response.function_call_arguments.delta", { item_id: id(), output_index: 2, delta })
      }
      const args = "{\"letter\":\"r\"}"
      script.event("response.function_call_arguments.done", { item_id: id(), output_index: 2, arguments: args })
        .event("response.output_item.done", {
          output_index: 2,
          item: {
            id: "fc_done",
            type: "function_call",
            status: "completed",
            arguments: args,
            call_id: "call_1",
            name: "count"
          }
        })
        .completed(usage(19, 105))
      const deltas = yield* run([ProviderServer.sse(script.frames)])
      expect(deltas.filter((d) => d.type !== "usage" && d.type !== "turn_complete")).toStrictEqual([
        { type: "reasoning_delta", delta: "Counting " },
        { type: "reasoning_delta", delta: "letters." },
        { type: "text_delta", delta: "There are ", phase: "final_answer" },
        { type: "text_delta", delta: "3.", phase: "final_answer" },
        { type: "function_call_start", call_id: "call_1", name: "count" },
        { type: "function_call_arguments_delta", call_id: "call_1", delta: "{\"letter\":" },
        { type: "function_call_arguments_delta", call_id: "call_1", delta: "\"r\"}" },
        { type: "function_call_done", call_id: "call_1", name: "count", arguments: args }
      ])
      const turn = completeTurn(deltas)
      expect(turn.items).toMatchObject([
        { type: "reasoning", summary: [{ type: "output_text", text: "Counting letters." }] },
        { type: "message", phase: "final_answer", content: [{ type: "output_text", text: "There are 3." }] },
        { type: "function_call", id: "fc_done", call_id: "call_1", name: "count", arguments: args }
      ])
    }).pipe(Effect.provide(TestLayer)))

  it.live("takes indices near 2^32 in stride, and refuses indices that are not non-negative integers", () =>
    Effect.gen(function*() {
      const far = 4_294_967_295
      const script = new Script().created()
        .event("response.output_item.added", {
          output_index: far,
          item: { id: "msg_far", type: "message", status: "in_progress", content: [] }
        })
        .event("response.output_text.delta", {
          item_id: "msg_far",
          output_index: far,
          content_index: far,
          delta: "far "
        })
        .event("response.output_text.delta", { item_id: "msg_far", output_index: far, content_index: 0, delta: "near" })
        .event("response.output_item.added", {
          output_index: 0,
          item: { id: "rs_far", type: "reasoning", summary: [] }
        })
        .event("response.reasoning_summary_text.delta", {
          item_id: "rs_far",
          output_index: 0,
          summary_index: far - 1,
          delta: "deep"
        })
        .completed(usage(1, 1))
      const turn = completeTurn(yield* run([ProviderServer.sse(script.frames)]))
      expect(turn.items).toStrictEqual([
        {
          type: "reasoning",
          id: "rs_far",
          status: "completed",
          content: [],
          summary: [{ type: "output_text", text: "deep" }]
        },
        {
          type: "message",
          id: "msg_far",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "near" }, { type: "output_text", text: "far " }]
        }
      ])
      for (const index of [-1, 1.5, 1e300, "0"]) {
        const bad = new Script().created().messageStart("msg_1", 0)
          .event("response.output_text.delta", { item_id: "msg_1", output_index: 0, content_index: index, delta: "x" })
        const { error } = yield* runFailing([ProviderServer.sse(bad.frames)])
        expect(error).toMatchObject({ _tag: "MalformedEvent", event: "response.output_text.delta" })
        expect(error.message).toMatch(/^content_index: Expected (a non-negative integer|number)/)
      }
    }).pipe(Effect.provide(TestLayer)))

  it.live("classifies insufficient_quota as QuotaExceeded whether it comes as a 429 or in the stream, and never retries it", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const quota = {
        message: "You exceeded your current quota.",
        type: "insufficient_quota",
        code: "insufficient_quota",
        param: null
      }
      const policy = { retryPolicy: Schedule.recurs(3) }
      const http = yield* runFailing([ProviderServer.status(429, { error: quota })], policy)
      expect(http.error).toStrictEqual(
        new AiError.QuotaExceeded({
          provider: "openai",
          status: 429,
          message: "You exceeded your current quota. (insufficient_quota)"
        })
      )
      const event = yield* runFailing([
        ProviderServer.sse(new Script().created().event("error", { error: quota }).frames)
      ], policy)
      expect(event.error).toStrictEqual(
        new AiError.QuotaExceeded({
          provider: "openai",
          message: "You exceeded your current quota. (insufficient_quota)"
        })
      )
      const failed = yield* runFailing([
        ProviderServer.sse(new Script().created().failed("insufficient_quota", quota.message).frames)
      ], policy)
      expect(failed.error._tag).toBe("QuotaExceeded")
      expect(yield* server.requests).toHaveLength(3)
    }).pipe(Effect.provide(TestLayer)))

  it.live("ends the stream at response.completed without waiting for the server to close it", () =>
    Effect.gen(function*() {
      const server = yield* ProviderServer.ProviderServer
      const script = new Script().created().message("msg_1", 0, ["done"]).completed(usage(1, 1))
      const frames = script.frames.join("")
      yield* server.reply(ProviderServer.sse(script.frames, { stallAfter: frames.length }))
      const model = yield* provider({ retryPolicy: ProviderRetry.none })
      const deltas = yield* Stream.runCollect(model.streamTurn(hello, {}))
      expect(Turn.text(completeTurn(deltas))).toBe("done")
      yield* server.awaitClientAbort
    }).pipe(Effect.provide(TestLayer)))
})
