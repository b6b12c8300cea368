/**
 * The AI SDK's side of the agent benchmarks: its own `MockLanguageModelV4`
 * (from `ai/test`) answering with the turns of `agentScript.ts`, translated
 * part for part from the deltas agentloop's mock streams (`doStream`), or
 * whole (`doGenerate`); the `add` tool as an AI SDK tool; and a run of the
 * script by `streamText` and by `generateText`, each checking it took every
 * turn and ended with the script's answer.
 */
import { Item, type Turn, type TurnDelta } from "@agentloop/core"
import { generateText, stepCountIs, streamText, tool } from "ai"
import { MockLanguageModelV4 } from "ai/test"
import { z } from "zod"
import { answer, deltasFor, turnFor, turns } from "./agentScript.ts"

type Options = Parameters<MockLanguageModelV4["doStream"]>[0]
type StreamResult = Awaited<ReturnType<MockLanguageModelV4["doStream"]>>
type StreamPart = StreamResult["stream"] extends ReadableStream<infer P> ? P : never
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>

const resultsIn = (options: Options): number => {
  let results = 0
  for (const message of options.prompt) if (message.role === "tool") results += message.content.length
  return results
}

const usage = (turn: Turn.Turn): GenerateResult["usage"] => ({
  inputTokens: { total: turn.usage.input, noCache: turn.usage.input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: turn.usage.output, text: turn.usage.output, reasoning: 0 }
})

const finishReason = (turn: Turn.Turn): GenerateResult["finishReason"] =>
  turn.stopReason === "tool_calls" ? { unified: "tool-calls", raw: "tool_calls" } : { unified: "stop", raw: "stop" }

/** The stream parts of agentloop's deltas, in the AI SDK's provider protocol. */
const parts = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): ReadonlyArray<StreamPart> => {
  const out: Array<StreamPart> = [{ type: "stream-start", warnings: [] }]
  let textOpen = false
  for (const delta of deltas) {
    switch (delta.type) {
      case "text_delta":
        if (!textOpen) out.push({ type: "text-start", id: "text" })
        textOpen = true
        out.push({ type: "text-delta", id: "text", delta: delta.delta })
        break
      case "function_call_start":
        out.push({ type: "tool-input-start", id: delta.call_id, toolName: delta.name })
        break
      case "function_call_arguments_delta":
        out.push({ type: "tool-input-delta", id: delta.call_id, delta: delta.delta })
        break
      case "function_call_done":
        out.push({ type: "tool-input-end", id: delta.call_id })
        out.push({ type: "tool-call", toolCallId: delta.call_id, toolName: delta.name, input: delta.arguments })
        break
      case "turn_complete":
        if (textOpen) out.push({ type: "text-end", id: "text" })
        out.push({ type: "finish", usage: usage(delta.turn), finishReason: finishReason(delta.turn) })
        break
      default:
        break
    }
  }
  return out
}

const translated = new WeakMap<ReadonlyArray<TurnDelta.TurnDelta>, ReadonlyArray<StreamPart>>()
const partsOf = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): ReadonlyArray<StreamPart> => {
  const known = translated.get(deltas)
  if (known !== undefined) return known
  const made = parts(deltas)
  translated.set(deltas, made)
  return made
}

const content = (turn: Turn.Turn): GenerateResult["content"] =>
  turn.items.flatMap((item): GenerateResult["content"] => {
    if (item.type === "function_call") {
      return [{ type: "tool-call", toolCallId: item.call_id, toolName: item.name, input: item.arguments }]
    }
    if (item.type === "message") {
      return item.content.map((part) => ({
        type: "text",
        text: part.type === "refusal" ? part.refusal : Item.partText(part)
      }))
    }
    return []
  })

/**
 * A stream of `list`, waiting for `gate` (when given) before its first part;
 * it fails with the abort's reason when `signal` aborts first, as a provider's
 * response body does when its request is aborted.
 */
const readable = (
  list: ReadonlyArray<StreamPart>,
  gate: Promise<void> | undefined,
  signal: AbortSignal | undefined
): ReadableStream<StreamPart> =>
  new ReadableStream({
    async start(controller) {
      if (gate !== undefined) {
        const aborted = new Promise<boolean>((resolve) => signal?.addEventListener("abort", () => resolve(true)))
        if (await Promise.race([gate.then(() => false), aborted])) return controller.error(signal?.reason)
      }
      for (const part of list) controller.enqueue(part)
      controller.close()
    }
  })

/** What a run of {@link streamRun} waits for and reports. */
export interface StreamOptions {
  /** The run's turns (default the script's {@link turns}). */
  readonly turns?: number | undefined
  /** Every model stream waits for it before its first part. */
  readonly gate?: Promise<void> | undefined
  /** Called as each model request starts (to count the runs in flight). */
  readonly onStream?: (() => void) | undefined
  readonly abortSignal?: AbortSignal | undefined
}

const mockModel = (options: StreamOptions) =>
  new MockLanguageModelV4({
    doStream: async (call) => {
      options.onStream?.()
      return { stream: readable(partsOf(deltasFor(resultsIn(call), options.turns)), options.gate, call.abortSignal) }
    },
    doGenerate: async (call) => {
      const turn = turnFor(resultsIn(call), options.turns)
      return { content: content(turn), finishReason: finishReason(turn), usage: usage(turn), warnings: [] }
    }
  })

const add = tool({
  description: "Adds two numbers",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: async ({ a, b }) => a + b
})

const check = (text: string, steps: number, length = turns) => {
  if (text !== answer || steps !== length) throw new Error(`the AI SDK run took ${steps} steps and answered ${text}`)
}

/** One run of the script by `streamText`, its full stream read part by part as a UI would. */
export const streamRun = async (options: StreamOptions = {}): Promise<void> => {
  const result = streamText({
    model: mockModel(options),
    tools: { add },
    stopWhen: stepCountIs((options.turns ?? turns) + 1),
    prompt: "Add",
    ...(options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal })
  })
  for await (const part of result.fullStream) {
    if (part.type === "error") throw part.error
  }
  check(await result.text, (await result.steps).length, options.turns)
}

/** One run of the script by `generateText`. */
export const generateRun = async (): Promise<void> => {
  const result = await generateText({
    model: mockModel({}),
    tools: { add },
    stopWhen: stepCountIs(turns + 1),
    prompt: "Add"
  })
  check(result.text, result.steps.length)
}
