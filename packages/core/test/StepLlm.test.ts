import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema, Stream } from "effect"
import { KeyValueStore } from "effect/persistence"
import * as AgentLoop from "../src/agent/AgentLoop.ts"
import * as Item from "../src/Item.ts"
import * as Memory from "../src/step/Memory.ts"
import * as Step from "../src/step/Step.ts"
import * as StepError from "../src/step/StepError.ts"
import * as StepEvent from "../src/step/StepEvent.ts"
import * as TokenUsage from "../src/TokenUsage.ts"
import * as Tool from "../src/Tool.ts"
import * as Toolkit from "../src/Toolkit.ts"
import * as ToolMemory from "../src/ToolMemory.ts"
import * as Until from "../src/Until.ts"
import { addCall, answer, model, pricing, toolkit, usage } from "./agentFixtures.ts"

const environment = (script: ReadonlyArray<MockLanguageModel.Reply>) =>
  Layer.mergeAll(MockLanguageModel.layer(script), pricing)

/** Runs `program` on the script, and returns its exit and the requests the model saw. */
const withRequests = <A, E, R>(effect: Effect.Effect<A, E, R>, script: ReadonlyArray<MockLanguageModel.Reply>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(effect)
    const requests = yield* (yield* MockLanguageModel.MockLanguageModel).requests
    return { exit, requests }
  }).pipe(Effect.provide(environment(script)))

const instructions = "Use the tools."
const agent = Step.loop({
  id: "agent",
  steps: [Step.llm({ id: "turn", model, instructions })],
  until: Until.noToolCalls()
})

