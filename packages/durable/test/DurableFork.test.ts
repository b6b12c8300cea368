// @module-tag slow
/**
 * Forks of durable runs, on SQLite and PostgreSQL: from any checkpoint of a
 * finished run, edited or not; of a run in flight, whose call had started;
 * around approvals; onto an id that was started and not yet executed
 * (refused); and forks are runs like any other for parking and retention.
 * The real process kill is in ForkCrash.test.ts.
 */
import { AgentHistory, Approval, Tool, Toolkit } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Layer, Option, Schedule, Schema, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Path from "node:path"
import { DurableAgent, DurableApproval, DurableRunner, NodeSqliteClient, RunStore } from "../src/index.ts"
import { answer, call, model, pricing, tempDir, toolkit } from "./fixtures.ts"
import { eachStore, lastWords, outputOf, requests, tagsOf, textOf } from "./historyFixtures.ts"

const forker = DurableAgent.make("forker", { model, toolkit })

const question = "What is 2 + 3?"

/** Adds, then answers; asked again with the same history (a fork without the answer), answers otherwise. */
const adding: MockLanguageModel.Respond = (request, index) => {
  const last = lastWords(request)
  if (last === question) return call("add", { a: 2, b: 3 })
  if (last === "5") return answer(index === 1 ? "It is 5" : "Five")
  if (last === "7") return answer("It is 7")
  if (last === "And times 2?") return answer("10")
  return answer(`unexpected: ${last}`)
}

describe.concurrent("forks of a finished durable run", () => {
  eachStore(
    "go on from any checkpoint, edited or not, ask nothing they copied, replay it, and leave the source as it was",
    () => ({
      agents: forker.layer,
      respond: adding,
      run: () =>
        Effect.gen(function*() {
          expect(outputOf(yield* forker.run({ runId: "f1", input: question }))).toBe("It is 5")
          const source = yield* forker.checkpoints("f1")
          expect(source.map((c) => c.kind)).toStrictEqual(["turn", "tool", "decision", "turn", "finished"])

          // From the tool's checkpoint, with another output: the next turn reads it; the turn is not asked again.
          yield* forker.fork({
            runId: "f1-edit",
            from: "f1",
            at: 1,
            edit: AgentHistory.replaceToolOutput("call_add", "7")
          })
          expect(outputOf(yield* forker.run({ runId: "f1-edit", input: question }))).toBe("It is 7")
          const edited = yield* forker.checkpoints("f1-edit")
          expect(edited.map((c) => c.kind)).toStrictEqual(["turn", "tool", "fork", "turn", "finished"])
          expect(edited.slice(0, 2)).toStrictEqual(source.slice(0, 2))
          expect(edited[2]?.items).toMatchObject([{ type: "function_call_output", call_id: "call_add", output: "7" }])
          // Its log replays the copied turn and call, then its own turn (the edit decided nothing about turn 1).
          expect(yield* tagsOf(forker, "f1-edit")).toStrictEqual([
            "TurnStarted",
            "TurnCompleted",
            "ToolResult",
            "TurnStarted",
            "TurnCompleted",
            "Verdict",
            "Finished"
          ])

          // A fork of the fork, from its own checkpoint, edited again: both edits hold.
          yield* forker.fork({
            runId: "f1-edit-2",
            from: "f1-edit",
            at: 2,
            edit: AgentHistory.addMessage("And times 2?")
          })
          const twice = yield* forker.stateAt("f1-edit-2", 3)
          expect(twice.checkpoint.kind).toBe("fork")
          expect(twice.history.map(textOf)).toStrictEqual([question, "", "7", "And times 2?"])
          expect((yield* forker.stateAt("f1-edit-2", 2)).history.map(textOf)).toStrictEqual([question, "", "7"])
          expect(outputOf(yield* forker.run({ runId: "f1-edit-2", input: question }))).toBe("10")

          // From the end without the last answer: the model is asked again, with the history it had.
          yield* forker.fork({ runId: "f1-again", from: "f1", at: -1, edit: AgentHistory.dropLastAnswer })
          expect(outputOf(yield* forker.run({ runId: "f1-again", input: question }))).toBe("Five")
          const asked = yield* requests
          expect(asked.at(-1)?.history).toStrictEqual(asked[1]?.history)
          expect((yield* forker.checkpoints("f1-again")).map((c) => c.kind)).toStrictEqual([
            ...source.map((c) => c.kind),
            "fork",
            "turn",
            "finished"
          ])

          // From the decision, with a message added: the next turn reads it.
          yield* forker.fork({ runId: "f1-more", from: "f1", at: 2, edit: AgentHistory.addMessage("And times 2?") })
          expect(outputOf(yield* forker.run({ runId: "f1-more", input: question }))).toBe("10")

          // From the end, unedited: finished at once, asking nothing, and its log is the source's.
          const before = (yield* requests).length
          yield* forker.fork({ runId: "f1-copy", from: "f1", at: -1 })
          expect(outputOf(yield* forker.run({ runId: "f1-copy", input: question }))).toBe("It is 5")
          expect((yield* requests).length).toBe(before)
          expect(yield* tagsOf(forker, "f1-copy")).toStrictEqual(yield* tagsOf(forker, "f1"))

          // A fork's clock is its own: its start is recorded by its first execution, after the fork.
          const store = yield* RunStore.RunStore
          const { steps } = yield* store.records({ agent: "forker", runId: "f1-edit" })
          const seqOf = (name: string) => steps.find((step) => step.name === name)?.stamp?.seq ?? -1
          const mark = steps.find((step) => step.name.startsWith("fork/"))?.name ?? ""
          expect(seqOf("start")).toBeGreaterThan(seqOf(mark))
          expect(seqOf("turn/1")).toBeLessThan(seqOf(mark))

          // Each fork asked the model once at most: 2 turns of the source, then one for each edited fork.
          expect((yield* requests).length).toBe(6)
          // The source is as it was.
          expect(yield* forker.checkpoints("f1")).toStrictEqual(source)
          expect(outputOf((yield* forker.stateAt("f1", -1)).result ?? { _tag: "none" })).toBe("It is 5")
        })
    })
  )
})

