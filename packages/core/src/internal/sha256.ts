/**
 * SHA-256 that runs wherever the core does. A short text (an id, a call's
 * place, a fingerprint's input) is hashed here, in plain JavaScript, at once:
 * Web Crypto's digest is a promise (a thread-pool job in Node, one per tool
 * call of a recorded run, for its idempotency key) and costs several times
 * the CPU for a few dozen bytes (35-45 µs against 8-15 µs, measured). A long
 * one (a thread's history) goes to Web Crypto, off the main thread.
 *
 * @internal
 */
import * as Effect from "effect/Effect"

/** The texts hashed here at most (UTF-8 bytes); longer ones go to Web Crypto. */
const shortText = 1024

const primes = (count: number): ReadonlyArray<number> => {
  const found: Array<number> = []
  for (let n = 2; found.length < count; n++) if (found.every((p) => n % p !== 0)) found.push(n)
  return found
}

/** The first 32 bits of the fraction of `x` (FIPS 180-4 derives the constants so). */
const fraction = (x: number): number => Math.floor((x - Math.floor(x)) * 2 ** 32) >>> 0

const K = Uint32Array.from(primes(64), (p) => fraction(Math.cbrt(p)))
const initial = Uint32Array.from(primes(8), (p) => fraction(Math.sqrt(p)))

const rotr = (x: number, n: number): number => (x >>> n) | (x << (32 - n))

/** The SHA-256 digest of `bytes`, as its eight words. */
const digest = (bytes: Uint8Array): Uint32Array => {
  const padded = new Uint8Array(Math.ceil((bytes.length + 9) / 64) * 64)
  padded.set(bytes)
  padded[bytes.length] = 0x80
  const view = new DataView(padded.buffer)
  view.setUint32(padded.length - 8, Math.floor(bytes.length / 2 ** 29))
  view.setUint32(padded.length - 4, (bytes.length * 8) >>> 0)
  const hash = Uint32Array.from(initial)
  const w = new Uint32Array(64)
  for (let block = 0; block < padded.length; block += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(block + i * 4)
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15]!
      const y = w[i - 2]!
      w[i] = w[i - 16]! + (rotr(x, 7) ^ rotr(x, 18) ^ (x >>> 3)) + w[i - 7]! + (rotr(y, 17) ^ rotr(y, 19) ^ (y >>> 10))
    }
    let a = hash[0]!, b = hash[1]!, c = hash[2]!, d = hash[3]!, e = hash[4]!, f = hash[5]!, g = hash[6]!, h = hash[7]!
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) | 0
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0
      h = g
      g = f
      f = e
      e = (d + t1) | 0
      d = c
      c = b
      b = a
      a = (t1 + t2) | 0
    }
    const rounds = [a, b, c, d, e, f, g, h]
    for (let i = 0; i < 8; i++) hash[i] = hash[i]! + rounds[i]!
  }
  return hash
}

const encoder = new TextEncoder()

/** The first 32 hex digits (128 bits) of the SHA-256 digest of `text` (UTF-8). */
export const sha256Hex = (text: string): Effect.Effect<string> =>
  Effect.suspend(() => {
    const bytes = encoder.encode(text)
    if (bytes.length <= shortText) {
      const words = digest(bytes)
      return Effect.succeed(Array.from(words.subarray(0, 4), (word) => word.toString(16).padStart(8, "0")).join(""))
    }
    return Effect.map(
      Effect.promise(() => globalThis.crypto.subtle.digest("SHA-256", bytes)),
      (buffer) => Array.from(new Uint8Array(buffer, 0, 16), (byte) => byte.toString(16).padStart(2, "0")).join("")
    )
  })