describe("Step.llm", () => {
  it.effect("execute(agent, text) asks the question; the calls run and their outputs go to the next turn", () =>
    Effect.gen(function*() {
      const { exit, requests } = yield* withRequests(
        Step.execute(agent, "Add 2 and 3", { toolkit }),
        [addCall(2, 3), answer("5")]
      )
      expect(exit._tag === "Success" && exit.value).toBe("5")
      expect(requests[0]?.history).toStrictEqual([Item.userMessage("Add 2 and 3")])
      expect(requests[0]?.options.tools?.map((tool) => tool.name)).toStrictEqual(["add", "submit", "halt"])
      expect(requests[1]?.history.map((item) => item.type)).toStrictEqual([
        "message",
        "function_call",
        "function_call_output"
      ])
      expect(requests[1]?.history.at(-1)).toMatchObject({ type: "function_call_output", output: "5" })
    }))

  it.effect("a loop of one llm step is the agent loop: the model sees the same requests as AgentLoop's", () =>
    Effect.gen(function*() {
      const until = Until.verified((output) =>
        output === "5" ? { pass: true } : { pass: false, feedback: "Check again." }
      )
      const script = [addCall(2, 3), answer("six"), answer("5")]
      const steps = yield* withRequests(
        Step.execute(
          Step.loop({ id: "agent", steps: [Step.llm({ id: "turn", model, instructions })], until }),
          "Add 2 and 3",
          {
            toolkit
          }
        ),
        script
      )
      const agentLoop = yield* withRequests(
        AgentLoop.run({ input: "Add 2 and 3", instructions, model, toolkit, until }),
        script
      )
      expect(steps.exit._tag).toBe("Success")
      expect(agentLoop.exit._tag).toBe("Success")
      expect(steps.requests).toHaveLength(3)
      // The same histories and options (AgentLoop also sets `toolChoice`, to undefined).
      expect(steps.requests).toEqual(agentLoop.requests)
      expect(steps.requests[2]?.history.at(-1)).toStrictEqual(Item.userMessage("Check again.", "feedback_2"))
    }))

  it.effect("the input adds nothing unless there is a prompt, so a loop never echoes the answer as a user", () =>
    Effect.gen(function*() {
      const twice = Step.loop({
        id: "twice",
        steps: [Step.llm({ id: "talk", model, tools: [] })],
        until: Until.maxSteps(2)
      })
      const plain = yield* withRequests(Step.execute(twice, "Hello"), [answer("Hi!"), answer("Still here.")])
      expect(plain.requests[1]?.history).toStrictEqual([Item.userMessage("Hello"), ...answer("Hi!").items])

      const prompted = Step.llm({ id: "ask", model, prompt: (topic: string) => `Write a haiku about ${topic}.` })
      const { exit, requests } = yield* withRequests(Step.execute(prompted, "rain"), [answer("Drops on the tin roof")])
      expect(exit._tag === "Success" && exit.value).toBe("Drops on the tin roof")
      expect(requests[0]?.history).toStrictEqual([
        Item.userMessage("rain"),
        Item.userMessage("Write a haiku about rain.", "prompt_1")
      ])
    }))

  it.effect("offers all the tools, none, or the named ones; a name the toolkit lacks is an InvalidStep", () =>
    Effect.gen(function*() {
      const offered = (tools: ReadonlyArray<string> | undefined) =>
        Effect.map(
          withRequests(Step.execute(Step.llm({ id: "pick", model, tools }), "hi", { toolkit }), [answer("ok")]),
          ({ exit, requests }) => ({ exit, tools: requests[0]?.options.tools?.map((tool) => tool.name) })
        )
      expect((yield* offered(undefined)).tools).toStrictEqual(["add", "submit", "halt"])
      expect((yield* offered([])).tools).toBeUndefined()
      expect((yield* offered(["submit"])).tools).toStrictEqual(["submit"])
      const unknown = yield* offered(["search"])
      expect(unknown.exit._tag === "Failure" && unknown.exit.cause.reasons[0]).toMatchObject({
        _tag: "Fail",
        error: { _tag: "InvalidStep", stepId: "pick" }
      })
      expect(unknown.tools).toBeUndefined()
    }))

  it.effect("decodes a structured output from the text, or fails with InvalidOutput", () =>
    Effect.gen(function*() {
      const Weather = Schema.Struct({ city: Schema.String, celsius: Schema.Finite })
      const extract = Step.llm({ id: "extract", model, output: Weather })
      const good = yield* withRequests(Step.execute(extract, "Paris is 21 °C"), [
        answer(`{"city":"Paris","celsius":21}`)
      ])
      expect(good.exit._tag === "Success" && good.exit.value).toStrictEqual({ city: "Paris", celsius: 21 })
      expect(good.requests[0]?.options.output?.name).toBe("output")
      const bad = yield* withRequests(Effect.flip(Step.execute(extract, "Paris")), [answer(`{"city":"Paris"}`)])
      const error = bad.exit._tag === "Success" ? bad.exit.value : expect.unreachable()
      expect(error).toBeInstanceOf(StepError.InvalidOutput)
      if (!(error instanceof StepError.InvalidOutput)) return
      expect(error.diagnostic.raw).toBe(`{"city":"Paris"}`)
      expect(error.diagnostic.issues.map((issue) => issue.path)).toStrictEqual([["celsius"]])
    }))

  it.effect("sets lastStepMeta, and adds usage and cost to the context and every ancestor", () =>
    Effect.gen(function*() {
      const report = Step.run({
        id: "report",
        execute: (_: string, ctx) => ({
          meta: ctx.lastStepMeta,
          tokens: ctx.tokens,
          cost: ctx.cost,
          items: ctx.itemLog.items.length
        })
      })
      const child = Step.loop({
        id: "child",
        steps: [Step.llm({ id: "work", model, tools: [] }), report],
        prepareNext: () => "again",
        until: () => ({ stop: true })
      })
      const parent = Step.loop({
        id: "parent",
        steps: [Step.spawn({ id: "helper", child }), Step.llm({ id: "summary", model, tools: [] }), report],
        prepareNext: () => "go",
        until: () => ({ stop: true })
      })
      const { exit } = yield* withRequests(Step.execute(parent, "go"), [answer("child answer"), answer("summary")])
      if (exit._tag !== "Success") return expect.unreachable()
      expect(exit.value.meta?.toolCalls).toStrictEqual([])
      expect(exit.value.meta?.responseItems).toStrictEqual(answer("summary").items)
      expect(exit.value.meta?.usage).toStrictEqual(usage)
      expect(exit.value.meta?.cost).toBeCloseTo(0.00004, 12)
      // Two turns: the child's and the parent's own.
      expect(exit.value.tokens).toStrictEqual(TokenUsage.add(usage, usage))
      expect(exit.value.cost).toBeCloseTo(0.00008, 12)
      // The parent's log: the input and its own turn; the child's turn stayed in the child's.
      expect(exit.value.items).toBe(2)
    }))

  it.effect("an unpriced model makes the context's cost unknown, never zero", () =>
    Effect.gen(function*() {
      const program = Step.loop({
        id: "once",
        steps: [Step.llm({ id: "talk", tools: [] }), Step.run({ id: "cost", execute: (_: string, ctx) => ctx.cost })],
        prepareNext: () => "again",
        until: () => ({ stop: true })
      })
      const { exit } = yield* withRequests(
        Step.execute(program, "hi"),
        [MockLanguageModel.textTurn("hello", { model: "no-such-model" })]
      )
      expect(exit._tag === "Success" && exit.value).toBeNull()
    }))

  it.effect("streams its turn as events, as its emit allows", () =>
    Effect.gen(function*() {
      const tags = (emit: Step.StepLLM<unknown, string, unknown, unknown, unknown>["emit"]) =>
        Stream.runCollect(Step.stream(Step.llm({ id: "talk", model, tools: [], emit }), "hi")).pipe(
          Effect.provide(environment([answer("Hello there, friend")])),
          Effect.map((events) =>
            events.map(StepEventTag).filter((tag, i, all) => tag !== "Delta" || all[i - 1] !== "Delta")
          )
        )
      expect(yield* tags(undefined)).toStrictEqual(["Started", "Delta", "TurnCompleted", "Completed", "Output"])
      expect(yield* tags(false)).toStrictEqual(["Output"])
      expect(yield* tags((type) => type !== "Delta")).toStrictEqual(["Started", "TurnCompleted", "Completed", "Output"])
    }))
})