/** Counts the calls it is passed; the first says it `started`, then waits for `gate`. */
const gatedFirst = () => {
  const calls = { count: 0, started: Deferred.makeUnsafe<void>(), gate: Deferred.makeUnsafe<void>() }
  const pass: Effect.Effect<void> = Effect.suspend(() =>
    ++calls.count === 1
      ? Effect.andThen(Deferred.succeed(calls.started, undefined), Deferred.await(calls.gate))
      : Effect.void
  )
  return { calls, pass }
}

/** An agent whose charge is not idempotent; its first charge waits for `gate`, once it said it `started`. */
const makeCashier = () => {
  const { calls: charges, pass } = gatedFirst()
  const charge = Tool.make({
    name: "charge",
    description: "Charges a card",
    input: Schema.Struct({ cents: Schema.Int }),
    output: Schema.String,
    execute: ({ cents }) => Effect.as(pass, `charged ${cents}`)
  })
  return { charges, cashier: DurableAgent.make("cashier", { model, toolkit: Toolkit.make(charge) }) }
}

const charging: MockLanguageModel.Respond = (request) => {
  const last = lastWords(request)
  if (last === "Charge 5") return call("charge", { cents: 5 })
  if (last.includes("cut short")) return answer("not charged again")
  if (last.includes("charged 5")) return answer("charged")
  if (last === "Was it charged?") return answer("unknown")
  return answer(`unexpected: ${last}`)
}

