// @module-tag slow
import { Approval, EventStream, Tool, Toolkit } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Option, Schema, Scope, Stream } from "effect"
import { createHash } from "node:crypto"
import * as Path from "node:path"
import { DurableAgent, DurableEvent, DurableRunner, RunStore } from "../src/index.ts"
import { answer, call, calls, embedded, model, pricing, ran, tempDir, toolkit, withRunner } from "./fixtures.ts"

const agent = DurableAgent.make("calculator", { model, instructions: "Use the tools.", toolkit })

describe("DurableAgent on the embedded runner", () => {
  it.live("runs an agent as a workflow, logs its events, and answers a second run of the same id from storage", () => {
    const temp = tempDir()
    const before = ran.add
    return Effect.gen(function*() {
      const result = yield* agent.run({ runId: "r1", input: "Add 2 and 3" })
      expect(result._tag).toBe("Stopped")
      if (result._tag !== "Stopped") return
      expect(result.output).toBe("5")
      expect(result.termination.accounting.steps).toBe(2)
      expect(ran.add - before).toBe(1)
      const again = yield* agent.run({ runId: "r1", input: "Add 2 and 3" })
      expect(again).toStrictEqual(result)
      const recorder = yield* MockLanguageModel.MockLanguageModel
      expect((yield* recorder.requests).length).toBe(2)
      const events = yield* Stream.runCollect(agent.events("r1", { fromStep: 1 }))
      expect(events.map((event) => event._tag)).toStrictEqual([
        "TurnStarted",
        "TurnCompleted",
        "ToolResult",
        "Verdict",
        "TurnStarted",
        "TurnCompleted",
        "Verdict",
        "Finished"
      ])
      const fromLast = yield* Stream.runCollect(agent.events("r1"))
      expect(fromLast.map((event) => event._tag)).toStrictEqual(["TurnStarted", "TurnCompleted", "Verdict", "Finished"])
    }).pipe(
      Effect.provide(
        agent.layer.pipe(
          Layer.provideMerge(embedded(Path.join(temp.dir, "runs.db"), [call("add", { a: 2, b: 3 }), answer("5")]))
        )
      ),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})

describe("DurableAgent tools' idempotency keys", () => {
  it.live("are Tool.idempotencyKey of the run's execution and the call's step: the keys runs had before", () => {
    const temp = tempDir()
    const seen: Array<string | undefined> = []
    const charge = Tool.make({
      name: "charge",
      description: "Charges a card",
      input: Schema.Struct({ cents: Schema.Int }),
      output: Schema.String,
      idempotent: true,
      execute: ({ cents }) => Effect.map(Tool.IdempotencyKey, (key) => (seen.push(key), `charged ${cents}`))
    })
    const cashier = DurableAgent.make("keyed", { model, toolkit: Toolkit.make(charge) })
    return Effect.gen(function*() {
      yield* cashier.run({ runId: "k1", input: "Charge 5" })
      const executionId = yield* cashier.workflow.executionId({ runId: "k1", input: "" })
      // What @agentloop/durable 0.2 derived: a run in flight across the upgrade keeps its calls' keys.
      const before = createHash("sha256").update(`${executionId}-tool/1/0`).digest("hex").slice(0, 32)
      expect(seen).toStrictEqual([yield* Tool.idempotencyKey(executionId, "tool/1/0")])
      expect(seen).toStrictEqual([before])
    }).pipe(
      Effect.provide(
        cashier.layer.pipe(
          Layer.provideMerge(embedded(Path.join(temp.dir, "runs.db"), [call("charge", { cents: 5 }), answer("done")]))
        )
      ),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})

describe("DurableAgent approvals", () => {
  it.live("runs a turn's calls once its decisions are recorded, each call once, and streams ApprovalRequested", () => {
    const temp = tempDir()
    const before = { ...ran }
    return Effect.gen(function*() {
      yield* agent.start({ runId: "a1", input: "Note it and remove /tmp/x" })
      const requested = yield* agent.events("a1", { fromStep: 1 }).pipe(
        Stream.filter((event) => event._tag === "ApprovalRequested"),
        Stream.runHead
      )
      if (requested._tag === "None" || requested.value._tag !== "ApprovalRequested") return expect.unreachable()
      expect(requested.value.call.name).toBe("remove")
      expect([ran.note - before.note, ran.remove - before.remove]).toStrictEqual([0, 0])
      expect(yield* agent.result("a1")).toStrictEqual(Option.none())
      const invalid = yield* Effect.flip(agent.approve("not-a-token", Approval.approved))
      expect(invalid._tag).toBe("InvalidToken")
      yield* agent.approve(requested.value.token, Approval.approved)
      const result = yield* agent.run({ runId: "a1", input: "Note it and remove /tmp/x" })
      expect(result._tag === "Stopped" && result.output).toBe("removed")
      expect([ran.note - before.note, ran.remove - before.remove]).toStrictEqual([1, 1])
      const events = yield* Stream.runCollect(agent.events("a1", { fromStep: 1 }))
      const outcomes = events.flatMap((event) => event._tag === "ToolResult" ? [[event.call.name, event.outcome]] : [])
      expect(outcomes).toStrictEqual([["note", "success"], ["remove", "success"]])
    }).pipe(
      Effect.provide(agent.layer.pipe(Layer.provideMerge(embedded(
        Path.join(temp.dir, "runs.db"),
        [
          calls({ name: "note", arguments: { text: "x" } }, { name: "remove", arguments: { path: "/tmp/x" } }),
          answer("removed")
        ]
      )))),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})

const submit = Tool.make({
  name: "submit",
  description: "Submits the answer",
  input: Schema.Struct({ sum: Schema.Finite, at: Schema.Date }),
  output: Schema.Struct({ sum: Schema.Finite, at: Schema.Date }),
  idempotent: true,
  execute: (input) => Effect.succeed(input)
})

describe("DurableAgent results and terminations", () => {
  it.live("a finish tool's value and a structured output keep their types through storage", () => {
    const submitter = DurableAgent.make("submitter", { model, toolkit: Toolkit.make(submit), finish: "submit" })
    const structured = DurableAgent.make("structured", { model, output: Schema.Struct({ sum: Schema.Finite }) })
    return withRunner(
      Layer.mergeAll(submitter.layer, structured.layer),
      [call("submit", { sum: 5, at: "2025-01-02T03:04:05.000Z" }), answer("{\"sum\":7}")],
      Effect.gen(function*() {
        const submitted = yield* submitter.run({ runId: "s1", input: "Submit 5" })
        if (submitted._tag !== "Submitted") return expect.unreachable()
        expect(submitted.termination.value).toStrictEqual({ sum: 5, at: new Date("2025-01-02T03:04:05.000Z") })
        const again = yield* submitter.run({ runId: "s1", input: "Submit 5" })
        expect(again._tag === "Submitted" && again.termination.value).toStrictEqual(submitted.termination.value)
        const output = yield* structured.run({ runId: "o1", input: "Sum" })
        expect(output._tag === "Stopped" && output.output).toStrictEqual({ sum: 7 })
      })
    )
  })

  it.live("a run that ends with a termination logs it: its events fail with it, and so does running it again", () => {
    const limited = DurableAgent.make("limited", { model, toolkit, limits: { maxTurns: 1 } })
    return withRunner(
      limited.layer,
      [call("add", { a: 1, b: 1 })],
      Effect.gen(function*() {
        const failure = yield* Effect.flip(limited.run({ runId: "l1", input: "Add" }))
        if (failure._tag !== "MaxTurns") return expect.unreachable()
        expect(failure.accounting.steps).toBe(1)
        const again = yield* Effect.flip(limited.run({ runId: "l1", input: "Add" }))
        expect(again._tag).toBe("MaxTurns")
        const tags: Array<string> = []
        const streamed = yield* limited.events("l1", { fromStep: 1 }).pipe(
          Stream.runForEach((event) => Effect.sync(() => tags.push(event._tag))),
          Effect.flip
        )
        expect(streamed._tag).toBe("MaxTurns")
        expect(tags).toStrictEqual(["TurnStarted", "TurnCompleted", "ToolResult", "Verdict"])
        expect(yield* Effect.flip(limited.result("l1"))).toMatchObject({ _tag: "MaxTurns" })
        const recorder = yield* MockLanguageModel.MockLanguageModel
        expect((yield* recorder.requests).length).toBe(1)
      })
    )
  })

  it.live("a denied call is not run, and a token of another agent or that does not decode is refused", () => {
    const before = ran.remove
    const other = DurableAgent.make("other", { model, toolkit })
    return withRunner(
      Layer.mergeAll(agent.layer, other.layer),
      [call("remove", { path: "/etc" }), answer("not removed")],
      Effect.gen(function*() {
        yield* agent.start({ runId: "d1", input: "Remove /etc" })
        const requested = yield* agent.events("d1").pipe(
          Stream.filter((event) => event._tag === "ApprovalRequested"),
          Stream.runHead
        )
        if (requested._tag === "None" || requested.value._tag !== "ApprovalRequested") return expect.unreachable()
        const foreign = yield* Effect.flip(other.approve(requested.value.token, Approval.approved))
        expect(foreign.message).toMatch(/names approval\/1\/0 of agent "calculator"/)
        const cut = yield* Effect.flip(agent.approve(requested.value.token.slice(0, 10), Approval.approved))
        expect(cut._tag).toBe("InvalidToken")
        yield* agent.approve(requested.value.token, Approval.denied("not /etc"))
        const result = yield* agent.run({ runId: "d1", input: "Remove /etc" })
        expect(result._tag === "Stopped" && result.output).toBe("not removed")
        expect(ran.remove).toBe(before)
        const events = yield* Stream.runCollect(agent.events("d1", { fromStep: 1 }))
        const denied = events.find((event) => event._tag === "ToolResult")
        expect(denied?._tag === "ToolResult" && [denied.outcome, denied.reason]).toStrictEqual(["denied", "not /etc"])
      })
    )
  })
})

describe("DurableAgent events for a UI", () => {
  it.live("a UI that reconnects gets the events again from the last completed turn on, over Server-Sent Events", () =>
    withRunner(
      agent.layer,
      [call("add", { a: 1, b: 2 }), call("remove", { path: "/a" }), answer("ok")],
      Effect.gen(function*() {
        yield* agent.start({ runId: "ui1", input: "Add, then remove /a" })
        // The first connection sees the run up to the approval it waits for, then goes away.
        const first = yield* agent.events("ui1", { fromStep: 1 }).pipe(
          Stream.takeUntil((event) => event._tag === "ApprovalRequested"),
          Stream.runCollect
        )
        expect(first.map((event) => event._tag)).toStrictEqual([
          "TurnStarted",
          "TurnCompleted",
          "ToolResult",
          "Verdict",
          "TurnStarted",
          "TurnCompleted",
          "ApprovalRequested"
        ])
        const approval = first.at(-1)
        if (approval?._tag !== "ApprovalRequested") return expect.unreachable()
        // The next connection starts at the last completed turn, and reads it as a browser would; the
        // decision is recorded once it is connected.
        const connected = yield* Deferred.make<void>()
        const sse = EventStream.encode(DurableEvent.codec, { keepAlive: Duration.infinity })(agent.events("ui1"))
        const reading = yield* EventStream.decode(DurableEvent.codec)(Stream.encodeText(sse)).pipe(
          Stream.tap(() => Deferred.succeed(connected, undefined)),
          Stream.runCollect,
          Effect.forkChild
        )
        yield* Deferred.await(connected)
        yield* agent.approve(approval.token, Approval.approved)
        const again = yield* Fiber.join(reading)
        expect(again.map((event) => event._tag)).toStrictEqual([
          "TurnStarted",
          "TurnCompleted",
          "ApprovalRequested",
          "ToolResult",
          "Verdict",
          "TurnStarted",
          "TurnCompleted",
          "Verdict",
          "Finished"
        ])
        expect(again[0]).toStrictEqual({ _tag: "TurnStarted", step: 2 })
      })
    ))

  it.live("a log entry that does not decode fails the stream with a RunStoreError", () =>
    withRunner(
      agent.layer,
      [],
      Effect.gen(function*() {
        const store = yield* RunStore.RunStore
        yield* store.commit({ agent: "calculator", runId: "broken" }, {
          steps: [],
          entries: [{ seq: 0, step: 1, kind: "event", body: "{\"_tag\":\"Nope\"}" }]
        })
        const error = yield* Effect.flip(Stream.runDrain(agent.events("broken")))
        expect(error._tag).toBe("RunStoreError")
        expect(error.message).toMatch(/^entry 0:/)
      })
    ))
})

describe("the embedded runner", () => {
  it.live("reads no cluster setting from the environment, where an application's own PORT would break it", () => {
    const saved = { PORT: process.env["PORT"], SHARDS_PER_GROUP: process.env["SHARDS_PER_GROUP"] }
    process.env["PORT"] = "web"
    process.env["SHARDS_PER_GROUP"] = "many"
    const restore = Effect.sync(() => {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key]
        else process.env[key] = value
      }
    })
    return withRunner(agent.layer, [answer("fine")], agent.run({ runId: "env1", input: "Hi" })).pipe(
      Effect.map((result) => expect(result._tag === "Stopped" && result.output).toBe("fine")),
      Effect.ensuring(restore)
    )
  })
})

describe("a runner shut down with a run in flight", () => {
  it.live("stops within its termination timeout, and the next runner on the file resumes the run", () => {
    const temp = tempDir()
    const filename = Path.join(temp.dir, "runs.db")
    let started = 0
    const slow = Tool.make({
      name: "slow",
      description: "Slow the first time",
      input: Schema.Struct({}),
      output: Schema.String,
      idempotent: true,
      execute: () => Effect.suspend(() => ++started === 1 ? Effect.never : Effect.succeed("finally"))
    })
    const patient = DurableAgent.make("patient", { model, toolkit: Toolkit.make(slow) })
    const runner = patient.layer.pipe(
      Layer.provideMerge(DurableRunner.layerSqlite({ filename, sharding: { entityTerminationTimeout: "1 second" } }))
    )
    return Effect.gen(function*() {
      // Closed by the test, and at its end whatever happens (closing it again does nothing).
      const scope = yield* Effect.acquireRelease(Scope.make(), (scope) => Scope.close(scope, Exit.void))
      const context = yield* Layer.buildWithScope(runner, scope)
      yield* Effect.provideContext(patient.start({ runId: "p1", input: "Wait" }), context)
      while (started === 0) yield* Effect.sleep("20 millis")
      // The shutdown alone, its call in flight: far below effect's default termination timeout (15 s), which it would
      // otherwise wait. (Timed from the runner's start, a busy machine made the whole more than 10 s.)
      const [took] = yield* Effect.timed(Scope.close(scope, Exit.void))
      expect(Duration.toMillis(took)).toBeLessThan(10_000)
      const result = yield* patient.run({ runId: "p1", input: "Wait" }).pipe(Effect.provide(runner))
      expect(result._tag === "Stopped" && result.output).toBe("done waiting")
      expect(started).toBe(2)
      const recorder = yield* MockLanguageModel.MockLanguageModel
      expect((yield* recorder.requests).length).toBe(2)
    }).pipe(
      Effect.scoped,
      Effect.provide(Layer.mergeAll(MockLanguageModel.layer([call("slow", {}), answer("done waiting")]), pricing)),
      Effect.ensuring(Effect.sync(temp.remove))
    )
  })
})