const StepEventTag = (event: StepEvent.Event<unknown>): string =>
  event._tag === "Output" ? "Output" : StepEvent.eventType(event)

describe("Memory", () => {
  const conversation = Step.llm({ id: "chat", model, tools: [] })
  const memory = Memory.layerKeyValueStore()

  it.effect("an llm step recalls what other executions of the thread remembered, and remembers its own", () =>
    Effect.gen(function*() {
      const store = yield* KeyValueStore.KeyValueStore
      const run = (question: string) =>
        withRequests(
          Step.execute(Step.provide({ id: "remembering", child: conversation, memory }), question, {
            threadId: "thread-1",
            resourceId: "ada"
          }),
          [answer(`answer to ${question}`)]
        )
      const first = yield* run("first question")
      expect(first.requests[0]?.history).toStrictEqual([Item.userMessage("first question")])
      const second = yield* run("second question")
      expect(second.requests[0]?.history).toStrictEqual([
        Item.userMessage("first question"),
        ...answer("answer to first question").items,
        Item.userMessage("second question")
      ])
      const keys = yield* store.keys
      expect(keys).toStrictEqual([`${Memory.defaultPrefix}thread/ada/thread-1`])
      // Another thread shares nothing.
      const other = yield* withRequests(
        Step.execute(Step.provide({ id: "remembering", child: conversation, memory }), "elsewhere", {
          threadId: "thread-2",
          resourceId: "ada"
        }),
        [answer("fresh")]
      )
      expect(other.requests[0]?.history).toStrictEqual([Item.userMessage("elsewhere")])
    }).pipe(Effect.provide(KeyValueStore.layerMemory)))

  it.effect("within one execution, memory adds nothing the item log already has", () =>
    Effect.gen(function*() {
      const twice = Step.loop({ id: "twice", steps: [conversation], until: Until.maxSteps(2) })
      const { requests } = yield* withRequests(
        Step.execute(Step.provide({ id: "remembering", child: twice, memory }), "hello", { threadId: "t" }),
        [answer("one"), answer("two")]
      )
      expect(requests[1]?.history).toStrictEqual([Item.userMessage("hello"), ...answer("one").items])
    }).pipe(Effect.provide(KeyValueStore.layerMemory)))

  it.effect("a memory that fails fails the step with MemoryError", () =>
    Effect.gen(function*() {
      const broken = Memory.layer({
        recall: () => Effect.fail(new Memory.MemoryError({ message: "store offline" })),
        remember: () => Effect.void
      })
      const { exit } = yield* withRequests(
        Step.execute(Step.provide({ id: "remembering", child: conversation, memory: broken }), "hi"),
        [answer("never")]
      )
      expect(exit._tag === "Failure" && exit.cause.reasons[0]).toMatchObject({ error: { _tag: "MemoryError" } })
    }))

  it.effect("memories combine: each recalls in order", () =>
    Effect.gen(function*() {
      const fixed = (text: string) =>
        Memory.layer({ recall: () => Effect.succeed([Item.userMessage(text, text)]), remember: () => Effect.void })
      const { requests } = yield* withRequests(
        Step.execute(Step.provide({ id: "remembering", child: conversation, memory: [fixed("a"), fixed("b")] }), "hi"),
        [answer("ok")]
      )
      expect(requests[0]?.history.map((item) => item.id)).toStrictEqual(["a", "b", "user"])
    }))
})

