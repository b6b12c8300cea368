/**
 * The ids of a recorded run's events: the same live and replayed, over
 * scripted runs of every shape (parallel calls that end in any order,
 * approvals, a compacted context, a structured output repaired, a finish
 * tool, a compacted log, a run cut off and resumed), and the cursor a client
 * keeps: whatever prefix of the run it has, the replay's events it lacks are
 * exactly the rest. And the id format: what it writes it reads, nothing else.
 */
import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Schema, Stream } from "effect"
import * as AgentEvent from "../src/agent/AgentEvent.ts"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as AiError from "../src/AiError.ts"
import * as Approval from "../src/Approval.ts"
import * as Checkpointer from "../src/Checkpointer.ts"
import * as Item from "../src/Item.ts"
import * as RunCursor from "../src/stream/RunCursor.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as Turn from "../src/Turn.ts"

/** A small deterministic random source (mulberry32), so a failing case can be replayed by its seed. */
const random = (seed: number) => {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return { below: (n: number) => Math.floor(next() * n), chance: (p: number) => next() < p }
}

const work = Tool.make({
  name: "work",
  description: "Works for a few milliseconds",
  input: Schema.Struct({ ms: Schema.Int }),
  output: Schema.String,
  execute: ({ ms }) => Effect.as(Effect.sleep(ms), `worked ${ms} ms`)
})
const guarded = Tool.make({
  name: "guarded",
  description: "Runs when a person approves",
  input: Schema.Struct({ ok: Schema.Boolean, ms: Schema.Int }),
  output: Schema.String,
  needsApproval: true,
  execute: ({ ms }) => Effect.as(Effect.sleep(ms), "guarded")
})
const submit = Tool.make({
  name: "submit",
  description: "Submits the answer",
  input: Schema.Struct({ n: Schema.Int }),
  output: Schema.Struct({ n: Schema.Int }),
  execute: (input) => Effect.succeed(input)
})
const toolkit = Toolkit.make(work, guarded, submit)
const approvals = Approval.layer((request) =>
  Effect.succeed(
    typeof request.input === "object" && request.input !== null && "ok" in request.input && request.input.ok === true
      ? Approval.approved
      : Approval.denied("not now")
  )
)
const Answer = Schema.Struct({ n: Schema.Int })

/** One scripted run: the model's turns (each with a text of its own), and how the run is configured. */
interface Scenario {
  readonly seed: number
  readonly turns: ReadonlyArray<Turn.Turn>
  /** The turn (by its index) whose first request fails with ContextLengthExceeded, once an execution. */
  readonly overflowAt: number | undefined
  readonly structured: boolean
  readonly finish: boolean
  readonly compactAfter: number | undefined
  /** How many events the first execution streams before it is cut off (none: it runs to the end). */
  readonly cutAfter: number | undefined
}

const scenario = (seed: number): Scenario => {
  const rand = random(seed)
  const structured = rand.chance(0.3)
  const finish = !structured && rand.chance(0.3)
  const turns: Array<Turn.Turn> = []
  const toolTurns = 1 + rand.below(3)
  for (let t = 0; t < toolTurns; t++) {
    const calls = Array.from({ length: 1 + rand.below(3) }, (_, c) =>
      rand.chance(0.3)
        ? { name: "guarded", arguments: { ok: rand.chance(0.5), ms: rand.below(4) }, callId: `c${t}_${c}` }
        : { name: "work", arguments: { ms: rand.below(4) }, callId: `c${t}_${c}` })
    turns.push(MockLanguageModel.callsTurn(calls, { text: `Turn ${t + 1}.` }))
  }
  if (finish) {
    turns.push(MockLanguageModel.callsTurn([{ name: "submit", arguments: { n: 7 }, callId: "c_submit" }], {
      text: "Submitting."
    }))
  } else if (structured) {
    turns.push(MockLanguageModel.textTurn("not json"))
    turns.push(MockLanguageModel.textTurn("{\"n\": 7}"))
  } else {
    turns.push(MockLanguageModel.textTurn("All done."))
  }
  return {
    seed,
    turns,
    // Not the first turn: a history without tool outputs cannot be compacted.
    overflowAt: rand.chance(0.3) ? 1 + rand.below(turns.length - 1) : undefined,
    structured,
    finish,
    compactAfter: rand.chance(0.25) ? 2 + rand.below(4) : undefined,
    cutAfter: rand.chance(0.5) ? 3 + rand.below(12) : undefined
  }
}

