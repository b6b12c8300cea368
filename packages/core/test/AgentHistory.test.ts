import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as AgentCheckpoint from "../src/agent/AgentCheckpoint.ts"
import * as AgentHistory from "../src/agent/AgentHistory.ts"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as UIMessageStream from "../src/stream/UIMessageStream.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import { addCall, answer, model, pricing, usage } from "./agentFixtures.ts"
import { eachStore } from "./checkpointFixtures.ts"
import { add } from "./fixtures.ts"

const toolkit = Toolkit.make(add)
const fresh = (name: string) => `${name}-${Math.random().toString(36).slice(2)}`
const optionsOf = (runId: string) => ({ input: "What is 1 + 2?", toolkit, model, runId })

/** The mock's script and what it was asked, for a stream of `options`. */
const streamed = <O = string>(script: ReadonlyArray<MockLanguageModel.Reply>, options: AgentLoop.Options<O>) =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    const events = yield* Stream.runCollect(agent.stream(options))
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { events, requests }
  }).pipe(
    Effect.provide(
      AgentLoop.layer.pipe(Layer.provideMerge(MockLanguageModel.layer(script)), Layer.provideMerge(pricing))
    )
  )

const read = (id: string) => Effect.flatMap(Checkpointer.Checkpointer, (checkpointer) => checkpointer.read(id))

/** A run of two turns: the model adds 1 and 2, then answers. */
const recorded = (runId: string) => streamed([addCall(1, 2), answer("3")], optionsOf(runId))

