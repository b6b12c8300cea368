/**
 * The frames of a file log: each record is its length (4 bytes), the CRC-32
 * of its kind and payload (4 bytes), its kind (1 byte), then the payload
 * (UTF-8), so a reader finds where each record ends and whether it is whole.
 *
 * A record cut short, or whose checksum fails, with no whole record anywhere
 * after it is a torn tail (the process or the machine died while appending
 * it: its append never succeeded) and is cut off. Damage followed by a whole
 * record is corruption, and is reported, never skipped: the reader looks for
 * one past the damage rather than trusting the damaged record's length (a
 * changed length would otherwise read as a record running past the end, and
 * every record after it would be dropped as a torn tail). A frame found in
 * the middle of other bytes by chance would need its CRC to match as well.
 *
 * @internal
 */

/** What a record is: the log's head (its run id and fingerprint), or an entry. */
export type Kind = "head" | "entry"

const kindByte: Record<Kind, number> = { head: 1, entry: 2 }

/** The bytes of a frame before its payload: read these first to learn how long the record is (see {@link recordLength}). */
export const headerLength = 9

/** How many bytes the record that starts with `header` (at least {@link headerLength} bytes) takes, header included. */
export const recordLength = (header: Uint8Array): number =>
  headerLength + new DataView(header.buffer, header.byteOffset, header.byteLength).getUint32(0, true)

const table = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

const crc32 = (bytes: Uint8Array, from: number, to: number): number => {
  let crc = 0xffffffff
  for (let i = from; i < to; i++) crc = table[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

const encoder = new TextEncoder()
const decoder = new TextDecoder("utf-8", { fatal: true })

/** The frames of `records`, one after another. */
export const encode = (records: ReadonlyArray<{ readonly kind: Kind; readonly text: string }>): Uint8Array => {
  const payloads = records.map((record) => encoder.encode(record.text))
  const bytes = new Uint8Array(payloads.reduce((total, payload) => total + headerLength + payload.length, 0))
  const view = new DataView(bytes.buffer)
  let offset = 0
  records.forEach((record, i) => {
    const payload = payloads[i]!
    view.setUint32(offset, payload.length, true)
    bytes[offset + 8] = kindByte[record.kind]
    bytes.set(payload, offset + headerLength)
    view.setUint32(offset + 4, crc32(bytes, offset + 8, offset + headerLength + payload.length), true)
    offset += headerLength + payload.length
  })
  return bytes
}

/**
 * A log read back: its records, how many records after the first were passed over and left out (see
 * {@link decode}), and how many bytes of the file hold whole ones (less than its size after a torn tail).
 */
export interface Decoded {
  readonly records: ReadonlyArray<{ readonly kind: Kind; readonly text: string }>
  readonly skipped: number
  readonly length: number
}

/** The kind a record's kind byte says, if it is one. */
const kindOf = (byte: number | undefined): Kind | undefined =>
  byte === kindByte.head ? "head" : byte === kindByte.entry ? "entry" : undefined

/** The whole record that starts at `offset` (its kind, and where it ends), or `undefined` (cut short, damaged, none). */
const recordAt = (
  bytes: Uint8Array,
  view: DataView,
  offset: number
): { readonly kind: Kind; readonly end: number } | undefined => {
  if (bytes.length - offset < headerLength) return undefined
  const end = offset + headerLength + view.getUint32(offset, true)
  const kind = kindOf(bytes[offset + 8])
  if (end > bytes.length || kind === undefined) return undefined
  return view.getUint32(offset + 4, true) === crc32(bytes, offset + 8, end) ? { kind, end } : undefined
}

/** Where the first whole record after `offset` starts, if any. */
const nextRecord = (bytes: Uint8Array, view: DataView, offset: number): number | undefined => {
  for (let at = offset + 1; at + headerLength <= bytes.length; at++) {
    if (recordAt(bytes, view, at) !== undefined) return at
  }
  return undefined
}

/** The payload of the whole record from `offset` to `end` as text; `undefined` when it is not UTF-8. */
const textOf = (bytes: Uint8Array, offset: number, end: number): string | undefined => {
  try {
    return decoder.decode(bytes.subarray(offset + headerLength, end))
  } catch {
    return undefined
  }
}

/** The records from `offset` on, checked (see {@link decode}). */
const recordsFrom = (
  bytes: Uint8Array,
  view: DataView,
  offset: number
): Omit<Decoded, "skipped"> | { readonly corrupt: string } => {
  const records: Array<{ readonly kind: Kind; readonly text: string }> = []
  while (offset < bytes.length) {
    const record = recordAt(bytes, view, offset)
    if (record === undefined) {
      const next = nextRecord(bytes, view, offset)
      if (next === undefined) break
      return { corrupt: `the record at byte ${offset} is damaged, and a whole record follows it at byte ${next}` }
    }
    const text = textOf(bytes, offset, record.end)
    if (text === undefined) return { corrupt: `the record at byte ${offset} is not UTF-8` }
    records.push({ kind: record.kind, text })
    offset = record.end
  }
  return { records, length: offset }
}

/**
 * Where the record `count` records after the one at `offset` starts, passing over them by their lengths alone;
 * `undefined` when one of them runs past the end.
 */
const passOver = (bytes: Uint8Array, view: DataView, offset: number, count: number): number | undefined => {
  for (let passed = 0; passed < count; passed++) {
    if (bytes.length - offset < headerLength) return undefined
    offset += headerLength + view.getUint32(offset, true)
    if (offset > bytes.length) return undefined
  }
  return offset
}

/**
 * Reads the frames of a log file; fails (with a message saying where) on a damaged record that a whole one
 * follows. The `skip` records after the first (a log's head) are passed over by their lengths, neither checked
 * nor read, and left out of `records`: a reader that has them reads what follows. When they do not fit in the
 * file, or are followed by a record that is not whole (a torn tail, damage, or a length that was damaged and
 * led elsewhere), the log is read whole instead (`skipped` is 0), and a torn tail or damage is found as then.
 */
export const decode = (bytes: Uint8Array, skip = 0): Decoded | { readonly corrupt: string } => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const head = skip > 0 ? recordAt(bytes, view, 0) : undefined
  const after = head === undefined ? undefined : passOver(bytes, view, head.end, skip)
  if (head === undefined || after === undefined || (after < bytes.length && !recordAt(bytes, view, after))) {
    const whole = recordsFrom(bytes, view, 0)
    return "corrupt" in whole ? whole : { ...whole, skipped: 0 }
  }
  const text = textOf(bytes, 0, head.end)
  if (text === undefined) return { corrupt: "the record at byte 0 is not UTF-8" }
  const rest = recordsFrom(bytes, view, after)
  return "corrupt" in rest
    ? rest
    : { records: [{ kind: head.kind, text }, ...rest.records], skipped: skip, length: rest.length }
}