/** The model: the turn whose number is how many answers the history holds (each turn has a text of its own). */
const respond = (turns: ReadonlyArray<Turn.Turn>, overflowAt: number | undefined): MockLanguageModel.Respond => {
  let overflowed = false
  return ({ history }) => {
    const answered = history.filter((item) => item.type === "message" && item.role === "assistant").length
    if (answered === overflowAt && !overflowed) {
      overflowed = true
      return new AiError.ContextLengthExceeded({ provider: "mock", message: "too long" })
    }
    return turns[answered] ?? MockLanguageModel.textTurn("(beyond the script)")
  }
}

/** One execution of the scenario's run; `take` cuts it off after that many events. */
const execute = (s: Scenario, take?: number) =>
  Effect.gen(function*() {
    const agent = yield* AgentLoop.AgentLoop
    const stream = agent.stream({
      input: [Item.userMessage(`scenario ${s.seed}`)],
      toolkit,
      runId: `scenario-${s.seed}`,
      ...(s.structured ? { output: Answer } : {}),
      ...(s.finish ? { finish: "submit" } : {}),
      ...(s.compactAfter === undefined ? {} : { compactAfter: s.compactAfter })
    }) as Stream.Stream<AgentEvent.AgentEvent<unknown>, unknown>
    return yield* Stream.runCollect(take === undefined ? stream : Stream.take(stream, take))
  }).pipe(
    Effect.provide(AgentLoop.layer.pipe(Layer.provide(MockLanguageModel.layer(respond(s.turns, s.overflowAt))))),
    Effect.provide(approvals)
  )

/** What an event says, less what changes between executions (times, elapsed milliseconds). */
const said = (event: AgentEvent.AgentEvent<unknown>): unknown => {
  switch (event._tag) {
    case "TurnCompleted":
      return { _tag: event._tag, step: event.step, turn: event.turn, steps: event.accounting.steps }
    case "Finished":
      return { _tag: event._tag, result: event.result._tag, history: event.result.history }
    default:
      return event
  }
}

interface Keyed {
  readonly key: RunCursor.Key
  readonly id: string
  readonly event: AgentEvent.AgentEvent<unknown>
}

/** The recorded events of `events`, each keyed as one run's in its order. */
const keyed = (events: ReadonlyArray<AgentEvent.AgentEvent<unknown>>): ReadonlyArray<Keyed> => {
  const keyOf = RunCursor.keys()
  return events.flatMap((event) => {
    const key = keyOf(event)
    return key === undefined ? [] : [{ key, id: `${key.step}.${key.place}.${key.call ?? ""}`, event }]
  })
}

