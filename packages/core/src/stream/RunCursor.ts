/**
 * Where a client is in a recorded `AgentLoop` run, and the Server-Sent Events
 * id that says so: what `ResumableStream` writes as each event's `id:` and
 * reads back from a reconnecting client's `Last-Event-ID`.
 *
 * Every event a run's log records (`AgentHistory.replay` makes them again)
 * has a {@link Key} of its own, the same whether the run streams it live or
 * replays it: its turn (`step`), its place in the turn (`TurnStarted`,
 * `TurnCompleted`, a tool's `ToolResult`, the `Verdict`, the `Feedback`, the
 * run's `Finished`), and for a tool's result the call's position in the turn.
 * Events the log does not record (the model's deltas, a tool's progress, a
 * discarded attempt) have none.
 *
 * A {@link Cursor} is what a client has: every recorded event up to a place
 * in a turn, and, in the middle of a turn's tools, the results it has (calls
 * end in any order, and a run resumed elsewhere may replay them in another
 * one). Its id reads `<turn>.<place>`, with the calls' results as a
 * hexadecimal bit set after a third dot: `3.0` is turn 3's start, `3.2.5`
 * the results of its calls 0 and 2, `3.5` the run's end.
 *
 * An id names events, not positions in a log: it means the same after a log
 * was compacted (`compactAfter`) or cut down to its result, and on a run
 * executed again by another process.
 *
 * @since 0.3.0
 */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import type * as AgentEvent from "../agent/AgentEvent.ts"
import * as Turn from "../Turn.ts"

/**
 * A recorded event's place in its turn, in the order a turn streams them.
 *
 * @since 0.3.0
 * @category models
 */
export type Place = "started" | "completed" | "result" | "verdict" | "feedback" | "finished"

const places: ReadonlyArray<Place> = ["started", "completed", "result", "verdict", "feedback", "finished"]

/**
 * A recorded event's key: its turn, its place in it, and for a tool's result
 * the call's position among the turn's calls.
 *
 * @since 0.3.0
 * @category models
 */
export interface Key {
  readonly step: number
  readonly place: Place
  readonly call?: number | undefined
}

/**
 * What a client has of a run: every recorded event up to `place` of turn
 * `step`, and at the `result` place the results of the turn's `calls`
 * (positions, ascending).
 *
 * @since 0.3.0
 * @category schemas
 */
export const Cursor = Schema.Struct({
  step: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  place: Schema.Literals(places),
  calls: Schema.Array(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))
})

/**
 * @since 0.3.0
 * @category models
 */
export type Cursor = typeof Cursor.Type

/** The most call positions an id names: ids are at most 4,096 hexadecimal digits of bits. */
const maxBitDigits = 4096

const idPattern = new RegExp(`^[1-9]\\d{0,14}\\.(?:[013-5]|2\\.[1-9a-f][0-9a-f]{0,${maxBitDigits - 1}})$`)

const bits = (calls: ReadonlyArray<number>): string => {
  const last = calls.reduce((max, call) => Math.max(max, call), 0)
  const digits = Array.from({ length: Math.floor(last / 4) + 1 }, () => 0)
  for (const call of calls) digits[call >> 2]! |= 1 << (call & 3)
  return digits.reverse().map((digit) => digit.toString(16)).join("")
}

const callsOf = (hex: string): ReadonlyArray<number> => {
  const calls: Array<number> = []
  for (let i = 0; i < hex.length; i++) {
    const digit = Number.parseInt(hex[hex.length - 1 - i]!, 16)
    for (let bit = 0; bit < 4; bit++) if ((digit & (1 << bit)) !== 0) calls.push(i * 4 + bit)
  }
  return calls
}

/**
 * A cursor from its Server-Sent Events id and back. Decoding accepts only
 * what encoding writes (no leading zeros, a bit set only at the `result`
 * place), so an id this library never wrote fails to decode.
 *
 * @example
 * ```ts
 * import { RunCursor } from "@agentloop/core/stream"
 * import { Schema } from "effect"
 *
 * const read = Schema.decodeUnknownSync(RunCursor.FromEventId)
 * console.log(read("3.2.5")) // { step: 3, place: 'result', calls: [ 0, 2 ] }
 * console.log(Schema.encodeSync(RunCursor.FromEventId)({ step: 4, place: "started", calls: [] })) // 4.0
 * console.log(Schema.is(RunCursor.FromEventId)("04.0")) // false
 * ```
 *
 * @since 0.3.0
 * @category schemas
 */
export const FromEventId = Schema.String.check(Schema.isPattern(idPattern)).pipe(
  Schema.decodeTo(
    Cursor,
    SchemaTransformation.transform({
      decode: (id): Cursor => {
        const [step, place, set] = id.split(".")
        return { step: Number(step), place: places[Number(place)]!, calls: set === undefined ? [] : callsOf(set) }
      },
      encode: (cursor) => eventId(cursor)
    })
  )
)