describe.concurrent("forks of a durable run in flight", () => {
  eachStore("read the source as it is, leave it running, and never run again a call that had started", () => {
    const { cashier, charges } = makeCashier()
    return {
      agents: cashier.layer,
      respond: charging,
      run: () =>
        Effect.gen(function*() {
          yield* cashier.start({ runId: "s1", input: "Charge 5" })
          yield* Deferred.await(charges.started)

          // The source is in the middle of its call: listed and read as it is.
          const running = yield* cashier.checkpoints("s1")
          expect(running.map((c) => c.kind)).toStrictEqual(["turn", "started"])
          expect((yield* cashier.stateAt("s1", 0)).pending.map((c) => c.name)).toStrictEqual(["charge"])
          // The history at the turn has a call without its output: no edit there.
          const uneditable = yield* Effect.flip(
            cashier.fork({ runId: "s1-bad", from: "s1", at: 0, edit: AgentHistory.addMessage("Hi") })
          )
          expect(uneditable).toMatchObject({ _tag: "UneditableCheckpoint", id: "s1", index: 0 })
          expect(uneditable.message).toContain("calls of turn 1 have not ended there")

          // From the call's start: the fork does not charge again, and the model reads that the outcome is unknown.
          yield* cashier.fork({ runId: "s1-cut", from: "s1", at: -1 })
          expect(outputOf(yield* cashier.run({ runId: "s1-cut", input: "Charge 5" }))).toBe("not charged again")
          expect((yield* cashier.checkpoints("s1-cut")).map((c) => c.kind)).toStrictEqual([
            "turn",
            "started",
            "fork",
            "decision",
            "turn",
            "finished"
          ])
          // Edited there too: the call reads as cut off, the message follows it.
          yield* cashier.fork({
            runId: "s1-asked",
            from: "s1",
            at: -1,
            edit: AgentHistory.addMessage("Was it charged?")
          })
          expect(outputOf(yield* cashier.run({ runId: "s1-asked", input: "Charge 5" }))).toBe("unknown")
          expect((yield* cashier.checkpoints("s1-asked")).map((c) => c.kind)).toStrictEqual([
            "turn",
            "started",
            "fork",
            "turn",
            "finished"
          ])
          const asked = (yield* requests).at(-1)?.history.map((item) => item.type)
          expect(asked).toStrictEqual(["message", "function_call", "function_call_output", "message"])
          expect(charges.count).toBe(1)

          // From the turn, where the call had not started: the fork charges, once.
          yield* cashier.fork({ runId: "s1-again", from: "s1", at: 0 })
          expect(outputOf(yield* cashier.run({ runId: "s1-again", input: "Charge 5" }))).toBe("charged")
          expect(charges.count).toBe(2)

          // The source goes on as if nothing happened.
          yield* Deferred.succeed(charges.gate, undefined)
          expect(outputOf(yield* cashier.run({ runId: "s1", input: "Charge 5" }))).toBe("charged")
          expect(charges.count).toBe(2)
          expect((yield* cashier.checkpoints("s1")).map((c) => c.kind)).toStrictEqual([
            "turn",
            "started",
            "tool",
            "decision",
            "turn",
            "finished"
          ])
        })
    }
  })
})

/** An agent whose removals wait for a person's decision, and count how many times they ran. */
const makeApprover = () => {
  const removals = { count: 0 }
  const remove = Tool.make({
    name: "remove",
    description: "Removes a file",
    input: Schema.Struct({ path: Schema.String }),
    output: Schema.String,
    needsApproval: true,
    execute: ({ path }) => Effect.sync(() => (removals.count++, `removed ${path}`))
  })
  return { removals, approver: DurableAgent.make("approver", { model, toolkit: Toolkit.make(remove) }) }
}
const decodeToken = Schema.decodeSync(DurableApproval.TokenFromString)
const encodeToken = Schema.encodeSync(DurableApproval.TokenFromString)

const removing: MockLanguageModel.Respond = (request) => {
  const last = lastWords(request)
  if (last === "Remove /a") return call("remove", { path: "/a" })
  if (last.includes("removed")) return answer("removed")
  if (last.includes("not this time")) return answer("kept")
  return answer(`unexpected: ${last}`)
}

/** The token of the first approval `runId` of `agent` requested. */
const tokenOf = (runId: string, agent: DurableAgent.DurableAgent<string, never, never>) =>
  agent.events(runId, { fromStep: 1 }).pipe(
    Stream.filter((event) => event._tag === "ApprovalRequested"),
    Stream.runHead,
    Effect.flatMap((event) =>
      event._tag === "Some" && event.value._tag === "ApprovalRequested"
        ? Effect.succeed(event.value.token)
        : Effect.die("no approval requested")
    )
  )