const suite = (name: string, layer: () => Layer.Layer<Checkpointer.Checkpointer, unknown>) =>
  describe(name, () => {
    it.effect("lists a run's checkpoints with what each holds, and reads the run at any of them", () =>
      Effect.gen(function*() {
        const options = optionsOf(fresh("listed"))
        yield* recorded(options.runId)
        const checkpoints = yield* AgentHistory.checkpoints(options)
        expect(checkpoints.map(({ index, kind, step }) => [index, kind, step])).toStrictEqual([
          [0, "turn", 1],
          [1, "tool", 1],
          [2, "decision", 1],
          [3, "turn", 2],
          [4, "finished", 2]
        ])
        expect(checkpoints.map((checkpoint) => checkpoint.usage.total)).toStrictEqual([30, 30, 30, 60, 60])
        expect(checkpoints[0]!.cost).toBeCloseTo(0.00004)
        expect(checkpoints[4]!.cost).toBeCloseTo(0.00008)
        expect(checkpoints.every((checkpoint) => typeof checkpoint.time === "number")).toBe(true)
        expect(checkpoints[0]!.items).toMatchObject([{ type: "function_call", name: "add" }])
        expect(checkpoints[1]!.items).toMatchObject([{ type: "function_call_output", output: "3" }])
        expect(checkpoints[3]!.items).toMatchObject([{ type: "message", role: "assistant" }])

        const afterTool = yield* AgentHistory.stateAt(options, 1)
        expect(afterTool.history.map((item) => item.type)).toStrictEqual([
          "message",
          "function_call",
          "function_call_output"
        ])
        expect(afterTool).toMatchObject({ turns: 1, pending: [], result: undefined, checkpoint: { kind: "tool" } })
        const last = yield* AgentHistory.stateAt(options, -1)
        expect(last.turns).toBe(2)
        expect(last.result).toMatchObject({ _tag: "Stopped", output: "3" })
        expect(last.history).toStrictEqual(last.result?.history)
      }).pipe(Effect.provide(layer())))

    it.effect("a turn's calls that have not ended are pending at its checkpoint; a fork there runs only them", () =>
      Effect.gen(function*() {
        const ran: Array<string> = []
        const counted = Toolkit.make(Tool.make({
          name: "add",
          description: "Adds two numbers",
          input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
          output: Schema.Finite,
          idempotent: true,
          execute: ({ a, b }) => Effect.sync(() => (ran.push(`${a}+${b}`), a + b))
        }))
        const options = { ...optionsOf(fresh("pending")), toolkit: counted }
        const twoCalls = MockLanguageModel.callsTurn([
          { name: "add", arguments: { a: 1, b: 1 }, callId: "call_a" },
          { name: "add", arguments: { a: 2, b: 2 }, callId: "call_b" }
        ], { model, usage })
        yield* streamed([twoCalls, answer("2 and 4")], options)
        const turn = yield* AgentHistory.stateAt(options, 0)
        expect(turn.pending.map((call) => call.call_id)).toStrictEqual(["call_a", "call_b"])
        const oneDone = yield* AgentHistory.stateAt(options, 1)
        expect(oneDone.pending.map((call) => call.call_id)).toStrictEqual(["call_b"])
        expect(oneDone.history.filter((item) => item.type === "function_call_output")).toHaveLength(1)

        // Editing the history where calls are pending would leave calls without outputs.
        const error = yield* Effect.flip(
          AgentHistory.fork({ ...options, runId: fresh("fork"), from: options.runId, at: 1, edit: (h) => h })
        )
        expect(error).toMatchObject({ _tag: "UneditableCheckpoint", id: options.runId, index: 1 })
        // Without an edit, the fork is in the middle of the turn: only the call that had not ended runs.
        const fork = { ...options, runId: fresh("fork") }
        yield* AgentHistory.fork({ ...fork, from: options.runId, at: 1 })
        ran.length = 0
        const { events, requests } = yield* streamed([answer("2 and 4 again")], fork)
        expect(ran).toStrictEqual(["2+2"])
        expect(requests).toHaveLength(1)
        expect(events.filter((event) => event._tag === "ToolResult").map((event) => event.output.output))
          .toStrictEqual(["2", "4"])
      }).pipe(Effect.provide(layer())))

    it.effect("a log written before entries had a time reads, and replays without its verdicts", () =>
      Effect.gen(function*() {
        const source = optionsOf(fresh("timeless"))
        yield* recorded(source.runId)
        const old = optionsOf(fresh("old"))
        const stripped = (yield* read(source.runId)).map((text) => {
          const { events: _, time: __, ...entry } = JSON.parse(text)
          return JSON.stringify(entry)
        })
        yield* Effect.scoped(Effect.gen(function*() {
          const checkpointer = yield* Checkpointer.Checkpointer
          const log = yield* checkpointer.open(old.runId, yield* AgentCheckpoint.fingerprint(old))
          yield* log.append(stripped)
        }))
        const checkpoints = yield* AgentHistory.checkpoints(old)
        expect(checkpoints.map((checkpoint) => checkpoint.time)).toStrictEqual([
          undefined,
          undefined,
          undefined,
          undefined,
          undefined
        ])
        const { events } = yield* streamed([], old)
        expect(events.map((event) => event._tag)).toStrictEqual([
          "TurnStarted",
          "TurnCompleted",
          "ToolResult",
          "TurnStarted",
          "TurnCompleted",
          "Finished"
        ])
      }).pipe(Effect.provide(layer())))

    it.effect("a fork with a tool's output changed goes on from there; the original is untouched", () =>
      Effect.gen(function*() {
        const source = optionsOf(fresh("source"))
        yield* recorded(source.runId)
        const before = yield* read(source.runId)
        const fork = { ...source, runId: fresh("fork") }
        yield* AgentHistory.fork({
          ...fork,
          from: source.runId,
          at: 2,
          edit: AgentHistory.replaceToolOutput("call_1_2", "4")
        })
        expect(yield* read(source.runId)).toStrictEqual(before)

        const { events, requests } = yield* streamed([answer("4, says the tool")], fork)
        // Only the turn after the checkpoint was asked, with the edited output.
        expect(requests).toHaveLength(1)
        expect(requests[0]!.history.filter((item) => item.type === "function_call_output")).toMatchObject([
          { call_id: "call_1_2", output: "4" }
        ])
        expect(events.at(-1)).toMatchObject({ _tag: "Finished", result: { output: "4, says the tool" } })
        const kinds = (yield* AgentHistory.checkpoints(fork)).map((checkpoint) => checkpoint.kind)
        expect(kinds).toStrictEqual(["turn", "tool", "decision", "fork", "turn", "finished"])
        // The original's history still says 3.
        const original = yield* AgentHistory.stateAt(source, -1)
        expect(original.result).toMatchObject({ output: "3" })
        // A fork of the fork goes on from the edited history.
        const again = { ...source, runId: fresh("fork-of-fork") }
        yield* AgentHistory.fork({ ...again, from: fork.runId, at: -1, edit: AgentHistory.addMessage("Sure?") })
        const sure = yield* streamed([answer("Sure: 4")], again)
        expect(sure.requests[0]!.history.filter((item) => item.type === "function_call_output")).toMatchObject([
          { output: "4" }
        ])
        expect(sure.events.at(-1)).toMatchObject({ _tag: "Finished", result: { output: "Sure: 4" } })
      }).pipe(Effect.provide(layer())))

    it.effect("a finished run forked with its last answer dropped, or a message added, asks the model again", () =>
      Effect.gen(function*() {
        const source = optionsOf(fresh("finished"))
        yield* recorded(source.runId)

        const retry = { ...source, runId: fresh("retry") }
        yield* AgentHistory.fork({ ...retry, from: source.runId, at: -1, edit: AgentHistory.dropLastAnswer })
        const again = yield* streamed([answer("three")], retry)
        expect(again.requests).toHaveLength(1)
        expect(again.requests[0]!.history.at(-1)).toMatchObject({ type: "function_call_output", output: "3" })
        expect(again.events.at(-1)).toMatchObject({ _tag: "Finished", result: { output: "three" } })
        expect((yield* AgentHistory.stateAt(retry, -1)).turns).toBe(3)

        const followUp = { ...source, runId: fresh("follow-up") }
        yield* AgentHistory.fork({
          ...followUp,
          from: source.runId,
          at: 4,
          edit: AgentHistory.addMessage("And in French?")
        })
        const french = yield* streamed([answer("trois")], followUp)
        expect(french.requests[0]!.history.slice(-2)).toMatchObject([
          { type: "message", role: "assistant" },
          { type: "message", role: "user", content: [{ text: "And in French?" }] }
        ])
        expect(french.events.at(-1)).toMatchObject({ _tag: "Finished", result: { output: "trois" } })

        // Without an edit, a fork of a finished run is finished: it replays, asking nothing.
        const copy = { ...source, runId: fresh("copy") }
        yield* AgentHistory.fork({ ...copy, from: source.runId, at: 4 })
        const replayed = yield* streamed([], copy)
        expect(replayed.requests).toHaveLength(0)
        expect(replayed.events.at(-1)).toMatchObject({ _tag: "Finished", result: { output: "3" } })
      }).pipe(Effect.provide(layer())))

    it.effect("a finished run streamed again replays its recorded events, all but the deltas", () =>
      Effect.gen(function*() {
        const options = optionsOf(fresh("replayed"))
        const live = yield* recorded(options.runId)
        const again = yield* streamed([], options)
        expect(again.requests).toHaveLength(0)
        expect(again.events).toStrictEqual(live.events.filter((event) => event._tag !== "Delta"))
        expect(again.events.map((event) => event._tag)).toStrictEqual([
          "TurnStarted",
          "TurnCompleted",
          "ToolResult",
          "Verdict",
          "TurnStarted",
          "TurnCompleted",
          "Verdict",
          "Finished"
        ])
      }).pipe(Effect.provide(layer())))

    it.effect("a forked run streams its source's events up to the checkpoint, then its own", () =>
      Effect.gen(function*() {
        const source = optionsOf(fresh("streamed"))
        const live = yield* recorded(source.runId)
        const fork = { ...source, runId: fresh("fork") }
        yield* AgentHistory.fork({ ...fork, from: source.runId, at: 2 })
        const { events } = yield* streamed([answer("three")], fork)
        const firstTurn = live.events.filter((event) => event._tag !== "Delta").slice(0, 4)
        expect(events.slice(0, 4)).toStrictEqual(firstTurn)
        expect(events.filter((event) => event._tag !== "Delta").slice(4).map((event) => event._tag)).toStrictEqual([
          "TurnStarted",
          "TurnCompleted",
          "Verdict",
          "Finished"
        ])
      }).pipe(Effect.provide(layer())))

    it.effect("a follower's read returns the events of what was appended since the last; a log cut or recorded anew, all again", () =>
      Effect.gen(function*() {
        const store = yield* Checkpointer.Checkpointer
        const source = optionsOf(fresh("source"))
        yield* recorded(source.runId)
        // The source's entries, appended to the followed run's log a few at a time: turn, tool, decision, turn, finished.
        const entries = yield* read(source.runId)
        const options = optionsOf(fresh("followed"))
        const fingerprint = yield* AgentCheckpoint.fingerprint(options)
        const append = (texts: ReadonlyArray<string>, finished = false) =>
          Effect.scoped(
            Effect.flatMap(store.open(options.runId, fingerprint), (log) => log.append(texts, { finished }))
          )
        const tags = (events: ReadonlyArray<{ readonly _tag: string }>) => events.map((event) => event._tag)

        const follower = yield* AgentHistory.follow(options)
        expect(yield* follower.read).toStrictEqual({ events: [], ended: undefined, restarted: false })
        yield* append(entries.slice(0, 2))
        const first = yield* follower.read
        expect(tags(first.events)).toStrictEqual(["TurnStarted", "TurnCompleted", "ToolResult"])
        yield* append(entries.slice(2, 4))
        yield* append(entries.slice(4), true)
        const second = yield* follower.read
        const whole = yield* AgentHistory.events(options)
        expect(second.restarted).toBe(false)
        expect([...first.events, ...second.events]).toStrictEqual(whole.events)
        expect(second.ended).toMatchObject({ _tag: "Finished" })
        expect(yield* follower.read).toStrictEqual({ events: [], ended: whole.ended, restarted: false })

        // Cut down to its result: shorter than what the follower read, so read from its start again.
        yield* TestClock.adjust("1 second")
        yield* Checkpointer.prune({ finishedBefore: 0, keep: "result" })
        const cut = yield* follower.read
        expect(cut).toStrictEqual({ ...(yield* AgentHistory.events(options)), restarted: true })
        expect(tags(cut.events)).toStrictEqual(["Verdict", "Finished"])
        // Forgotten and recorded anew: as long as what the follower read, but its entry there is another one.
        yield* store.clear(options.runId)
        yield* append(entries.slice(0, 3))
        const anew = yield* follower.read
        expect(anew).toStrictEqual({ ...(yield* AgentHistory.events(options)), restarted: true })
        expect(tags(anew.events)).toStrictEqual(["TurnStarted", "TurnCompleted", "ToolResult", "Verdict"])
        expect(anew.ended).toBeUndefined()
      }).pipe(Effect.provide(layer())))

    it.effect("bad input fails typed: unknown run, checkpoint out of range, fork onto a recorded id, other options", () =>
      Effect.gen(function*() {
        const source = optionsOf(fresh("bad"))
        yield* recorded(source.runId)
        const unknown = optionsOf(fresh("never-recorded"))
        expect(yield* Effect.flip(AgentHistory.checkpoints(unknown))).toMatchObject({
          _tag: "UnknownRun",
          id: unknown.runId
        })
        for (const index of [5, -6, 1.5]) {
          const error = yield* Effect.flip(AgentHistory.stateAt(source, index))
          expect(error).toMatchObject({ _tag: "CheckpointNotFound", id: source.runId, index, count: 5 })
          expect(error.message).toContain("0 to 4")
        }

        const target = fresh("target")
        const outOfRange = yield* Effect.flip(
          AgentHistory.fork({ ...source, runId: target, from: source.runId, at: 9 })
        )
        expect(outOfRange).toMatchObject({ _tag: "CheckpointNotFound", index: 9 })
        expect(yield* read(target)).toStrictEqual([])
        expect(yield* Effect.flip(AgentHistory.fork({ ...source, runId: target, from: unknown.runId, at: 0 })))
          .toMatchObject({ _tag: "UnknownRun", id: unknown.runId })

        const other = optionsOf(fresh("other"))
        yield* recorded(other.runId)
        expect(yield* Effect.flip(AgentHistory.fork({ ...other, from: source.runId, at: 0 }))).toMatchObject({
          _tag: "RunExists",
          id: other.runId
        })
        expect(yield* Effect.flip(AgentHistory.fork({ ...source, from: source.runId, at: 0 }))).toMatchObject({
          _tag: "RunExists",
          id: source.runId
        })
        // A fork is made with its source's options: another input would not rebuild its history.
        expect(
          yield* Effect.flip(
            AgentHistory.fork({ ...source, input: "Something else", runId: target, from: source.runId, at: 0 })
          )
        ).toMatchObject({ _tag: "CheckpointMismatch", id: source.runId })
        expect(yield* read(target)).toStrictEqual([])
      }).pipe(Effect.provide(layer())))
  })

