import { MockLanguageModel } from "@agentloop/testing"
import { describe, expect, it } from "@effect/vitest"
import * as AgentRules from "../src/agent/AgentRules.ts"
import type * as Item from "../src/Item.ts"
import type * as Toolkit from "../src/Toolkit.ts"

const call = (callId: string, name = "add"): Item.FunctionCall => ({
  type: "function_call",
  id: `fc_${callId}`,
  status: "completed",
  call_id: callId,
  name,
  arguments: "{\"a\":1,\"b\":1}"
})

const output = (callId: string, text: string): Item.FunctionCallOutput => ({
  type: "function_call_output",
  id: `fco_${callId}`,
  status: "completed",
  call_id: callId,
  output: text
})

const success = (callId: string, text = "2", name = "add"): Toolkit.Result => ({
  outcome: "success",
  call: call(callId, name),
  output: output(callId, text),
  value: JSON.parse(text)
})

const mistake = (callId: string, reason: string, outcome: Toolkit.Mistake["outcome"] = "failure"): Toolkit.Result => ({
  outcome,
  call: call(callId),
  output: output(callId, JSON.stringify({ error: reason })),
  reason
})

const turnCalling = (text?: string) =>
  MockLanguageModel.callsTurn([{ name: "add", arguments: { a: 1, b: 1 }, callId: "c1" }], { text })

describe("AgentRules", () => {
  it("mistakes: a turn whose calls all failed adds one, a success clears them, no calls keeps them", () => {
    const one = AgentRules.mistakes([], [mistake("c1", "bad"), mistake("c2", "worse")])
    expect(one).toStrictEqual(["bad; worse"])
    expect(AgentRules.mistakes(one, [mistake("c3", "again")])).toStrictEqual(["bad; worse", "again"])
    expect(AgentRules.mistakes(one, [])).toBe(one)
    expect(AgentRules.mistakes(one, [mistake("c4", "bad"), success("c5")])).toStrictEqual([])
  })

  it("progress: a turn repeating the previous calls and results without text is stuck", () => {
    const first = AgentRules.progress(AgentRules.progressing, turnCalling(), [success("c1")])
    expect(first.stuck).toStrictEqual([])
    const second = AgentRules.progress(first, turnCalling(), [success("c1")])
    const third = AgentRules.progress(second, turnCalling(), [success("c1")])
    expect(third.stuck).toHaveLength(2)
    expect(third.stuck[1]!.map((item) => item.type)).toStrictEqual(["function_call", "function_call_output"])
  })

  it("progress: some text, other results or no calls start afresh", () => {
    const first = AgentRules.progress(AgentRules.progressing, turnCalling(), [success("c1")])
    const repeated = AgentRules.progress(first, turnCalling(), [success("c1")])
    expect(repeated.stuck).toHaveLength(1)
    expect(AgentRules.progress(repeated, turnCalling("Trying once more."), [success("c1")]).stuck).toStrictEqual([])
    expect(AgentRules.progress(repeated, turnCalling(), [success("c1", "3")]).stuck).toStrictEqual([])
    expect(AgentRules.progress(repeated, MockLanguageModel.textTurn("done"), [])).toStrictEqual(AgentRules.progressing)
  })

  it("budget: the budget itself counts as reached, and an unknown cost cannot be kept within one", () => {
    expect(AgentRules.budget(0.99, 1)).toBe("within")
    expect(AgentRules.budget(1, 1)).toBe("reached")
    expect(AgentRules.budget(1.01, 1)).toBe("reached")
    expect(AgentRules.budget(null, 1)).toBe("unpriced")
    expect(AgentRules.budget(null, undefined)).toBe("within")
  })

  it("halting and submission find the call that ends the run", () => {
    const halted = mistake("c2", "the user left", "halted")
    expect(AgentRules.halting([success("c1"), halted])).toBe(halted)
    expect(AgentRules.halting([mistake("c3", "bad")])).toBeUndefined()
    const submitted = success("c4", "{\"answer\":5}", "submit")
    expect(AgentRules.submission([success("c1"), submitted], "submit")).toBe(submitted)
    expect(AgentRules.submission([submitted], undefined)).toBeUndefined()
    expect(AgentRules.submission([mistake("c5", "bad")], "add")).toBeUndefined()
  })
})
