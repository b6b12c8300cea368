/**
 * What a step costs in agentloop's step programs and in its peers' workflow
 * engines, each running the same tiny work (an addition) so the figures are
 * the machinery's cost per step:
 *
 * - 100 steps in sequence: a `Step.loop` of 100 `run` steps (one iteration);
 *   a LangGraph.js `StateGraph` of 100 nodes in a chain; a Mastra workflow of
 *   100 steps joined by `.then`;
 * - a 3-way fan-out: `Step.fork` (`all`) of three `run` steps; a LangGraph
 *   graph whose three nodes run from `START` at once into a summing reducer; a
 *   Mastra workflow of one `.parallel` of three steps.
 *
 * Each program is built once and executed again and again (LangGraph without
 * a checkpointer, Mastra without storage): the figures are per execution.
 */
import { Step, Until } from "@agentloop/core"
import { Annotation, END, START, StateGraph } from "@langchain/langgraph"
import { createStep, createWorkflow } from "@mastra/core/workflows"
import { Effect } from "effect"
import { z } from "zod"
import { compare } from "./measure.ts"

const sequence = 100
const executions = 10
const fanOuts = 100
const work = (n: number) => n + 1
const check = (got: number, expected: number) => {
  if (got !== expected) throw new Error(`the program computed ${got}, expected ${expected}`)
}

const ahead = (quoted: string) => ({ atMost: 1, source: `issue 20: stays ahead; ${quoted} quoted` })

// agentloop
const [first, ...rest] = Array.from({ length: sequence }, (_, i) => Step.run({ id: `s${i}`, execute: work }))
const agentloopSequence = Step.loop({ id: "sequence", steps: [first!, ...rest], until: Until.maxSteps(1) })
const agentloopFork = Step.fork({
  id: "fan",
  mode: "all",
  paths: (_: number) => [1, 2, 3].map((k) => Step.run({ id: `p${k}`, execute: (n: number) => n + k })),
  merge: (results) => results.reduce((a, b) => a + b, 0)
})

// LangGraph.js
const Counter = Annotation.Root({ n: Annotation<number> })
const chain = new StateGraph(Counter)
const names = Array.from({ length: sequence }, (_, i) => `s${i}`)
for (const name of names) chain.addNode(name, (state: typeof Counter.State) => ({ n: work(state.n) }))
// The builder's types track node names as they are added; the names here are built in a loop.
const ends = [START, ...names, END]
for (let i = 0; i + 1 < ends.length; i++) chain.addEdge(ends[i] as typeof START, ends[i + 1] as typeof END)
const langgraphSequence = chain.compile()
const Sum = Annotation.Root({ n: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }) })
const fan = new StateGraph(Sum)
for (const [name, k] of [["p1", 1], ["p2", 2], ["p3", 3]] as const) {
  fan.addNode(name, () => ({ n: k }))
  fan.addEdge(START, name as typeof END)
  fan.addEdge(name as typeof START, END)
}
const langgraphFork = fan.compile()

// Mastra
const N = z.object({ n: z.number() })
const mastraStep = (id: string, k: number) =>
  createStep({ id, inputSchema: N, outputSchema: N, execute: async ({ inputData }) => ({ n: inputData.n + k }) })
let mastraChain = createWorkflow({ id: "sequence", inputSchema: N, outputSchema: N })
for (const name of names) mastraChain = mastraChain.then(mastraStep(name, 1))
const mastraSequence = mastraChain.commit()
const mastraFork = createWorkflow({ id: "fan", inputSchema: N, outputSchema: z.object({ p1: N, p2: N, p3: N }) })
  .parallel([mastraStep("p1", 1), mastraStep("p2", 2), mastraStep("p3", 3)])
  .commit()

const times = (count: number, once: () => Promise<void>) => async () => {
  for (let i = 0; i < count; i++) await once()
}

await compare({
  title: `per step: ${sequence} steps in sequence (an addition each), one program executed ${executions} times`,
  label: "per step, 100 in sequence",
  units: sequence * executions,
  unit: "step",
  baseline: {
    name: "LangGraph.js StateGraph, 100 nodes",
    run: times(
      executions,
      async () => check((await langgraphSequence.invoke({ n: 0 }, { recursionLimit: 2 * sequence })).n, sequence)
    )
  },
  cases: [
    {
      name: "Mastra workflow, 100 steps",
      run: times(executions, async () => {
        const result = await (await mastraSequence.createRun()).start({ inputData: { n: 0 } })
        check(result.status === "success" ? result.result.n : Number.NaN, sequence)
      })
    },
    {
      name: "agentloop Step.loop of 100 run steps",
      run: times(
        executions,
        () => Effect.runPromise(Effect.map(Step.execute(agentloopSequence, 0), (n) => check(n, sequence)))
      )
    }
  ],
  ratios: [
    { of: "agentloop Step.loop of 100 run steps", to: "LangGraph.js StateGraph, 100 nodes", goal: ahead("0.03x") },
    { of: "agentloop Step.loop of 100 run steps", to: "Mastra workflow, 100 steps", goal: ahead("0.24x") }
  ]
})

await compare({
  title: `3-way fan-out: one fork of three steps into a sum, executed ${fanOuts} times`,
  label: "3-way fan-out",
  units: fanOuts,
  unit: "execution",
  baseline: {
    name: "LangGraph.js three nodes from START",
    run: times(fanOuts, async () => check((await langgraphFork.invoke({ n: 0 })).n, 6))
  },
  cases: [
    {
      name: "Mastra .parallel of three steps",
      run: times(fanOuts, async () => {
        const result = await (await mastraFork.createRun()).start({ inputData: { n: 0 } })
        check(
          result.status === "success" ? result.result.p1.n + result.result.p2.n + result.result.p3.n : Number.NaN,
          6
        )
      })
    },
    {
      name: "agentloop Step.fork (all) of three",
      run: times(fanOuts, () => Effect.runPromise(Effect.map(Step.execute(agentloopFork, 0), (n) => check(n, 6))))
    }
  ],
  ratios: [
    { of: "agentloop Step.fork (all) of three", to: "LangGraph.js three nodes from START", goal: ahead("0.026x") },
    { of: "agentloop Step.fork (all) of three", to: "Mastra .parallel of three steps", goal: ahead("0.23x") }
  ]
})