/**
 * The Server-Sent Events id of `cursor` (what {@link FromEventId} encodes).
 * The results of a turn's first 16,384 calls fit in an id a server reads
 * back; a turn of more calls writes ids longer than that, which a client
 * cannot resume from.
 *
 * @since 0.3.0
 * @category encoding
 */
export const eventId = ({ calls, place, step }: Cursor): string =>
  `${step}.${places.indexOf(place)}${place === "result" ? `.${bits(calls)}` : ""}`

/** Negative, zero or positive as `a`'s place in the run comes before, at or after `b`'s. */
const order = (a: { readonly step: number; readonly place: Place }, b: Cursor): number =>
  a.step === b.step ? places.indexOf(a.place) - places.indexOf(b.place) : a.step - b.step

/**
 * Whether a client at `cursor` has the event of `key` (none has anything at
 * `undefined`, before the run's first event).
 *
 * @since 0.3.0
 * @category cursors
 */
export const covers = (cursor: Cursor | undefined, key: Key): boolean => {
  if (cursor === undefined) return false
  const at = order(key, cursor)
  return at < 0 || (at === 0 && (key.place !== "result" || cursor.calls.includes(key.call ?? -1)))
}

/**
 * The cursor of a client at `cursor` once it has the event of `key` too.
 *
 * @since 0.3.0
 * @category cursors
 */
export const advance = (cursor: Cursor | undefined, key: Key): Cursor => {
  if (cursor !== undefined && covers(cursor, key)) return cursor
  if (key.place !== "result") return { step: key.step, place: key.place, calls: [] }
  const before = cursor !== undefined && order(key, cursor) === 0 ? cursor.calls : []
  const call = key.call ?? 0
  return {
    step: key.step,
    place: "result",
    calls: [...before.filter((c) => c < call), call, ...before.filter((c) => c > call)]
  }
}

/**
 * Whether `cursor` names only events a run whose recorded events reach
 * `frontier` can have sent: those, and, unless the run finished (`open`:
 * running, or ended in a turn, cancelled or failed), what it sends before
 * recording it: the next turn's start, and the decision of its last turn
 * (recorded without waiting for the disk, so lost in a power cut). A
 * client's `Last-Event-ID` beyond that was not written by this run.
 *
 * @since 0.3.0
 * @category cursors
 */
export const isWithin = (cursor: Cursor, frontier: Cursor | undefined, open: boolean): boolean => {
  const last = frontier?.step ?? 0
  if (open && cursor.step === last + 1 && cursor.place === "started") return true
  if (frontier === undefined) return false
  const at = order(cursor, frontier)
  if (at < 0) return true
  if (at === 0) return cursor.place !== "result" || cursor.calls.every((call) => frontier.calls.includes(call))
  return open && cursor.step === last && (cursor.place === "verdict" || cursor.place === "feedback")
}

/**
 * Keys the recorded events of one run, handed every event in the order the
 * run streams (or replays) them: `undefined` for an event the log does not
 * record. It keeps the calls of the turn last completed, to place each
 * tool's result by its call.
 *
 * @example
 * ```ts
 * import { AgentLoop } from "@agentloop/core"
 * import { RunCursor } from "@agentloop/core/stream"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer, Stream } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   const events = yield* Stream.runCollect(agent.stream({ input: "Hi" }))
 *   const keyOf = RunCursor.keys()
 *   console.log(events.map((event) => keyOf(event)?.place ?? "-").join(" "))
 *   // started - - completed verdict finished
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.textTurn("Hello!")])
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))))
 * ```
 *
 * @since 0.3.0
 * @category keys
 */
export const keys = (): <O, A>(event: AgentEvent.AgentEvent<O, A>) => Key | undefined => {
  let step = 0
  let callIds: ReadonlyArray<string> = []
  let placed = new Set<number>()
  return (event) => {
    switch (event._tag) {
      case "TurnStarted":
        return { step: event.step, place: "started" }
      case "TurnCompleted":
        step = event.step
        callIds = Turn.functionCalls(event.turn).map((call) => call.call_id)
        placed = new Set()
        return { step: event.step, place: "completed" }
      case "ToolResult": {
        // A call the turn does not have (never, from AgentLoop) is placed after its calls, in order.
        let call = event.step === step
          ? callIds.findIndex((id, index) => id === event.call.call_id && !placed.has(index))
          : -1
        if (call < 0) call = callIds.length + [...placed].filter((index) => index >= callIds.length).length
        placed.add(call)
        return { step: event.step, place: "result", call }
      }
      case "Verdict":
        return { step: event.step, place: "verdict" }
      case "Feedback":
        return { step: event.step, place: "feedback" }
      case "Finished":
        return { step: event.result.termination.accounting.steps, place: "finished" }
      default:
        return undefined
    }
  }
}
