import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Ref, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as Approval from "../src/Approval.ts"
import { Halt } from "../src/Halt.ts"
import type * as Item from "../src/Item.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { add } from "./fixtures.ts"

const call = (name: string, args: string, callId = "c1"): Item.FunctionCall => ({
  type: "function_call",
  id: `fc_${callId}`,
  status: "completed",
  call_id: callId,
  name,
  arguments: args
})

const errorOf = (result: Toolkit.Result): unknown => (JSON.parse(result.output.output) as { error: unknown }).error

class OutOfStock extends Schema.TaggedError<OutOfStock>()("OutOfStock", { message: Schema.String }) {}

const order = Tool.make({
  name: "order",
  description: "Orders an item",
  input: Schema.Struct({ item: Schema.String }),
  output: Schema.String,
  execute: ({ item }) => Effect.fail(new OutOfStock({ message: `no ${item} left` }))
})

const Rejection = Schema.Struct({ code: Schema.Finite, retryable: Schema.Boolean })
const book = Tool.make({
  name: "book",
  description: "Books a room",
  input: Schema.Struct({}),
  output: Schema.String,
  failure: Rejection,
  execute: () => Effect.fail({ code: 409, retryable: false })
})

const crash = Tool.make({
  name: "crash",
  description: "Has a bug",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () => Effect.die(new Error("cannot read property x of undefined"))
})

const sleepFor = Tool.make({
  name: "sleep",
  description: "Sleeps for some seconds",
  input: Schema.Struct({ seconds: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ seconds }) => Effect.as(Effect.sleep(`${seconds} seconds`), seconds)
})

const schedule = Tool.make({
  name: "schedule",
  description: "Schedules a meeting",
  input: Schema.Struct({ at: Schema.Date }),
  output: Schema.Struct({ at: Schema.Date, reminder: Schema.DurationFromMillis }),
  execute: ({ at }) => Effect.succeed({ at: new Date(at.getTime() + 60_000), reminder: Duration.seconds(90) })
})

const deleteFile = Tool.make({
  name: "delete_file",
  description: "Deletes a file",
  input: Schema.Struct({ path: Schema.String }),
  output: Schema.Boolean,
  needsApproval: true,
  execute: () => Effect.succeed(true)
})

const toolkit = Toolkit.make(add, order, book, crash, sleepFor, schedule, deleteFile)

/** A tool that never finishes; `started` completes once `count` calls are running, `interrupted` counts interruptions. */
const hangingTool = (count: number) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const running = yield* Ref.make(0)
    const interrupted = yield* Ref.make(0)
    const hang = Tool.make({
      name: "hang",
      description: "Never finishes",
      input: Schema.Struct({}),
      output: Schema.String,
      execute: () =>
        Ref.updateAndGet(running, (n) => n + 1).pipe(
          Effect.andThen((n) => n === count ? Deferred.succeed(started, undefined) : Effect.void),
          Effect.andThen(Effect.never),
          Effect.onInterrupt(() => Ref.update(interrupted, (n) => n + 1))
        )
    })
    return { hang, interrupted, started }
  })

const runOne = (c: Item.FunctionCall, options?: Toolkit.Options) =>
  Effect.map(Toolkit.executeAllSafe(toolkit, [c], options), (results) => results[0]!)

