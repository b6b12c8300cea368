/**
 * LangGraph.js's side of the agent benchmarks: a LangChain chat model that
 * answers with the turns of `agentScript.ts` (whole from `_generate`, or
 * chunk by chunk from `_streamResponseChunks`, translated from the deltas
 * agentloop's mock streams), the `add` tool as a LangChain tool, and
 * LangGraph's prebuilt ReAct agent (`createReactAgent`: a model node, a tool
 * node, and the edge between them) over them, with or without a checkpointer.
 */
import { Item, type Turn, type TurnDelta } from "@agentloop/core"
import type { CallbackManagerForLLMRun } from "@langchain/core/callbacks/manager"
import { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { AIMessage, AIMessageChunk } from "@langchain/core/messages"
import type { BaseMessage } from "@langchain/core/messages"
import { ChatGenerationChunk } from "@langchain/core/outputs"
import type { ChatResult } from "@langchain/core/outputs"
import { tool } from "@langchain/core/tools"
import type { BaseCheckpointSaver } from "@langchain/langgraph"
import { createReactAgent } from "@langchain/langgraph/prebuilt"
import { z } from "zod"
import { answer, deltasFor, turnFor, turns } from "./agentScript.ts"

const resultsIn = (messages: ReadonlyArray<BaseMessage>): number => {
  let results = 0
  for (const message of messages) if (message.type === "tool") results++
  return results
}

const message = (turn: Turn.Turn): AIMessage => {
  let text = ""
  const calls: Array<{ id: string; name: string; args: Record<string, unknown>; type: "tool_call" }> = []
  for (const item of turn.items) {
    if (item.type === "message") {
      for (const part of item.content) text += part.type === "refusal" ? part.refusal : Item.partText(part)
    } else if (item.type === "function_call") {
      calls.push({ id: item.call_id, name: item.name, args: JSON.parse(item.arguments), type: "tool_call" })
    }
  }
  return new AIMessage({ content: text, tool_calls: calls })
}

/** The chunks of agentloop's deltas, as a LangChain chat model streams them. */
const chunks = (deltas: ReadonlyArray<TurnDelta.TurnDelta>): ReadonlyArray<AIMessageChunk> => {
  const out: Array<AIMessageChunk> = []
  const indices = new Map<string, number>()
  for (const delta of deltas) {
    switch (delta.type) {
      case "text_delta":
        out.push(new AIMessageChunk({ content: delta.delta }))
        break
      case "function_call_start":
        indices.set(delta.call_id, indices.size)
        out.push(
          new AIMessageChunk({
            content: "",
            tool_call_chunks: [{ id: delta.call_id, name: delta.name, args: "", index: indices.size - 1 }]
          })
        )
        break
      case "function_call_arguments_delta":
        out.push(
          new AIMessageChunk({
            content: "",
            tool_call_chunks: [{ args: delta.delta, index: indices.get(delta.call_id) ?? 0 }]
          })
        )
        break
      default:
        break
    }
  }
  return out
}

const streamed = Array.from({ length: turns }, (_, results) => chunks(deltasFor(results)))

/** The script as a LangChain chat model; tools bound to it change nothing. */
export class ScriptedChatModel extends BaseChatModel {
  _llmType(): string {
    return "bench-script"
  }

  override bindTools(): this {
    return this
  }

  async _generate(messages: Array<BaseMessage>): Promise<ChatResult> {
    const reply = message(turnFor(resultsIn(messages)))
    return { generations: [{ text: typeof reply.content === "string" ? reply.content : "", message: reply }] }
  }

  override async *_streamResponseChunks(
    messages: Array<BaseMessage>,
    _options: this["ParsedCallOptions"],
    runManager?: CallbackManagerForLLMRun
  ): AsyncGenerator<ChatGenerationChunk> {
    for (const chunk of streamed[Math.min(resultsIn(messages), turns - 1)]!) {
      const text = typeof chunk.content === "string" ? chunk.content : ""
      yield new ChatGenerationChunk({ text, message: chunk })
      await runManager?.handleLLMNewToken(text)
    }
  }
}

const add = tool(async ({ a, b }) => String(a + b), {
  name: "add",
  description: "Adds two numbers",
  schema: z.object({ a: z.number(), b: z.number() })
})

/** LangGraph's prebuilt agent on the script, saving its checkpoints to `saver` when given. */
export const agent = (saver?: BaseCheckpointSaver) =>
  createReactAgent({
    llm: new ScriptedChatModel({}),
    tools: [add],
    ...(saver === undefined ? {} : { checkpointSaver: saver })
  })

type Agent = ReturnType<typeof agent>

const check = (messages: ReadonlyArray<BaseMessage>) => {
  const last = messages.at(-1)
  const tools = resultsIn(messages)
  if (last?.content !== answer || tools !== turns - 1) {
    throw new Error(`the LangGraph run called ${tools} tools and answered ${String(last?.content)}`)
  }
}

let threads = 0

/** One run of the script by `graph.invoke`; a run with a saver is a new thread, its checkpoints saved before each next step. */
export const invokeRun = async (graph: Agent): Promise<void> => {
  const result = await graph.invoke(
    { messages: [{ role: "user", content: "Add" }] },
    { configurable: { thread_id: `bench-${threads++}` }, durability: "sync", recursionLimit: 4 * turns }
  )
  check(result.messages)
}

/** One run of the script by `graph.stream` in `messages` mode: the model's chunks as they come, as a UI reads them. */
export const streamRun = async (graph: Agent): Promise<void> => {
  let chunks = 0
  const stream = await graph.stream(
    { messages: [{ role: "user", content: "Add" }] },
    { streamMode: "messages", configurable: { thread_id: `bench-${threads++}` }, recursionLimit: 4 * turns }
  )
  for await (const _ of stream) chunks++
  if (chunks < turns) throw new Error(`the LangGraph stream gave ${chunks} chunks`)
}
