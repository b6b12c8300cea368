/**
 * Anthropic's prompt cache: where a request marks the stable prefix it shares
 * with the next one (`cache_control` breakpoints), so the next request reads
 * that prefix from the cache, billed at a tenth of the input rate, instead of
 * paying for it again. Writing the cache costs a quarter more than input;
 * `TokenUsage` counts reads (`cachedInput`) and writes (`cacheWrite`) apart,
 * and `Pricing` bills each at its rate.
 *
 * @since 0.2.0
 */

/**
 * A prompt-cache breakpoint: the request's prefix up to the block, tool or
 * system block that carries it is cached, for 5 minutes.
 *
 * @since 0.2.0
 * @category models
 */
export interface CacheControl {
  readonly type: "ephemeral"
}

/** What can carry a breakpoint. */
interface Markable {
  readonly cache_control?: CacheControl
}

/** A message, as far as breakpoints care: its role and its blocks' types. */
interface Message {
  readonly role: string
  readonly content: ReadonlyArray<Markable & { readonly type?: unknown }>
}

/**
 * The parts of a request body that breakpoints go on (`AnthropicRequest.Body`
 * is one): its tools, its system blocks and its messages.
 *
 * @since 0.2.0
 * @category models
 */
export interface Prefix {
  readonly tools?: ReadonlyArray<Markable> | undefined
  readonly system?: ReadonlyArray<Markable> | undefined
  readonly messages: ReadonlyArray<Message>
}

/**
 * Which stable prefixes of a request are marked for the prompt cache (the
 * 5-minute cache, `cache_control: { type: "ephemeral" }`), each on unless set
 * to `false`: `tools` (the last tool definition, so all of them are cached),
 * `system` (the last system block: tools and system prompt), and `history`
 * (the last block of the request, which the next turn reads back, and the
 * last block of the previous turn's request, which this one reads however
 * many blocks the last turn added). That is four breakpoints at most, as the
 * API allows. A prefix shorter than the model's minimum (1,024 to 4,096
 * tokens) is not cached, and costs nothing more.
 *
 * @since 0.2.0
 * @category models
 */
export interface PromptCache {
  readonly tools?: boolean | undefined
  readonly system?: boolean | undefined
  readonly history?: boolean | undefined
}

const breakpoint: CacheControl = { type: "ephemeral" }

// Thinking blocks cannot carry a breakpoint, and blocks this layer does not model are sent back untouched.
const cacheable: ReadonlySet<unknown> = new Set(["text", "image", "document", "tool_use", "tool_result"])

/** The message with a breakpoint on its last block that can carry one; `undefined` when none can. */
const markLast = <M extends Message>(message: M): M | undefined => {
  for (let i = message.content.length - 1; i >= 0; i--) {
    const block = message.content[i]!
    if (cacheable.has(block.type)) {
      const content = [...message.content]
      content[i] = { ...block, cache_control: breakpoint }
      return { ...message, content }
    }
  }
  return undefined
}

/**
 * The indices of the messages that get a breakpoint: the last message, and
 * the one before the last assistant message (where the previous turn's
 * request ended) when something follows that assistant message.
 */
const historyBreakpoints = (messages: ReadonlyArray<Message>): ReadonlyArray<number> => {
  const last = messages.length - 1
  if (last < 0) return []
  let assistant = -1
  for (let i = last; i >= 0; i--) {
    if (messages[i]!.role === "assistant") {
      assistant = i
      break
    }
  }
  return assistant > 0 && assistant < last ? [assistant - 1, last] : [last]
}

/**
 * `body` with the breakpoints of `cache` (default: all of {@link PromptCache}'s;
 * `false`: none, the body as it is).
 *
 * @since 0.2.0
 * @category breakpoints
 * @example
 * ```ts
 * import { AnthropicCache, type AnthropicRequest } from "@agentloop/anthropic"
 *
 * const body: AnthropicRequest.Body = {
 *   model: "claude-haiku-4-5",
 *   max_tokens: 1024,
 *   system: [{ type: "text", text: "You are a careful assistant." }],
 *   messages: [{ role: "user", content: [{ type: "text", text: "Hello" }] }],
 *   stream: true
 * }
 * const marked = AnthropicCache.withBreakpoints(body, { history: false })
 * console.log(JSON.stringify(marked.system)) // [{"type":"text","text":"You are a careful assistant.","cache_control":{"type":"ephemeral"}}]
 * ```
 */
export const withBreakpoints = <B extends Prefix>(body: B, cache: PromptCache | false | undefined): B => {
  if (cache === false) return body
  const tools = body.tools
  const system = body.system
  const lastTool = tools === undefined ? undefined : tools[tools.length - 1]
  const lastSystem = system === undefined ? undefined : system[system.length - 1]
  let messages = body.messages
  if (cache?.history !== false) {
    const marked = [...messages]
    for (const index of historyBreakpoints(messages)) marked[index] = markLast(marked[index]!) ?? marked[index]!
    messages = marked
  }
  return {
    ...body,
    ...(cache?.tools === false || tools === undefined || lastTool === undefined
      ? {}
      : { tools: [...tools.slice(0, -1), { ...lastTool, cache_control: breakpoint }] }),
    ...(cache?.system === false || system === undefined || lastSystem === undefined
      ? {}
      : { system: [...system.slice(0, -1), { ...lastSystem, cache_control: breakpoint }] }),
    messages
  }
}