describe("Toolkit.executeAllSafe", () => {
  it.effect("runs a call and encodes its output as JSON text", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("add", "{\"a\":2,\"b\":3}"))
      expect(result.outcome).toBe("success")
      expect(result.output).toStrictEqual({
        type: "function_call_output",
        id: "fco_c1",
        status: "completed",
        call_id: "c1",
        output: "5"
      })
      expect(result.outcome === "success" && result.value).toBe(5)
    }))

  it.effect("encodes the output with its Schema: dates and transformed fields", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("schedule", "{\"at\":\"2025-01-02T03:04:05.000Z\"}"))
      expect(result.outcome).toBe("success")
      expect(JSON.parse(result.output.output)).toStrictEqual({ at: "2025-01-02T03:05:05.000Z", reminder: 90_000 })
    }))

  it.effect("names the unknown tool and the tools that exist", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("multiply", "{}"))
      expect(result.outcome).toBe("unknown_tool")
      expect(result.output.status).toBe("incomplete")
      expect(result.output.call_id).toBe("c1")
      expect(errorOf(result)).toBe(
        "Unknown tool \"multiply\". Available tools: \"add\", \"order\", \"book\", \"crash\", \"sleep\", \"schedule\", \"delete_file\"."
      )
      const empty = yield* Toolkit.executeAllSafe(Toolkit.make(), [call("add", "{}")])
      expect(errorOf(empty[0]!)).toBe("Unknown tool \"add\": no tools are available.")
    }))

  it.effect("reports arguments that are not JSON with the parse error", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("add", "{\"a\":2,\"b\":"))
      expect(result.outcome).toBe("invalid_arguments")
      expect(errorOf(result)).toMatch(
        /^The arguments of tool "add" are not valid JSON \(.*JSON.*\)\. Send one JSON object\.$/
      )
    }))

  it.effect("reports every decode issue of the arguments with its path", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("add", "{\"a\":\"two\"}"))
      expect(result.outcome).toBe("invalid_arguments")
      const error = String(errorOf(result))
      expect(error).toContain("The arguments of tool \"add\" do not match its parameters")
      expect(error).toContain("Expected number")
      expect(error).toContain("at [\"a\"]")
      expect(error).toContain("Missing key")
      expect(error).toContain("at [\"b\"]")
    }))

  it.effect("treats empty arguments as an empty object", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("book", ""))
      expect(result.outcome).toBe("failure")
    }))

  it.effect("passes a tool's failure message on", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("order", "{\"item\":\"tea\"}"))
      expect(result.outcome).toBe("failure")
      expect(errorOf(result)).toBe("Tool \"order\" failed: OutOfStock: no tea left")
    }))

  it.effect("encodes a failure with the tool's failure Schema", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("book", "{}"))
      expect(result.outcome).toBe("failure")
      expect(errorOf(result)).toStrictEqual({ code: 409, retryable: false })
    }))

  it.effect("reports a tool that fails with Halt as halted, not as its failure", () =>
    Effect.gen(function*() {
      const stop = Tool.make({
        name: "stop",
        description: "Ends the run",
        input: Schema.Struct({ why: Schema.String }),
        output: Schema.String,
        failure: Schema.String,
        execute: ({ why }) => Effect.fail(new Halt({ reason: why }))
      })
      const [result] = yield* Toolkit.executeAllSafe(Toolkit.make(stop), [call("stop", "{\"why\":\"user left\"}")])
      expect(result!.outcome).toBe("halted")
      expect(errorOf(result!)).toBe("Tool \"stop\" halted the run: user left")
    }))

  it.effect("reports a defect with its message", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("crash", "{}"))
      expect(result.outcome).toBe("defect")
      expect(errorOf(result)).toBe("Tool \"crash\" crashed: cannot read property x of undefined")
    }))

  it.effect("reports an output that does not match the output Schema as a defect", () =>
    Effect.gen(function*() {
      const positive = Tool.make({
        name: "positive",
        description: "Should return a positive number",
        input: Schema.Struct({}),
        output: Schema.Finite.check(Schema.isGreaterThan(0)),
        execute: () => Effect.succeed(-1)
      })
      const [result] = yield* Toolkit.executeAllSafe(Toolkit.make(positive), [call("positive", "{}")])
      expect(result!.outcome).toBe("defect")
      expect(String(errorOf(result!))).toContain("returned an output that does not match its output schema")
    }))

  it.effect("stops a call at the timeout and says after how long", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(runOne(call("sleep", "{\"seconds\":10}"), { timeout: "2 seconds" }))
      yield* TestClock.adjust("2 seconds")
      const result = yield* Fiber.join(fiber)
      expect(result.outcome).toBe("timeout")
      expect(errorOf(result)).toBe("Tool \"sleep\" did not finish within 2s and was stopped.")
    }))

  it.effect("stops a call that never returns after the default timeout, unless told to wait forever", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(runOne(call("sleep", "{\"seconds\":3600}")))
      yield* TestClock.adjust(Toolkit.defaultTimeout)
      const result = yield* Fiber.join(fiber)
      expect(result.outcome).toBe("timeout")
      expect(errorOf(result)).toBe("Tool \"sleep\" did not finish within 5m and was stopped.")

      const patient = yield* Effect.forkChild(
        runOne(call("sleep", "{\"seconds\":3600}"), { timeout: Duration.infinity })
      )
      yield* TestClock.adjust("1 hour")
      expect((yield* Fiber.join(patient)).outcome).toBe("success")
    }))

  it.effect("a call whose tool cannot be interrupted ends at its timeout; the tool finishes on its own", () =>
    Effect.gen(function*() {
      const finished = yield* Deferred.make<void>()
      const stubborn = Tool.make({
        name: "stubborn",
        description: "Blocks for an hour, uninterruptibly",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () =>
          Effect.uninterruptible(Effect.andThen(Effect.sleep("1 hour"), Deferred.succeed(finished, undefined))).pipe(
            Effect.as("late")
          )
      })
      const fiber = yield* Effect.forkChild(
        Toolkit.executeAllSafe(Toolkit.make(stubborn), [call("stubborn", "{}")], { timeout: "2 seconds" })
      )
      yield* TestClock.adjust("2 seconds")
      yield* Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))
      const exit = fiber.pollUnsafe()
      expect(exit !== undefined && Exit.isSuccess(exit) && exit.value[0]?.outcome).toBe("timeout")
      expect(yield* Deferred.isDone(finished)).toBe(false)
      yield* TestClock.adjust("1 hour")
      yield* Deferred.await(finished)
    }))

  it.effect("lets a tool's own timeout win over the option", () =>
    Effect.gen(function*() {
      const patient = Tool.make({
        name: "patient",
        description: "Takes 5 seconds",
        input: Schema.Struct({}),
        output: Schema.String,
        timeout: "10 seconds",
        execute: () => Effect.as(Effect.sleep("5 seconds"), "done")
      })
      const fiber = yield* Effect.forkChild(
        Toolkit.executeAllSafe(Toolkit.make(patient), [call("patient", "{}")], { timeout: "1 second" })
      )
      yield* TestClock.adjust("5 seconds")
      const [result] = yield* Fiber.join(fiber)
      expect(result!.outcome).toBe("success")
      expect(result!.output.output).toBe("\"done\"")
    }))

  it.effect("denies a call that needs approval when no approver is configured", () =>
    Effect.gen(function*() {
      const result = yield* runOne(call("delete_file", "{\"path\":\"/etc/passwd\"}"))
      expect(result.outcome).toBe("denied")
      expect(errorOf(result)).toBe(
        "Tool \"delete_file\" requires approval and no approver is configured, so the call was not run."
      )
    }))

  it.effect("runs a call the approver approves, and shows the approver the decoded input", () =>
    Effect.gen(function*() {
      const seen: Array<Approval.Request> = []
      const approver = Approval.layer((request) =>
        Effect.sync(() => {
          seen.push(request)
          return Approval.approved
        })
      )
      const result = yield* runOne(call("delete_file", "{\"path\":\"/tmp/x\"}")).pipe(Effect.provide(approver))
      expect(result.outcome).toBe("success")
      expect(seen.map((r) => [r.tool, r.input, r.call.call_id])).toStrictEqual([[
        "delete_file",
        { path: "/tmp/x" },
        "c1"
      ]])
      const allowed = yield* runOne(call("delete_file", "{\"path\":\"/tmp/x\"}")).pipe(
        Effect.provide(Approval.allowAll)
      )
      expect(allowed.outcome).toBe("success")
    }))

  it.effect("sends the approver's reason for a denial", () =>
    Effect.gen(function*() {
      const approver = Approval.layer((request) =>
        Effect.succeed(
          Approval.denied(`the user declined to delete ${String((request.input as { path: string }).path)}`)
        )
      )
      const result = yield* runOne(call("delete_file", "{\"path\":\"/home\"}")).pipe(Effect.provide(approver))
      expect(result.outcome).toBe("denied")
      expect(errorOf(result)).toBe("the user declined to delete /home")
    }))

  it.effect("asks for approval only when needsApproval holds for the input", () =>
    Effect.gen(function*() {
      const remove = Tool.make({
        name: "remove",
        description: "Removes a path",
        input: Schema.Struct({ path: Schema.String }),
        output: Schema.Boolean,
        needsApproval: ({ path }) => path.startsWith("/"),
        execute: () => Effect.succeed(true)
      })
      const results = yield* Toolkit.executeAllSafe(Toolkit.make(remove), [
        call("remove", "{\"path\":\"tmp/a\"}", "c1"),
        call("remove", "{\"path\":\"/a\"}", "c2")
      ])
      expect(results.map((r) => r.outcome)).toStrictEqual(["success", "denied"])
    }))

  it.effect("counts a dying approver as a denial", () =>
    Effect.gen(function*() {
      const approver = Approval.layer(() => Effect.die(new Error("approval endpoint unreachable")))
      const result = yield* runOne(call("delete_file", "{\"path\":\"/a\"}")).pipe(Effect.provide(approver))
      expect(result.outcome).toBe("denied")
      expect(errorOf(result)).toBe("The approval of tool \"delete_file\" failed: approval endpoint unreachable")
    }))

  it.effect("reports a throwing needsApproval and a self-interrupting tool as defects, and runs the other calls", () =>
    Effect.gen(function*() {
      const picky = Tool.make({
        name: "picky",
        description: "Has a buggy approval predicate",
        input: Schema.Struct({}),
        output: Schema.Boolean,
        needsApproval: () => {
          throw new Error("predicate bug")
        },
        execute: () => Effect.succeed(true)
      })
      const quits = Tool.make({
        name: "quits",
        description: "Interrupts itself",
        input: Schema.Struct({}),
        output: Schema.Boolean,
        execute: () => Effect.interrupt
      })
      const results = yield* Toolkit.executeAllSafe(Toolkit.make(picky, quits, add), [
        call("picky", "{}", "c1"),
        call("quits", "{}", "c2"),
        call("add", "{\"a\":1,\"b\":2}", "c3")
      ])
      expect(results.map((r) => r.outcome)).toStrictEqual(["defect", "defect", "success"])
      expect(errorOf(results[0]!)).toBe("Tool \"picky\" crashed: predicate bug")
      expect(errorOf(results[1]!)).toBe("Tool \"quits\" was interrupted before it finished.")
    }))

  it.effect("returns results in call order when calls finish out of order", () =>
    Effect.gen(function*() {
      const finished: Array<number> = []
      const timed = Tool.make({
        name: "timed",
        description: "Sleeps, then returns its id",
        input: Schema.Struct({ id: Schema.Finite, seconds: Schema.Finite }),
        output: Schema.Finite,
        execute: ({ id, seconds }) =>
          Effect.sleep(`${seconds} seconds`).pipe(Effect.andThen(Effect.sync(() => finished.push(id))), Effect.as(id))
      })
      const calls = [[1, 3], [2, 1], [3, 0], [4, 2]].map(([id, seconds]) =>
        call("timed", JSON.stringify({ id, seconds }), `c${id}`)
      )
      const fiber = yield* Effect.forkChild(Toolkit.executeAllSafe(Toolkit.make(timed), calls))
      yield* TestClock.adjust("3 seconds")
      const results = yield* Fiber.join(fiber)
      expect(finished).toStrictEqual([3, 2, 4, 1])
      expect(results.map((r) => [r.call.call_id, r.output.call_id, r.output.output])).toStrictEqual([
        ["c1", "c1", "1"],
        ["c2", "c2", "2"],
        ["c3", "c3", "3"],
        ["c4", "c4", "4"]
      ])
    }))

  it.effect("runs at most `concurrency` calls at once", () =>
    Effect.gen(function*() {
      const inFlight = yield* Ref.make(0)
      const maxInFlight = yield* Ref.make(0)
      const busy = Tool.make({
        name: "busy",
        description: "Works for a second",
        input: Schema.Struct({}),
        output: Schema.Boolean,
        execute: () =>
          Effect.gen(function*() {
            const now = yield* Ref.updateAndGet(inFlight, (n) => n + 1)
            yield* Ref.update(maxInFlight, (max) => Math.max(max, now))
            yield* Effect.sleep("1 second")
            yield* Ref.update(inFlight, (n) => n - 1)
            return true
          })
      })
      const calls = Array.from({ length: 10 }, (_, i) => call("busy", "{}", `c${i}`))
      const fiber = yield* Effect.forkChild(Toolkit.executeAllSafe(Toolkit.make(busy), calls, { concurrency: 3 }))
      yield* TestClock.adjust("4 seconds")
      const results = yield* Fiber.join(fiber)
      expect(results.every((r) => r.outcome === "success")).toBe(true)
      expect(yield* Ref.get(maxInFlight)).toBe(3)

      const defaultFiber = yield* Effect.forkChild(Toolkit.executeAllSafe(Toolkit.make(busy), calls))
      yield* Ref.set(maxInFlight, 0)
      yield* TestClock.adjust("3 seconds")
      yield* Fiber.join(defaultFiber)
      expect(yield* Ref.get(maxInFlight)).toBe(4)
    }))

  it.effect("interrupting it interrupts the running tools", () =>
    Effect.gen(function*() {
      const { hang, interrupted, started } = yield* hangingTool(2)
      const fiber = yield* Effect.forkChild(
        Toolkit.executeAllSafe(Toolkit.make(hang), [call("hang", "{}", "c1"), call("hang", "{}", "c2")])
      )
      yield* Deferred.await(started)
      const exit = yield* Fiber.interrupt(fiber).pipe(Effect.andThen(Fiber.await(fiber)))
      expect(Exit.hasInterrupts(exit)).toBe(true)
      expect(yield* Ref.get(interrupted)).toBe(2)
    }))

  it.effect("returns the last value of a streaming tool and reports its progress", () =>
    Effect.gen(function*() {
      const download = Tool.make({
        name: "download",
        description: "Downloads a file",
        input: Schema.Struct({ url: Schema.String }),
        output: Schema.Struct({ bytes: Schema.Finite }),
        execute: () => Stream.make(Tool.progress(25), Tool.progress(75), Tool.done({ bytes: 2048 }), Tool.progress(100))
      })
      const progress: Array<unknown> = []
      const [result] = yield* Toolkit.executeAllSafe(Toolkit.make(download), [call("download", "{\"url\":\"u\"}")], {
        onProgress: (event) => Effect.sync(() => progress.push([event.index, event.call.call_id, event.value]))
      })
      expect(result!.outcome).toBe("success")
      expect(result!.output.output).toBe("{\"bytes\":2048}")
      expect(progress).toStrictEqual([[0, "c1", 25], [0, "c1", 75]])
    }))

  it.effect("reports a streaming tool that ends without a result as a defect", () =>
    Effect.gen(function*() {
      const quitter = Tool.make({
        name: "quitter",
        description: "Gives up",
        input: Schema.Struct({}),
        output: Schema.String,
        execute: () => Stream.make(Tool.progress("trying"))
      })
      const [result] = yield* Toolkit.executeAllSafe(Toolkit.make(quitter), [call("quitter", "{}")])
      expect(result!.outcome).toBe("defect")
      expect(errorOf(result!)).toBe("Tool \"quitter\" crashed: its stream ended without a Done event")
    }))

  it.effect("streams progress and results as calls end", () =>
    Effect.gen(function*() {
      const steps = Tool.make({
        name: "steps",
        description: "Reports steps",
        input: Schema.Struct({ n: Schema.Finite }),
        output: Schema.Finite,
        execute: ({ n }) =>
          Stream.make(Tool.progress(`step of ${n}`), Tool.done(n)).pipe(
            Stream.tap(() => Effect.sleep(`${n} seconds`))
          )
      })
      const fiber = yield* Effect.forkChild(
        Stream.runCollect(
          Toolkit.streamAll(Toolkit.make(steps, add), [
            call("steps", "{\"n\":2}", "slow"),
            call("steps", "{\"n\":1}", "fast"),
            call("nope", "{}", "bad")
          ])
        )
      )
      yield* TestClock.adjust("4 seconds")
      const events = yield* Fiber.join(fiber)
      const summary = events.map((e) =>
        e._tag === "Progress" ? ["progress", e.index, e.value] : ["result", e.index, e.result.outcome]
      )
      expect(summary.filter((e) => e[0] === "result")).toStrictEqual([
        ["result", 2, "unknown_tool"],
        ["result", 1, "success"],
        ["result", 0, "success"]
      ])
      // Both calls start at once, so their first progress events may come in either order.
      expect(summary.filter((e) => e[0] === "progress").sort()).toStrictEqual([
        ["progress", 0, "step of 2"],
        ["progress", 1, "step of 1"]
      ])
    }))

  it.effect("ending streamAll early interrupts the calls still running", () =>
    Effect.gen(function*() {
      const { hang, interrupted, started } = yield* hangingTool(1)
      const afterHang = Tool.make({
        name: "after_hang",
        description: "Returns once the hanging call runs",
        input: Schema.Struct({}),
        output: Schema.Boolean,
        execute: () => Effect.as(Deferred.await(started), true)
      })
      const events = yield* Toolkit.streamAll(Toolkit.make(hang, afterHang), [
        call("hang", "{}", "slow"),
        call("after_hang", "{}", "fast")
      ]).pipe(
        Stream.filter((event) => event._tag === "Result"),
        Stream.take(1),
        Stream.runCollect
      )
      expect(events.map((event) => event._tag === "Result" && [event.index, event.result.outcome])).toStrictEqual([
        [1, "success"]
      ])
      expect(yield* Ref.get(interrupted)).toBe(1)
    }))

  it.effect("records a call that ended even when the stream is interrupted while it records", () =>
    Effect.gen(function*() {
      const recording = yield* Deferred.make<void>()
      const recorded: Array<number> = []
      const fiber = yield* Toolkit.streamAll(Toolkit.make(add), [call("add", "{\"a\":1,\"b\":2}")], {
        onResult: (index) =>
          Deferred.succeed(recording, undefined).pipe(
            Effect.andThen(Effect.sleep("1 second")),
            Effect.andThen(Effect.sync(() => recorded.push(index)))
          )
      }).pipe(Stream.runDrain, Effect.forkChild)
      yield* Deferred.await(recording)
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(fiber))
      for (let i = 0; i < 10; i++) yield* Effect.yieldNow
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(interrupting)
      expect(recorded).toStrictEqual([0])
    }))

  it.effect("onStart runs once a call may run (after its approval), before its tool; its failure runs nothing", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const keyed = (name: string, needsApproval: boolean) =>
        Tool.make({
          name,
          description: name,
          input: Schema.Struct({}),
          output: Schema.String,
          needsApproval,
          execute: () => Effect.map(Tool.IdempotencyKey, (key) => (ran.push(`${name} ${key}`), name))
        })
      const toolkit = Toolkit.make(keyed("free", false), keyed("guarded", true))
      const calls = [call("free", "{}", "c1"), call("guarded", "{}", "c2"), call("nothing", "{}", "c3")]
      const started: Array<string> = []
      const events = yield* Toolkit.streamAll(toolkit, calls, {
        onStart: (index, tool) => Effect.sync(() => started.push(`${index} ${tool.name}`)),
        idempotencyKey: (index) => Effect.succeed(`key-${index}`)
      }).pipe(Stream.runCollect, Effect.provide(Approval.denyAll("no")))
      // The denied call and the unknown tool never start; the call that runs sees its key.
      expect(started).toStrictEqual(["0 free"])
      expect(ran).toStrictEqual(["free key-0"])
      expect(events.flatMap((event) => event._tag === "Result" ? [event.result.outcome] : []).sort()).toStrictEqual([
        "denied",
        "success",
        "unknown_tool"
      ])

      // A start that cannot be recorded fails the stream, and the tool does not run.
      const failed = yield* Toolkit.streamAll(toolkit, [call("free", "{}", "c4")], {
        onStart: () => Effect.fail("not recorded")
      }).pipe(Stream.runDrain, Effect.flip)
      expect(failed).toBe("not recorded")
      expect(ran).toStrictEqual(["free key-0"])
    }))

  it("outcomeUnknown tells the model the call was cut short and its outcome is unknown", () => {
    const result = Toolkit.outcomeUnknown(call("charge", "{}", "c9"))
    expect(result).toMatchObject({ outcome: "failure", output: { call_id: "c9", status: "incomplete" } })
    expect(JSON.parse(result.output.output)).toStrictEqual({ error: result.reason })
    expect(result.reason).toContain("not run again: whether it took effect is unknown")
  })

  it.effect("counts mistakes and collects output items in order", () =>
    Effect.gen(function*() {
      const results = yield* Toolkit.executeAllSafe(toolkit, [
        call("add", "{\"a\":1,\"b\":1}", "c1"),
        call("order", "{\"item\":\"x\"}", "c2"),
        call("what", "{}", "c3")
      ])
      expect(results.filter(Toolkit.isMistake).map((r) => r.outcome)).toStrictEqual(["failure", "unknown_tool"])
      expect(Toolkit.outputs(results).map((o) => [o.id, o.status])).toStrictEqual([
        ["fco_c1", "completed"],
        ["fco_c2", "incomplete"],
        ["fco_c3", "incomplete"]
      ])
    }))
})

