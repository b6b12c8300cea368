/**
 * Named channels: how the steps of a running program, and the application
 * around it, pass values to each other.
 *
 * A channel is an unbounded `Queue`: `send` never waits, `recv` waits for the
 * next value (as long as its `timeout` allows), `tryRecv` takes one if there is
 * one. Each value goes to exactly one receiver. A channel made with a schema
 * checks every value sent on it, so a program never receives one that does not
 * satisfy it.
 *
 * Inside a step, use the context's `send`/`recv`/`tryRecv`; outside (an
 * application pushing a person's message into a running program), these
 * functions.
 *
 * @example
 * ```ts
 * import { Effect, Schema } from "effect"
 * import { Channel } from "@agentloop/core"
 *
 * const program = Effect.gen(function*() {
 *   const inbox = yield* Channel.make("inbox", Schema.String)
 *   yield* Channel.send(inbox, "hello")
 *   return yield* Channel.recv(inbox) // "hello"
 * })
 * Effect.runPromise(program).then(console.log)
 * ```
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import { InvalidChannelValue, RecvTimeout } from "./StepError.ts"

/**
 * Marks a value as a {@link Channel}.
 *
 * @since 0.1.0
 * @category type IDs
 */
export const TypeId = "~@agentloop/core/step/Channel" as const

/**
 * A named channel of `T` values.
 *
 * @since 0.1.0
 * @category models
 */
export interface Channel<in out T> {
  readonly [TypeId]: typeof TypeId
  readonly name: string
  /** Checks a value before it is sent; absent for a channel made without a schema. */
  readonly schema: Schema.Codec<T, unknown> | undefined
  /** The values sent and not yet received. */
  readonly queue: Queue.Queue<T>
}

/**
 * Makes a channel. With a `schema`, every value sent is checked against it
 * (its type side: refinements such as a minimum length included) and a value
 * that fails is refused with `InvalidChannelValue`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: {
  <T>(name: string): Effect.Effect<Channel<T>>
  <T>(name: string, schema: Schema.Codec<T, unknown>): Effect.Effect<Channel<T>>
} = <T>(name: string, schema?: Schema.Codec<T, unknown>): Effect.Effect<Channel<T>> =>
  Effect.map(Queue.unbounded<T>(), (queue) => ({ [TypeId]: TypeId, name, schema, queue }))

const check = <T>(channel: Channel<T>, value: T): Effect.Effect<void, InvalidChannelValue> => {
  if (channel.schema === undefined) return Effect.void
  const exit = Schema.decodeUnknownExit(Schema.toType(channel.schema))(value)
  if (Exit.isSuccess(exit)) return Effect.void
  const error = Cause.squash(exit.cause)
  return Effect.fail(
    new InvalidChannelValue({
      channel: channel.name,
      message: error instanceof Error ? error.message : String(error)
    })
  )
}

/**
 * Sends `value` on the channel; never waits. Fails with `InvalidChannelValue`,
 * sending nothing, when the channel's schema refuses the value.
 *
 * @since 0.1.0
 * @category messaging
 */
export const send = <T>(channel: Channel<T>, value: T): Effect.Effect<void, InvalidChannelValue> =>
  Effect.andThen(check(channel, value), Queue.offer(channel.queue, value))

/**
 * How long {@link recv} waits.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecvOptions {
  /**
   * Wait at most this long (a number is milliseconds), then fail with
   * `RecvTimeout`; forever when absent. Zero or less waits for nothing: only a
   * value already sent is received.
   */
  readonly timeout?: Duration.Input | undefined
}

/**
 * Receives the next value of the channel, waiting for one to be sent. With a
 * `timeout`, fails with `RecvTimeout` when none arrives in time.
 *
 * @since 0.1.0
 * @category messaging
 */
export const recv = <T>(channel: Channel<T>, options?: RecvOptions): Effect.Effect<T, RecvTimeout> => {
  const take = Queue.take(channel.queue)
  if (options?.timeout === undefined) return take
  const timeout = Duration.max(Duration.fromInputUnsafe(options.timeout), Duration.zero)
  return Effect.timeoutOrElse(take, {
    duration: timeout,
    orElse: () => Effect.fail(new RecvTimeout({ channel: channel.name, timeoutMs: Duration.toMillis(timeout) }))
  })
}

/**
 * Takes the next value of the channel if one is waiting, else returns `null` at once.
 *
 * @since 0.1.0
 * @category messaging
 */
export const tryRecv = <T>(channel: Channel<T>): T | null => {
  const taken = Queue.takeUnsafe(channel.queue)
  return taken !== undefined && Exit.isSuccess(taken) ? taken.value : null
}