describe("RunCursor: live and replayed events have the same keys", () => {
  const seeds = Array.from({ length: 40 }, (_, i) => 1000 + i)

  it.live(
    "over 40 scripted runs: calls ending in any order, approvals, compaction, repairs, finish tools, cuts",
    () =>
      Effect.gen(function*() {
        const shapes = new Set<string>()
        for (const seed of seeds) {
          const s = scenario(seed)
          const first = s.cutAfter === undefined ? [] : yield* execute(s, s.cutAfter)
          const live = yield* execute(s)
          // Streamed again, the finished run replays what its log recorded.
          const replayed = keyed(yield* execute(s))
          const streamed = keyed([...first, ...live])

          // Every replayed event is the event of that key live, the same; each key once.
          const byId = new Map(streamed.map((entry) => [entry.id, said(entry.event)]))
          for (const entry of replayed) {
            expect(byId.get(entry.id), `seed ${seed}: ${entry.id}`).toStrictEqual(said(entry.event))
          }
          expect(new Set(replayed.map((entry) => entry.id)).size, `seed ${seed}`).toBe(replayed.length)
          const liveIds = new Set(keyed(live).map((entry) => entry.id))
          expect(new Set(keyed(live).map((entry) => entry.id)).size, `seed ${seed}`).toBe(keyed(live).length)
          // A log never compacted replays every recorded event of the run; a compacted one, those after its snapshot.
          if (s.compactAfter === undefined) {
            expect(new Set(replayed.map((entry) => entry.id)), `seed ${seed}`).toStrictEqual(liveIds)
          } else {
            for (const entry of replayed) expect(liveIds.has(entry.id), `seed ${seed}: ${entry.id}`).toBe(true)
          }
          expect(replayed.at(-1)?.event._tag, `seed ${seed}`).toBe("Finished")

          // A client that has any prefix of the live run gets, of the replay, exactly the rest: no gap, no duplicate.
          if (s.compactAfter === undefined) {
            const rand = random(seed * 7)
            const run = keyed(live)
            for (let trial = 0; trial < 5; trial++) {
              const cut = rand.below(run.length + 1)
              let cursor: RunCursor.Cursor | undefined
              for (const entry of run.slice(0, cut)) cursor = RunCursor.advance(cursor, entry.key)
              if (cursor !== undefined) {
                // Through its SSE id, as a reconnecting client sends it.
                cursor = Schema.decodeUnknownSync(RunCursor.FromEventId)(RunCursor.eventId(cursor))
              }
              const rest = replayed.filter((entry) => !RunCursor.covers(cursor, entry.key))
              const got = [...run.slice(0, cut), ...rest].map((entry) => entry.id)
              expect(new Set(got).size, `seed ${seed}, cut ${cut}`).toBe(got.length)
              expect(new Set(got), `seed ${seed}, cut ${cut}`).toStrictEqual(liveIds)
            }
          }
          const tags = new Set<string>(live.map((event) => event._tag))
          for (const tag of ["AttemptDiscarded", "Feedback", "ToolResult"]) if (tags.has(tag)) shapes.add(tag)
          if (s.finish) shapes.add("finish")
          if (s.compactAfter !== undefined) shapes.add("compactAfter")
          if (s.cutAfter !== undefined) shapes.add("cut")
          if (live.some((event) => event._tag === "ToolResult" && event.outcome === "denied")) shapes.add("denied")
        }
        // The seeds cover every shape.
        expect([...shapes].sort()).toStrictEqual(
          ["AttemptDiscarded", "Feedback", "ToolResult", "compactAfter", "cut", "denied", "finish"]
        )
      }).pipe(Effect.provide(Checkpointer.layerMemory)),
    60_000
  )
})