describe("a tool's items (the seed's decorateResultItem and itemSchemas)", () => {
  const CardResult = Schema.Struct({
    type: Schema.Literal("function_call_output"),
    call_id: Schema.String,
    output: Schema.String,
    card: Schema.Struct({ title: Schema.String, count: Schema.Finite })
  })
  const counter = (
    decorate: (params: Tool.DecorateParams<{ readonly n: number }, number>) => Item.FunctionCallOutput
  ) =>
    Tool.make({
      name: "count",
      description: "Counts to n",
      input: Schema.Struct({ n: Schema.Finite }),
      output: Schema.Finite,
      itemSchemas: { toolResults: [CardResult] },
      decorateResultItem: decorate,
      execute: ({ n }) => n < 0 ? Effect.fail(new OutOfStock({ message: "negative" })) : Effect.succeed(n)
    })
  const withCard = counter(({ baseItem, result, args, error }) => ({
    ...baseItem,
    card: { title: error ? `failed on ${args?.n ?? "?"}` : "counted", count: result ?? 0 }
  }))

  it.effect("decorateResultItem makes every result item, failures included, and its schemas gate it", () =>
    Effect.gen(function*() {
      const [ok, failed, bad] = yield* Toolkit.executeAllSafe(Toolkit.make(withCard), [
        call("count", "{\"n\":3}", "c1"),
        call("count", "{\"n\":-1}", "c2"),
        call("count", "{\"n\":\"x\"}", "c3")
      ])
      expect(ok).toMatchObject({
        outcome: "success",
        output: { call_id: "c1", output: "3", card: { title: "counted", count: 3 } }
      })
      expect(failed).toMatchObject({ outcome: "failure", output: { call_id: "c2", card: { title: "failed on -1" } } })
      expect(bad).toMatchObject({ outcome: "invalid_arguments", output: { card: { title: "failed on ?", count: 0 } } })
    }))

  it.effect("a decoration that throws, leaves the call, or fails the schemas ends the call as a defect", () =>
    Effect.gen(function*() {
      const throwing = counter(() => {
        throw new Error("no card today")
      })
      const elsewhere = counter(({ baseItem }) => ({ ...baseItem, call_id: "another" }))
      const plain = counter(({ baseItem }) => baseItem)
      for (
        const [tool, reason] of [
          [throwing, "could not make its result item: no card today"],
          [elsewhere, "not the function_call_output of its call"],
          [plain, "matches none of its itemSchemas.toolResults"]
        ] as const
      ) {
        const [result] = yield* Toolkit.executeAllSafe(Toolkit.make(tool), [call("count", "{\"n\":1}")])
        expect(result?.outcome).toBe("defect")
        expect(String(errorOf(result!))).toContain(reason)
        expect(result?.output).toMatchObject({ type: "function_call_output", call_id: "c1" })
      }
    }))

  it.effect("a call that fails the tool's toolCalls schemas is answered as invalid arguments, and not run", () =>
    Effect.gen(function*() {
      let ran = 0
      const strict = Tool.make({
        name: "strict",
        description: "Takes calls with an id of its kind only",
        input: Schema.Struct({}),
        output: Schema.String,
        itemSchemas: { toolCalls: [Schema.Struct({ call_id: Schema.String.check(Schema.isPattern(/^call_/)) })] },
        execute: () => Effect.sync(() => (ran++, "ran"))
      })
      const [refused, accepted] = yield* Toolkit.executeAllSafe(Toolkit.make(strict), [
        call("strict", "{}", "x1"),
        call("strict", "{}", "call_2")
      ])
      expect(refused?.outcome).toBe("invalid_arguments")
      expect(String(errorOf(refused!))).toContain("itemSchemas.toolCalls")
      expect(accepted?.outcome).toBe("success")
      expect(ran).toBe(1)
    }))
})