describe("Toolkit offered to llm steps", () => {
  it("keeps the toolkit's order", () => {
    expect(Toolkit.definitions(toolkit).map((tool) => tool.name)).toStrictEqual(["add", "submit", "halt"])
  })
})

describe("tool-owned memory", () => {
  const Notes = Schema.Array(Schema.String)
  const memory: ToolMemory.Declaration<ReadonlyArray<string>> = {
    id: "notes",
    init: (): ReadonlyArray<string> => [],
    recall: (notes: ReadonlyArray<string>) => notes.length === 0 ? null : `Your notes: ${notes.join("; ")}`
  }
  const note = Tool.make({
    name: "note",
    description: "Notes something down",
    input: Schema.Struct({ text: Schema.String }),
    output: Notes,
    memory,
    execute: ({ text }) =>
      Effect.gen(function*() {
        const notes = [...(yield* ToolMemory.get(memory)), text]
        yield* ToolMemory.set(memory, notes)
        return notes
      })
  })
  // Another tool of the same memory id reads the same notes.
  const count = Tool.make({
    name: "count",
    description: "Counts the notes",
    input: Schema.Struct({}),
    output: Schema.Finite,
    memory,
    execute: () => Effect.map(ToolMemory.get(memory), (notes) => notes.length)
  })
  const noteCall = (text: string) =>
    MockLanguageModel.callsTurn([{ name: "note", arguments: { text } }], { model, usage })
  const countCall = MockLanguageModel.callsTurn([{ name: "count", arguments: {} }], { model, usage })

  it.effect("lives in the execution: each turn is told its recall first, and tools of one id share it", () =>
    Effect.gen(function*() {
      const notesAgent = Step.loop({
        id: "agent",
        steps: [Step.llm({ id: "turn", model })],
        until: Until.noToolCalls()
      })
      const { exit, requests } = yield* withRequests(
        Step.execute(notesAgent, "Remember milk and eggs", { toolkit: Toolkit.make(note, count) }),
        [noteCall("milk"), noteCall("eggs"), countCall, answer("Two notes.")]
      )
      expect(exit._tag).toBe("Success")
      const recalls = requests.map((request) => {
        const first = request.history[0]
        return first?.type === "message" && first.role === "developer" ? Item.partText(first.content[0]!) : null
      })
      expect(recalls).toStrictEqual([null, "Your notes: milk", "Your notes: milk; eggs", "Your notes: milk; eggs"])
      expect(requests[3]?.history.at(-1)).toMatchObject({ type: "function_call_output", output: "2" })
      // The recall is sent, never appended to the conversation.
      expect(requests[3]?.history.filter((item) => item.type === "message" && item.role === "developer")).toHaveLength(
        1
      )
    }))

  it.effect("a spawned sub-agent has its own; outside a step program a tool gets its init and keeps nothing", () =>
    Effect.gen(function*() {
      const spawned = Step.loop({
        id: "main",
        steps: [
          Step.llm({ id: "turn", model }),
          Step.spawn({ id: "helper", child: Step.llm({ id: "help", model }) })
        ],
        until: Until.maxSteps(1)
      })
      const { requests } = yield* withRequests(
        Step.execute(spawned, "Note milk", { toolkit: Toolkit.make(note, count) }),
        [noteCall("milk"), answer("helping")]
      )
      expect(requests[1]?.history[0]).not.toMatchObject({ role: "developer" })
      const alone = yield* Toolkit.executeAllSafe(Toolkit.make(note), [
        {
          type: "function_call",
          id: "fc_1",
          status: "completed",
          call_id: "c1",
          name: "note",
          arguments: "{\"text\":\"a\"}"
        },
        {
          type: "function_call",
          id: "fc_2",
          status: "completed",
          call_id: "c2",
          name: "note",
          arguments: "{\"text\":\"b\"}"
        }
      ], { concurrency: 1 })
      expect(alone.map((result) => result.output.output)).toStrictEqual(["[\"a\"]", "[\"b\"]"])
    }))
})
