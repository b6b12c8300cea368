/**
 * A tool call's `extra_content`, which Gemini's OpenAI-compatible endpoint
 * carries the call's thought signature in (`{ google: { thought_signature } }`)
 * and refuses the next request without (a 400, "Function call is missing a
 * thought_signature"). A turn keeps it, with its call's id, as JSON in the
 * `encrypted_content` of a reasoning item with no readable content, just
 * before the call; `ChatCompletionsRequest` puts it back on that call, whatever
 * `ReasoningHistory` says.
 *
 * @since 0.2.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * An `extra_content` and the id of the call it came with.
 *
 * @since 0.2.0
 * @category models
 */
export interface Extra {
  readonly callId: string
  readonly extra: { readonly [key: string]: unknown }
}

const Kept = Schema.Struct({
  tool_call_id: Schema.String,
  extra_content: Schema.Record(Schema.String, Schema.Unknown)
})

const decodeKept = Schema.decodeUnknownResult(Schema.fromJsonString(Kept))

/**
 * The `extra_content` of call `callId` as a reasoning item keeps it.
 *
 * @example
 * ```ts
 * import { ChatCompletionsExtraContent } from "@agentloop/chat-completions"
 *
 * // Gemini's thought signature rides in a call's `extra_content`; the turn keeps it to send it back.
 * const kept = ChatCompletionsExtraContent.toEncrypted("call_1", { google: { thought_signature: "c2ln" } })
 * console.log(ChatCompletionsExtraContent.fromEncrypted(kept))
 * // { callId: 'call_1', extra: { google: { thought_signature: 'c2ln' } } }
 * console.log(ChatCompletionsExtraContent.fromEncrypted("opaque reasoning")) // undefined
 * ```
 *
 * @since 0.2.0
 * @category encoding
 */
export const toEncrypted = (callId: string, extra: { readonly [key: string]: unknown }): string =>
  JSON.stringify({ tool_call_id: callId, extra_content: extra })

/**
 * The `extra_content` a reasoning item's `encrypted_content` keeps, or
 * `undefined` when it holds something else (OpenRouter's reasoning details,
 * another provider's reasoning).
 *
 * @since 0.2.0
 * @category decoding
 */
export const fromEncrypted = (encrypted: string): Extra | undefined => {
  const kept = decodeKept(encrypted)
  return Result.isSuccess(kept) ? { callId: kept.success.tool_call_id, extra: kept.success.extra_content } : undefined
}