describe.concurrent("forks and approvals", () => {
  eachStore(
    "a decision the source waits for is issued anew, with a secret of the fork's own; one decided stays decided",
    () => {
      const { approver, removals } = makeApprover()
      return {
        agents: approver.layer,
        respond: removing,
        run: () =>
          Effect.gen(function*() {
            yield* approver.start({ runId: "a1", input: "Remove /a" })
            const sourceToken = yield* tokenOf("a1", approver)
            expect((yield* approver.checkpoints("a1")).map((c) => c.kind)).toStrictEqual(["turn"])

            yield* approver.fork({ runId: "a1-f", from: "a1", at: 0 })
            const forkToken = yield* tokenOf("a1-f", approver)
            const [mine, theirs] = [decodeToken(forkToken), decodeToken(sourceToken)]
            expect(mine).toMatchObject({ runId: "a1-f", wait: theirs.wait })
            expect(mine.secret).not.toBe(theirs.secret)
            // Neither run's secret decides the other's call.
            for (const crossed of [{ ...mine, secret: theirs.secret }, { ...theirs, secret: mine.secret }]) {
              const refused = yield* Effect.flip(approver.approve(encodeToken(crossed), Approval.approved))
              expect(refused._tag).toBe("InvalidToken")
            }

            // The fork's decision runs the fork's call; the source still waits for its own.
            yield* approver.approve(forkToken, Approval.approved)
            expect(outputOf(yield* approver.run({ runId: "a1-f", input: "Remove /a" }))).toBe("removed")
            expect(removals.count).toBe(1)
            expect(yield* approver.result("a1")).toStrictEqual(Option.none())
            yield* approver.approve(sourceToken, Approval.approved)
            expect(outputOf(yield* approver.run({ runId: "a1", input: "Remove /a" }))).toBe("removed")
            expect(removals.count).toBe(2)

            // A fork after the call: its decision was recorded, so it does not wait, and nothing decides it again.
            const tool = (yield* approver.checkpoints("a1")).findIndex((c) => c.kind === "tool")
            yield* approver.fork({ runId: "a1-g", from: "a1", at: tool })
            expect(outputOf(yield* approver.run({ runId: "a1-g", input: "Remove /a" }))).toBe("removed")
            expect(removals.count).toBe(2)
            const replayed = yield* tokenOf("a1-g", approver)
            expect(decodeToken(replayed).secret).not.toBe(theirs.secret)
            const again = yield* Effect.flip(approver.approve(replayed, Approval.denied("too late")))
            expect(again).toMatchObject({ _tag: "ApprovalAlreadyDecided", decision: { _tag: "Approved" } })

            // A fork from the turn, though the source's call is decided by now: at the turn, it was not.
            yield* approver.fork({ runId: "a1-h", from: "a1", at: 0 })
            yield* approver.approve(yield* tokenOf("a1-h", approver), Approval.denied("not this time"))
            expect(outputOf(yield* approver.run({ runId: "a1-h", input: "Remove /a" }))).toBe("kept")
            expect(removals.count).toBe(2)
          })
      }
    }
  )
})

describe("a fork onto a run that was started", () => {
  it.live("is refused while the start waits for a runner, which then runs the start's own input", () => {
    const temp = tempDir()
    const filename = Path.join(temp.dir, "runs.db")
    /** This process on the file: a runner of the agent, or a client that only stores runs. */
    const here = (runs: boolean) =>
      runs
        ? forker.layer.pipe(
          Layer.provideMerge(Layer.mergeAll(MockLanguageModel.layer(adding), pricing)),
          Layer.provideMerge(DurableRunner.layerSqlite({ filename, synchronous: "NORMAL" }))
        )
        : DurableRunner.layer("client").pipe(Layer.provideMerge(NodeSqliteClient.layer({ filename })))
    return Effect.gen(function*() {
      yield* Effect.provide(forker.run({ runId: "source", input: question }), here(true))
      // Started from a process that runs nothing: the engine holds the start, no execution has begun.
      const refused = yield* Effect.gen(function*() {
        yield* forker.start({ runId: "started", input: "And times 2?" })
        return yield* Effect.result(forker.fork({ runId: "started", from: "source", at: 0 }))
      }).pipe(Effect.provide(here(false)))
      expect(refused).toMatchObject({ _tag: "Failure", failure: { _tag: "RunExists", id: "started" } })
      // A runner picks the start up: it runs with the input it was started with, not as a fork of the source.
      const started = yield* Effect.gen(function*() {
        const result = yield* forker.run({ runId: "started", input: "And times 2?" })
        return { output: outputOf(result), kinds: (yield* forker.checkpoints("started")).map((c) => c.kind) }
      }).pipe(Effect.provide(here(true)))
      expect(started).toStrictEqual({ output: "10", kinds: ["turn", "finished"] })
    }).pipe(Effect.ensuring(Effect.sync(temp.remove)))
  })
})

