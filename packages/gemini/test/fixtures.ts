/**
 * Gemini `streamGenerateContent?alt=sse` chunks in the documented wire format,
 * for the loopback server.
 */
import { type ProviderHarness, ProviderServer } from "@agentloop/testing"
import { Gemini } from "../src/index.ts"
import { GeminiWire } from "../src/testing/index.ts"

/** One `GenerateContentResponse` chunk of candidate 0. */
export const chunk = (parts: ReadonlyArray<unknown>, extra: {
  readonly finishReason?: string
  readonly usageMetadata?: unknown
  readonly responseId?: string
} = {}) => ({
  candidates: [{
    content: { parts, role: "model" },
    ...(extra.finishReason === undefined ? {} : { finishReason: extra.finishReason }),
    index: 0
  }],
  usageMetadata: extra.usageMetadata ?? { promptTokenCount: 11, totalTokenCount: 11 },
  modelVersion: "gemini-2.5-flash-001",
  responseId: extra.responseId ?? "resp-abc"
})

/** SSE frames, one per chunk, without event names, as Gemini sends them. */
export const frames = (...chunks: ReadonlyArray<unknown>) => chunks.map((c) => ProviderServer.sseEvent(c))

/** The Gemini wire format for the provider conformance suite. */
export const conformance: ProviderHarness.Fixture = {
  provider: "gemini",
  credentialHeader: "x-goog-api-key",
  layer: (settings) => Gemini.layerWithoutHttpClient({ ...settings, model: "gemini-conformance" }),
  // Each piece of a WireTurn is its own chunk (the suite checks the deltas piece by piece), which
  // GeminiWire's fixed chunkSize cannot reproduce; the usage is written by GeminiWire.
  frames: (turn, options) => {
    const parts: Array<unknown> = [
      ...(turn.reasoning ?? []).map((text) => ({ text, thought: true })),
      ...(turn.text ?? []).map((text) => ({ text })),
      ...(turn.calls ?? []).map((call) => ({
        functionCall: { id: call.id, name: call.name, args: JSON.parse(call.arguments) }
      }))
    ]
    const usageMetadata = GeminiWire.usageMetadata(turn.usage)
    return frames(...parts.map((part, i) =>
      chunk([part], {
        responseId: turn.id,
        ...(i === parts.length - 1 && options?.complete !== false ? { finishReason: "STOP", usageMetadata } : {})
      })
    ))
  },
  serverError: (message) => frames({ error: { code: 500, message, status: "INTERNAL" } })
}
