/**
 * The example app of the crash-test kit's tests: a shop assistant that looks
 * up two prices at once (a read: idempotent), charges the card (not
 * idempotent) and answers, as an `AgentLoop` run or as a step program that
 * then emails the receipt. The same run is executed in the tests' process
 * and in the child of the `SIGKILL` test.
 */
import * as AgentLoop from "@agentloop/core/agent/AgentLoop"
import * as Step from "@agentloop/core/step/Step"
import * as Tool from "@agentloop/core/Tool"
import * as Toolkit from "@agentloop/core/Toolkit"
import * as Until from "@agentloop/core/Until"
import * as CrashJournal from "@agentloop/testing/CrashJournal"
import * as MockLanguageModel from "@agentloop/testing/MockLanguageModel"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

const prices: Record<string, number> = { tea: 300, cake: 450 }

export const lookup = Tool.make({
  name: "lookup",
  description: "The price of an item, in cents",
  input: Schema.Struct({ item: Schema.String }),
  output: Schema.Int,
  idempotent: true,
  execute: ({ item }) => Effect.succeed(prices[item] ?? 0)
})

export const charge = Tool.make({
  name: "charge",
  description: "Charges the customer's card",
  input: Schema.Struct({ cents: Schema.Int }),
  output: Schema.String,
  execute: ({ cents }) => Effect.succeed(`receipt for ${cents} cents`)
})

export const toolkit = CrashJournal.track(Toolkit.make(lookup, charge))

/** The model's side of the conversation. */
export const script = [
  MockLanguageModel.callsTurn([
    { name: "lookup", arguments: { item: "tea" }, callId: "call_tea" },
    { name: "lookup", arguments: { item: "cake" }, callId: "call_cake" }
  ]),
  MockLanguageModel.callsTurn([{ name: "charge", arguments: { cents: 750 }, callId: "call_charge" }]),
  MockLanguageModel.textTurn("Charged 7.50 for tea and cake.")
]

/**
 * The same conversation, answered from each request's history (by how many
 * calls it answers) rather than in order: a request asked twice gets the
 * same turn twice.
 */
export const respond: MockLanguageModel.Respond = ({ history }) => {
  const outputs = history.filter((item) => item.type === "function_call_output").length
  return outputs === 0 ? script[0]! : outputs < 3 ? script[1]! : script[2]!
}

/** The app's run: the customer's order, under `runId`; its value is the answer. */
export const order = (input: string, runId: string | undefined) =>
  Effect.flatMap(AgentLoop.AgentLoop, (agent) => agent.run({ input, toolkit, runId })).pipe(
    Effect.map((result) => result._tag === "Stopped" ? result.output : result._tag)
  )

/** The same shop as a step program: the agent's turns, then a step that emails the answer (not idempotent). */
export const orderSteps = (input: string, id: string) => {
  const turns = Step.loop({ id: "turns", steps: [Step.llm({ id: "turn" })], until: Until.noToolCalls() })
  const email = Step.run({
    id: "email",
    execute: (answer: string) => Effect.as(CrashJournal.record("email", { key: answer }), `emailed: ${answer}`)
  })
  const program = Step.loop({ id: "order", steps: [turns, email], until: Until.maxSteps(1) })
  return Step.execute(program, input, { id, toolkit })
}
