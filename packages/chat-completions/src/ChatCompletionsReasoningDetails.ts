/**
 * OpenRouter's `reasoning_details`: the model's reasoning as typed details
 * (`reasoning.text` with its `signature`, `reasoning.summary`,
 * `reasoning.encrypted` with its `data`) streamed in pieces that share an
 * `index`. OpenRouter asks for them back, unmodified, with the assistant
 * message they came with (Claude's signatures and Gemini's thought signatures
 * ride in them). The pieces are merged here into whole details; a turn keeps
 * them, as JSON, in its reasoning item's `encrypted_content`.
 *
 * @since 0.2.0
 */
import { WireDecoder } from "@agentloop/core"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as ChatCompletionsChunk from "./ChatCompletionsChunk.ts"

type Detail = Record<string, unknown>

/**
 * The details of one answer being merged: a piece with the `index` of an
 * earlier one continues it (its `text` and `summary` appended, its other
 * fields set), a piece without an index is a detail of its own.
 *
 * @since 0.2.0
 * @category models
 */
export interface Merger {
  /** Adds the pieces of one delta. */
  readonly add: (pieces: ReadonlyArray<ChatCompletionsChunk.ReasoningDetail>) => void
  /** The merged details, in the order they started; empty when none came. */
  readonly details: () => ReadonlyArray<Detail>
}

const appended = ["text", "summary"]

/**
 * A merger of one answer's details.
 *
 * @example
 * ```ts
 * import { ChatCompletionsReasoningDetails } from "@agentloop/chat-completions"
 *
 * // OpenRouter streams a reasoning detail in pieces that share an index.
 * const merger = ChatCompletionsReasoningDetails.merger()
 * merger.add([{ type: "reasoning.text", index: 0, text: "Let me " }])
 * merger.add([{ type: "reasoning.text", index: 0, text: "think." }])
 * const details = merger.details()
 * console.log(details.length) // 1
 * // Kept in the turn's reasoning item, and sent back unmodified with the next request.
 * const kept = ChatCompletionsReasoningDetails.toEncrypted(details)
 * console.log(ChatCompletionsReasoningDetails.fromEncrypted(kept)?.length) // 1
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const merger = (): Merger => {
  const details: Array<Detail> = []
  // Indices come from the wire: they key a map, never an array.
  const byIndex = new Map<number, Detail>()
  return {
    add: (pieces) => {
      for (const piece of pieces) {
        const index = piece.index ?? undefined
        const detail = index === undefined ? undefined : byIndex.get(index)
        if (detail === undefined) {
          const copy = { ...piece }
          details.push(copy)
          if (index !== undefined) byIndex.set(index, copy)
          continue
        }
        for (const [key, value] of Object.entries(piece)) {
          const before = detail[key]
          if (appended.includes(key) && typeof before === "string" && typeof value === "string") {
            detail[key] = before + value
          } else if (value !== null && value !== undefined) detail[key] = value
        }
      }
    },
    details: () => details
  }
}

const decodeJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))
// Through `WireDecoder`, which keeps the fields the schema does not declare (`signature`, `data`): they go back.
const decodeDetails = WireDecoder.make(Schema.Array(ChatCompletionsChunk.ReasoningDetail))

/**
 * The details kept in a reasoning item's `encrypted_content`, every field
 * kept, or `undefined` when it holds something else (reasoning another
 * provider made).
 *
 * @since 0.2.0
 * @category decoding
 */
export const fromEncrypted = (encrypted: string): ReadonlyArray<ChatCompletionsChunk.ReasoningDetail> | undefined => {
  const json = decodeJson(encrypted)
  if (Result.isFailure(json)) return undefined
  const details = decodeDetails(json.success)
  return Result.isSuccess(details) ? details.success : undefined
}

/**
 * The details as a reasoning item keeps them.
 *
 * @since 0.2.0
 * @category encoding
 */
export const toEncrypted = (details: ReadonlyArray<Detail>): string => JSON.stringify(details)