/** Removals that wait for decisions, one call at a time; the first waits for `gate`, once it said it `started`. */
const makeGatedApprover = () => {
  const { calls: removals, pass } = gatedFirst()
  const remove = Tool.make({
    name: "remove",
    description: "Removes a file",
    input: Schema.Struct({ path: Schema.String }),
    output: Schema.String,
    needsApproval: true,
    execute: ({ path }) => Effect.as(pass, `removed ${path}`)
  })
  const approver = DurableAgent.make("gated-approver", {
    model,
    toolkit: Toolkit.make(remove),
    limits: { toolConcurrency: 1 }
  })
  return { removals, approver }
}

/** Removes /a and /b in one turn, then answers with what the calls' outputs said. */
const removingBoth: MockLanguageModel.Respond = (request) => {
  const outputs = request.history.filter((item) => item.type === "function_call_output").map(textOf)
  if (outputs.length > 0) return answer(outputs.join(" | "))
  return MockLanguageModel.callsTurn([
    { name: "remove", arguments: { path: "/a" }, callId: "call_a" },
    { name: "remove", arguments: { path: "/b" }, callId: "call_b" }
  ], { model })
}

describe.concurrent("a fork between a turn's decisions and the end of its calls", () => {
  eachStore("runs the calls that had not started with the source's decisions, asking for none", () => {
    const { approver, removals } = makeGatedApprover()
    const requested = (runId: string) =>
      approver.events(runId, { fromStep: 1 }).pipe(
        Stream.filter((event) => event._tag === "ApprovalRequested"),
        Stream.take(2),
        Stream.runCollect,
        Effect.map((events) => events.flatMap((event) => event._tag === "ApprovalRequested" ? [event.token] : []))
      )
    return {
      agents: approver.layer,
      respond: removingBoth,
      run: () =>
        Effect.gen(function*() {
          yield* approver.start({ runId: "d1", input: "Remove /a and /b" })
          const [forA, forB] = yield* requested("d1")
          yield* approver.approve(forA ?? "", Approval.approved)
          yield* approver.approve(forB ?? "", Approval.denied("keep /b"))
          // Both decided; the call of /a started and has not ended, the call of /b has not started.
          yield* Deferred.await(removals.started)
          expect((yield* approver.checkpoints("d1")).map((c) => c.kind)).toStrictEqual(["turn", "started"])

          yield* approver.fork({ runId: "d1-f", from: "d1", at: -1 })
          // The fork decides nothing again: its call of /a is cut off, its call of /b runs with the source's denial.
          const forked = yield* approver.run({ runId: "d1-f", input: "Remove /a and /b" })
          expect(outputOf(forked)).toContain("was cut short")
          expect(outputOf(forked)).toContain("keep /b")
          expect(removals.count).toBe(1)
          // Its requests carry tokens of its own, for calls decided already: the source's decisions.
          const refused = yield* Effect.forEach(
            yield* requested("d1-f"),
            (token) => Effect.flip(approver.approve(token, Approval.approved))
          )
          expect(refused).toMatchObject([
            { _tag: "ApprovalAlreadyDecided", runId: "d1-f", decision: { _tag: "Approved" } },
            { _tag: "ApprovalAlreadyDecided", runId: "d1-f", decision: { _tag: "Denied", reason: "keep /b" } }
          ])

          // The source goes on as if nothing happened.
          yield* Deferred.succeed(removals.gate, undefined)
          const source = yield* approver.run({ runId: "d1", input: "Remove /a and /b" })
          expect(outputOf(source)).toContain("removed /a")
          expect(outputOf(source)).toContain("keep /b")
          expect(removals.count).toBe(1)
        })
    }
  })
})

const fragile = DurableAgent.make("fragile", { model, toolkit, maxCrashes: 2 })

