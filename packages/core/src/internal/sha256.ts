/**
 * SHA-256 with Web Crypto, so it runs wherever the core does.
 *
 * @internal
 */
import * as Effect from "effect/Effect"

const hex = (bytes: ArrayBuffer): string =>
  Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("")

/** The first 32 hex digits (128 bits) of the SHA-256 digest of `text` (UTF-8). */
export const sha256Hex = (text: string): Effect.Effect<string> =>
  Effect.map(
    Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))),
    (bytes) => hex(bytes).slice(0, 32)
  )

/**
 * The `Tool.IdempotencyKey` of the call `call` (its place: turn and index) of
 * the recorded run `run`: the same each time the same call runs, as the
 * durable engine derives its own.
 */
export const idempotencyKey = (run: string, call: string): Effect.Effect<string> => sha256Hex(`${run}-${call}`)
