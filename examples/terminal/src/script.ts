/**
 * The demo's scripted model: three turns that exercise both tools (one call
 * fails on purpose, to show how a tool failure reaches the model) and answer.
 */
import { TokenUsage, type Turn } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"

export const question =
  "A marathon is 26.2 miles: how many kilometres is that? What is (3.5 + 1.25) * 4? And is 100 °F a fever in °C?"

const model = "gpt-5-mini"

export const script: ReadonlyArray<Turn.Turn> = [
  MockLanguageModel.callsTurn([
    { name: "convert_units", arguments: { value: 26.2, from: "mi", to: "km" }, callId: "call_marathon" },
    { name: "calculator", arguments: { expression: "(3.5 + 1.25) * 4" }, callId: "call_product" },
    { name: "convert_units", arguments: { value: 100, from: "F", to: "kg" }, callId: "call_fever" }
  ], { text: "Let me work these out with the tools.\n", model, usage: TokenUsage.make(412, 96) }),
  MockLanguageModel.callsTurn([
    { name: "convert_units", arguments: { value: 100, from: "F", to: "C" }, callId: "call_fever_retry" }
  ], { text: "I asked for the wrong unit; converting to Celsius instead.\n", model, usage: TokenUsage.make(598, 41) }),
  MockLanguageModel.textTurn(
    "A marathon is about 42.16 km. (3.5 + 1.25) × 4 = 19. And 100 °F is about 37.8 °C: " +
      "a mild fever by most definitions (from about 37.5 °C).\n",
    { model, usage: TokenUsage.make(671, 58) }
  )
]
