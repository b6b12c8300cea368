/**
 * Anthropic Messages API event streams in the documented wire format (every
 * event with its `type`, sent as `event: <type>` + `data: <json>`), for the
 * loopback server.
 */
import { type ProviderHarness, ProviderServer } from "@agentloop/testing"
import { Anthropic } from "../src/index.ts"
import { AnthropicWire } from "../src/testing/index.ts"

export const model = "claude-sonnet-4-5-20250929"

/** One event; `named: false` leaves out the `event:` line, as some proxies and recorders do. */
export const event = (type: string, fields: Record<string, unknown> = {}, named = true) =>
  ProviderServer.sseEvent({ type, ...fields }, named ? type : undefined)

export interface UsageWire {
  readonly input_tokens?: number
  readonly output_tokens?: number
  readonly cache_creation_input_tokens?: number
  readonly cache_read_input_tokens?: number
  readonly output_tokens_details?: { readonly thinking_tokens?: number }
}

export const messageStart = (id: string, usage: UsageWire = { input_tokens: 12, output_tokens: 1 }) =>
  event("message_start", {
    message: {
      id,
      type: "message",
      role: "assistant",
      content: [],
      model,
      stop_reason: null,
      stop_sequence: null,
      usage
    }
  })

export const blockStart = (index: number, block: Record<string, unknown>) =>
  event("content_block_start", { index, content_block: block })

export const delta = (index: number, fields: Record<string, unknown>) =>
  event("content_block_delta", { index, delta: fields })

export const blockStop = (index: number) => event("content_block_stop", { index })

export const messageDelta = (stopReason: string | null, usage: UsageWire = { output_tokens: 5 }) =>
  event("message_delta", { delta: { stop_reason: stopReason, stop_sequence: null }, usage })

export const messageStop = event("message_stop")

export const ping = event("ping")

/** A text block at `index` streamed in `pieces`. */
export const textBlock = (index: number, ...pieces: ReadonlyArray<string>) => [
  blockStart(index, { type: "text", text: "" }),
  ...pieces.map((text) => delta(index, { type: "text_delta", text })),
  blockStop(index)
]

/** A thinking block at `index` streamed in `pieces`, then its signature. */
export const thinkingBlock = (index: number, signature: string, ...pieces: ReadonlyArray<string>) => [
  blockStart(index, { type: "thinking", thinking: "" }),
  ...pieces.map((thinking) => delta(index, { type: "thinking_delta", thinking })),
  delta(index, { type: "signature_delta", signature }),
  blockStop(index)
]

/** A tool_use block at `index` whose input streams in `pieces`. */
export const toolUseBlock = (index: number, id: string, name: string, ...pieces: ReadonlyArray<string>) => [
  blockStart(index, { type: "tool_use", id, name, input: {} }),
  ...pieces.map((partial_json) => delta(index, { type: "input_json_delta", partial_json })),
  blockStop(index)
]

/** The whole stream of a text answer. */
export const textStream = (id: string, ...pieces: ReadonlyArray<string>) => [
  messageStart(id),
  ping,
  ...textBlock(0, ...pieces),
  messageDelta("end_turn"),
  messageStop
]

/** The Messages wire format for the provider conformance suite. */
export const conformance: ProviderHarness.Fixture = {
  provider: "anthropic",
  credentialHeader: "x-api-key",
  layer: (settings) => Anthropic.layerWithoutHttpClient({ ...settings, model }),
  frames: (turn, options) => {
    const usage = AnthropicWire.usage(turn.usage)
    const blocks: Array<ReadonlyArray<string>> = []
    if (turn.reasoning !== undefined) blocks.push(thinkingBlock(blocks.length, "sig-conformance", ...turn.reasoning))
    if (turn.text !== undefined) blocks.push(textBlock(blocks.length, ...turn.text))
    for (const call of turn.calls ?? []) {
      const half = Math.floor(call.arguments.length / 2)
      blocks.push(
        toolUseBlock(blocks.length, call.id, call.name, call.arguments.slice(0, half), call.arguments.slice(half))
      )
    }
    // The usage of message_delta wins over message_start's, whose output is the first token.
    const start = [messageStart(turn.id, { ...usage, output_tokens: 1 }), ping]
    const end = [messageDelta((turn.calls ?? []).length > 0 ? "tool_use" : "end_turn", usage), messageStop]
    return [...start, ...blocks.flat(), ...(options?.complete === false ? [] : end)]
  },
  serverError: (message) => [event("error", { error: { type: "api_error", message } })]
}