describe("RunCursor ids", () => {
  const read = (id: string) => Option.getOrUndefined(Schema.decodeUnknownOption(RunCursor.FromEventId)(id))

  it("writes what it reads, for every place and for sets of results", () => {
    const cursors: ReadonlyArray<RunCursor.Cursor> = [
      { step: 1, place: "started", calls: [] },
      { step: 12, place: "completed", calls: [] },
      { step: 3, place: "result", calls: [0] },
      { step: 3, place: "result", calls: [0, 2] },
      { step: 3, place: "result", calls: [4, 5, 17, 200] },
      { step: 999_999_999_999_999, place: "verdict", calls: [] },
      { step: 2, place: "feedback", calls: [] },
      { step: 2, place: "finished", calls: [] }
    ]
    for (const cursor of cursors) {
      const id = RunCursor.eventId(cursor)
      expect(read(id)).toStrictEqual(cursor)
    }
    expect(cursors.map(RunCursor.eventId).slice(0, 5)).toStrictEqual([
      "1.0",
      "12.1",
      "3.2.1",
      "3.2.5",
      "3.2.100000000000000000000000000000000000000000000020030"
    ])
  })

  it("reads no id it does not write", () => {
    const refused = [
      "",
      "0.0",
      "01.0",
      "1",
      "1.",
      "1.6",
      "1.2",
      "1.2.0",
      "1.2.01",
      "1.2.A",
      "1.0.1",
      "1.3.1",
      "-1.0",
      "1.0 ",
      " 1.0",
      "1e3.0",
      "1234567890123456.0",
      `1.2.${"f".repeat(4097)}`,
      "abc",
      "1.0\n2.0"
    ]
    for (const id of refused) expect(read(id), JSON.stringify(id)).toBeUndefined()
    expect(read(`1.2.${"f".repeat(4096)}`)?.calls).toHaveLength(4 * 4096)
    // A result past a turn's first 16,384 calls is written (a run never fails for its ids), and not read back.
    const far = RunCursor.eventId({ step: 1, place: "result", calls: [16_384] })
    expect(far).toHaveLength(4 + 4097)
    expect(read(far)).toBeUndefined()
  })

  it("a cursor covers what came before it in the run, and of its turn's results those it names", () => {
    const at = (step: number, place: RunCursor.Place, calls: ReadonlyArray<number> = []) => ({ step, place, calls })
    expect(RunCursor.covers(undefined, { step: 1, place: "started" })).toBe(false)
    expect(RunCursor.covers(at(2, "started"), { step: 1, place: "finished" })).toBe(true)
    expect(RunCursor.covers(at(2, "started"), { step: 2, place: "started" })).toBe(true)
    expect(RunCursor.covers(at(2, "started"), { step: 2, place: "completed" })).toBe(false)
    expect(RunCursor.covers(at(2, "result", [1]), { step: 2, place: "result", call: 1 })).toBe(true)
    expect(RunCursor.covers(at(2, "result", [1]), { step: 2, place: "result", call: 0 })).toBe(false)
    expect(RunCursor.covers(at(2, "result", [1]), { step: 2, place: "completed" })).toBe(true)
    expect(RunCursor.covers(at(2, "result", [1]), { step: 2, place: "verdict" })).toBe(false)

    // Results in any order make the same set; advancing past a result a cursor has changes nothing.
    let one: RunCursor.Cursor | undefined = at(2, "completed")
    let other: RunCursor.Cursor | undefined = at(2, "completed")
    for (const call of [2, 0, 1]) one = RunCursor.advance(one, { step: 2, place: "result", call })
    for (const call of [1, 2, 0, 2]) other = RunCursor.advance(other, { step: 2, place: "result", call })
    expect(one).toStrictEqual(at(2, "result", [0, 1, 2]))
    expect(other).toStrictEqual(one)
    expect(RunCursor.advance(one, { step: 1, place: "verdict" })).toBe(one)
  })

  it("a cursor is within a run's recorded events, or the next turn's start and the decision sent before recording", () => {
    const at = (step: number, place: RunCursor.Place, calls: ReadonlyArray<number> = []) => ({ step, place, calls })
    const frontier = at(3, "result", [0, 1])
    expect(RunCursor.isWithin(at(2, "finished"), frontier, true)).toBe(true)
    expect(RunCursor.isWithin(at(3, "result", [1]), frontier, false)).toBe(true)
    expect(RunCursor.isWithin(at(3, "result", [2]), frontier, true)).toBe(false)
    expect(RunCursor.isWithin(at(3, "verdict"), frontier, true)).toBe(true)
    expect(RunCursor.isWithin(at(3, "verdict"), frontier, false)).toBe(false)
    expect(RunCursor.isWithin(at(4, "started"), frontier, true)).toBe(true)
    expect(RunCursor.isWithin(at(4, "started"), frontier, false)).toBe(false)
    expect(RunCursor.isWithin(at(4, "completed"), frontier, true)).toBe(false)
    expect(RunCursor.isWithin(at(5, "started"), frontier, true)).toBe(false)
    // A run that recorded nothing yet may have sent its first turn's start, and nothing else.
    expect(RunCursor.isWithin(at(1, "started"), undefined, true)).toBe(true)
    expect(RunCursor.isWithin(at(1, "completed"), undefined, true)).toBe(false)
    expect(RunCursor.isWithin(at(1, "started"), undefined, false)).toBe(false)
  })
})