describe.concurrent("forks are runs like any other", () => {
  eachStore("a fork whose executions keep dying is parked, alone, and goes on once unparked", () => ({
    agents: fragile.layer,
    respond: removing,
    run: (prefix) =>
      Effect.gen(function*() {
        yield* fragile.start({ runId: "p1", input: "Remove /a" })
        yield* tokenOf("p1", fragile)
        yield* fragile.fork({ runId: "p1-f", from: "p1", at: 0 })
        const token = yield* tokenOf("p1-f", fragile)
        // The fork waits for its decision, which is no crash: its count is back to 0.
        const sql = yield* SqlClient
        const attempts = sql<{ readonly attempts: number }>`
          SELECT attempts FROM ${sql(`${prefix}_agent_runs`)} WHERE agent = 'fragile' AND run_id = 'p1-f'`
        yield* attempts.pipe(
          Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (rows) => rows[0]?.attempts === 0 })
        )
        // Two executions of the fork that began and never ended, as two runners that died with it would leave them.
        const store = yield* RunStore.RunStore
        yield* store.begin({ agent: "fragile", runId: "p1-f" })
        yield* store.begin({ agent: "fragile", runId: "p1-f" })
        yield* fragile.approve(token, Approval.approved)
        const parked = yield* fragile.parked.pipe(
          Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (runs) => runs.length > 0 })
        )
        expect(parked).toMatchObject([{ _tag: "RunParked", runId: "p1-f", crashes: 2 }])
        expect((yield* Effect.flip(fragile.run({ runId: "p1-f", input: "Remove /a" })))._tag).toBe("RunParked")
        expect(yield* fragile.result("p1")).toStrictEqual(Option.none())

        expect(yield* fragile.unpark("p1-f")).toBe(true)
        expect(outputOf(yield* fragile.run({ runId: "p1-f", input: "Remove /a" }))).toBe("removed")
        yield* fragile.approve(yield* tokenOf("p1", fragile), Approval.approved)
        expect(outputOf(yield* fragile.run({ runId: "p1", input: "Remove /a" }))).toBe("removed")
        expect(yield* fragile.parked).toStrictEqual([])
      })
  }))

  const pruned = DurableAgent.make("pruned-fork", { model, toolkit })
  /** Waits until nothing is recorded for `runId`: the pruner forgot it. */
  const forgotten = (runId: string) =>
    pruned.checkpoints(runId).pipe(
      Effect.flip,
      Effect.retry({ schedule: Schedule.spaced("20 millis") }),
      Effect.timeout("10 seconds"),
      Effect.map((error) => error._tag)
    )
  eachStore("a finished fork is pruned like any run, and its source, which still waits, is left whole", () => ({
    agents: pruned.layer,
    respond: removing,
    // Runs finished 300 ms ago are pruned, every 50 ms.
    retention: { finishedBefore: "300 millis", every: "50 millis" },
    run: () =>
      Effect.gen(function*() {
        yield* pruned.start({ runId: "r1", input: "Remove /a" })
        const sourceToken = yield* tokenOf("r1", pruned)
        yield* pruned.fork({ runId: "r1-f", from: "r1", at: 0 })
        yield* pruned.approve(yield* tokenOf("r1-f", pruned), Approval.approved)
        expect(outputOf(yield* pruned.run({ runId: "r1-f", input: "Remove /a" }))).toBe("removed")
        expect(yield* forgotten("r1-f")).toBe("UnknownRun")
        const store = yield* RunStore.RunStore
        expect(yield* store.records({ agent: "pruned-fork", runId: "r1-f" })).toStrictEqual({
          steps: [],
          claims: [],
          approvals: []
        })

        // The source waits for its own decision: not finished, not pruned.
        expect((yield* pruned.checkpoints("r1")).map((c) => c.kind)).toStrictEqual(["turn"])
        yield* pruned.approve(sourceToken, Approval.approved)
        expect(outputOf(yield* pruned.run({ runId: "r1", input: "Remove /a" }))).toBe("removed")
        expect(yield* forgotten("r1")).toBe("UnknownRun")
        const gone = yield* Effect.flip(pruned.fork({ runId: "r1-g", from: "r1", at: 0 }))
        expect(gone._tag).toBe("UnknownRun")
      })
  }))
})
