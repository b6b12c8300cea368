/**
 * A provider's wire format written out: what the provider's server sends for
 * a turn, and how it reports an error. Each provider package exports one
 * (`ResponsesWire.wire`, `GeminiWire.wire`, `AnthropicWire.wire`), so a
 * loopback server in a test answers with a `Turn` or an `AiError` instead of
 * frames written by hand, and the provider's layer decodes them back to the
 * same turn and the same error.
 *
 * @since 0.1.0
 */
import type * as AiError from "../AiError.ts"
import type * as Turn from "../Turn.ts"

/**
 * How {@link ProviderWire.turn} writes a turn.
 *
 * @since 0.1.0
 * @category models
 */
export interface TurnOptions {
  /**
   * The size, in code points, of the pieces streamed text, reasoning and
   * arguments are split into, one delta event (or chunk) per piece. Default 16.
   */
  readonly chunkSize?: number | undefined
  /** `false` leaves out what ends the turn, as a stream cut off by the server does. Default `true`. */
  readonly complete?: boolean | undefined
}

/**
 * An HTTP answer: a status, its headers (names in lower case) and its body.
 *
 * @since 0.1.0
 * @category models
 */
export interface HttpAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * A provider's wire format, written out.
 *
 * @since 0.1.0
 * @category models
 */
export interface ProviderWire {
  /** The provider's name, as its errors carry it. */
  readonly provider: string
  /**
   * The Server-Sent Events frames (each `data:` block with its blank line) in
   * which the provider streams `turn`: its messages, refusals, reasoning and
   * function calls, its usage and its stop reason. Dies on an item the wire
   * cannot carry.
   */
  readonly turn: (turn: Turn.Turn, options?: TurnOptions) => ReadonlyArray<string>
  /**
   * The answer with which the provider reports `error`: an HTTP error status
   * with the provider's error body (and `retry-after` when the error has one),
   * or, for errors that happen inside a stream (`MalformedEvent`,
   * `IncompleteTurn`), a `200` event stream that breaks that way. The
   * provider's layer maps the answer back to an error with the same tag: an
   * HTTP error carries `error.message`, an error inside the stream the
   * decoder's own message.
   */
  readonly error: (error: AiError.AiError) => HttpAnswer
}

/**
 * `text` in pieces of `size` code points, as a wire streams it: no piece ends
 * inside a character (half a surrogate pair), and empty text has no pieces.
 *
 * @example
 * ```ts
 * import { ProviderWire } from "@agentloop/core"
 *
 * console.log(ProviderWire.pieces("Hello, world", 5)) // [ 'Hello', ', wor', 'ld' ]
 * console.log(ProviderWire.pieces("👋🌍", 1)) // [ '👋', '🌍' ]: never half a character
 * ```
 *
 * @since 0.1.0
 * @category wire
 */
export const pieces = (text: string, size: number): Array<string> => {
  const points = Array.from(text)
  const out: Array<string> = []
  for (let start = 0; start < points.length; start += size) out.push(points.slice(start, start + size).join(""))
  return out
}
