/**
 * Chat Completions streams written by hand, chunk by chunk, in the shapes real
 * servers send (see each quirk's test), for the loopback server.
 */
import type { ProviderHarness, WireTurn } from "@agentloop/testing"
import { ChatCompletions } from "../src/index.ts"

export const model = "test-model"

export const id = "chatcmpl-test"

/** One `data:` chunk with the answer's id and model, as servers repeat them on every chunk. */
export const chunk = (fields: Record<string, unknown>) =>
  `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1_700_000_000, model, ...fields })}\n\n`

/** A chunk of the first choice: its delta, and its finish reason (none by default). */
export const delta = (fields: Record<string, unknown>, finishReason: string | null = null) =>
  chunk({ choices: [{ index: 0, delta: fields, logprobs: null, finish_reason: finishReason }] })

/** The chunk that finishes the answer, with an empty delta. */
export const finish = (reason: string) => delta({}, reason)

/** The usage chunk OpenAI sends last with `stream_options.include_usage`: empty `choices`. */
export const usage = (
  counts: Record<string, unknown> = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 }
) => chunk({ choices: [], usage: counts })

export const role = delta({ role: "assistant", content: "" })

export const done = "data: [DONE]\n\n"

/** The whole stream of a text answer, as OpenAI sends it. */
export const textStream = (...pieces: ReadonlyArray<string>) => [
  role,
  ...pieces.map((content) => delta({ content })),
  finish("stop"),
  usage(),
  done
]

/** A tool call's first piece: its index, id and name. */
export const callStart = (index: number, callId: string, name: string) =>
  delta({ tool_calls: [{ index, id: callId, type: "function", function: { name, arguments: "" } }] })

/** A piece of a tool call's arguments. */
export const callArguments = (index: number, piece: string) =>
  delta({ tool_calls: [{ index, function: { arguments: piece } }] })

const usageOf = (counts: WireTurn.WireTurn["usage"]) => ({
  prompt_tokens: counts.input,
  completion_tokens: counts.output,
  total_tokens: counts.total,
  prompt_tokens_details: { cached_tokens: counts.cachedInput },
  completion_tokens_details: { reasoning_tokens: counts.reasoning }
})

/** The Chat Completions wire format for the provider conformance suite: parallel calls' arguments interleaved. */
export const conformance: ProviderHarness.Fixture = {
  provider: "chat-completions",
  credentialHeader: "authorization",
  layer: (settings) => ChatCompletions.layerWithoutHttpClient({ ...settings, baseUrl: settings.baseUrl ?? "", model }),
  frames: (turn, options) => {
    const calls = turn.calls ?? []
    const halves = calls.map((call) => {
      const half = Math.floor(call.arguments.length / 2)
      return [call.arguments.slice(0, half), call.arguments.slice(half)] as const
    })
    const body = [
      chunk({ id: turn.id, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] }),
      ...(turn.reasoning ?? []).map((reasoning_content) => delta({ reasoning_content })),
      ...(turn.text ?? []).map((content) => delta({ content })),
      ...calls.map((call, index) => callStart(index, call.id, call.name)),
      ...halves.map(([first], index) => callArguments(index, first)),
      ...halves.map(([, second], index) => callArguments(index, second))
    ]
    const end = [finish(calls.length > 0 ? "tool_calls" : "stop"), usage(usageOf(turn.usage)), done]
    return options?.complete === false ? body : [...body, ...end]
  },
  serverError: (message) => [
    `data: ${JSON.stringify({ error: { message, type: "server_error", param: null, code: null } })}\n\n`
  ]
}