describe("AgentHistory", () => {
  eachStore("history", suite)

  it.effect("a call that is not idempotent checkpoints its start; a compacted log lists its snapshot and replays", () =>
    Effect.gen(function*() {
      // `add` as a tool that is not idempotent: each call records its start.
      const charged = Toolkit.make(Tool.make({
        name: "add",
        description: "Adds two numbers",
        input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
        output: Schema.Finite,
        execute: ({ a, b }) => Effect.succeed(a + b)
      }))
      const started = { ...optionsOf(fresh("started")), toolkit: charged }
      yield* streamed([addCall(1, 2), answer("3")], started)
      const kinds = (yield* AgentHistory.checkpoints(started)).map((checkpoint) => checkpoint.kind)
      expect(kinds).toStrictEqual(["turn", "started", "tool", "decision", "turn", "finished"])

      const compacted = { ...optionsOf(fresh("compacted")), toolkit: charged, compactAfter: 2 }
      const live = yield* streamed([addCall(1, 2), answer("3")], compacted)
      const listed = (yield* AgentHistory.checkpoints(compacted)).map((checkpoint) => checkpoint.kind)
      expect(listed).toStrictEqual(["snapshot", "turn", "finished"])
      const replayed = yield* streamed([], compacted)
      expect(replayed.requests).toStrictEqual([])
      expect(replayed.events.at(-1)).toStrictEqual(live.events.at(-1))
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a run on a thread is not forked on its own log: the fork is refused naming the thread, nothing recorded", () =>
    Effect.gen(function*() {
      const thread = fresh("chat")
      yield* streamed([answer("Hello")], { ...optionsOf(fresh("first")), thread })
      const source = { ...optionsOf(fresh("second")), thread }
      yield* streamed([answer("3")], source)
      const runId = fresh("fork")
      const refused = yield* Effect.flip(
        AgentHistory.fork({ ...source, runId, from: source.runId, at: -1, edit: AgentHistory.dropLastAnswer })
      )
      expect(refused).toMatchObject({ _tag: "InvalidOptions", field: "thread" })
      expect(refused.message).toContain("Thread.fork")
      expect(yield* read(runId)).toStrictEqual([])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))

  it.effect("a replayed run shows in a UI as it did live: the same text and tool outputs", () =>
    Effect.gen(function*() {
      const runId = fresh("ui")
      const ui = (events: Iterable<AgentLoop.AgentEvent<string>>) =>
        Effect.map(Stream.runCollect(UIMessageStream.fromEvents(Stream.fromIterable(events))), (chunks) => ({
          text: chunks.flatMap((chunk) => chunk.type === "text-delta" ? [chunk.delta] : []).join(""),
          tools: chunks.filter((chunk) => chunk.type === "tool-output-available")
        }))
      const live = yield* recorded(runId)
      const replayed = yield* streamed([], optionsOf(runId))
      const shown = yield* ui(replayed.events)
      expect(shown).toStrictEqual(yield* ui(live.events))
      expect(shown.text).toBe("3")
      expect(shown.tools).toMatchObject([{ output: 3 }])
    }).pipe(Effect.provide(Checkpointer.layerMemory)))
})
