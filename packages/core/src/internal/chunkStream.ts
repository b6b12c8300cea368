/**
 * A stream of values known when it is made: an ordinary stream (one chunk,
 * as `Stream.fromIterable` of an array), whose values `Loop` emits as they are
 * instead of opening the stream. A run's turn starts, completions and
 * decisions are such streams: opening a channel for each is a dozen Effect
 * operations a turn.
 *
 * @internal
 */
import * as Stream from "effect/Stream"

interface ChunkStream<A> extends Stream.Stream<A> {
  readonly values: ReadonlyArray<A>
}

// Its channel is built only if something other than `Loop` consumes it.
const ChunkStreamProto: object = Object.create(Object.getPrototypeOf(Stream.empty), {
  channel: {
    get(this: ChunkStream<unknown>) {
      return Stream.fromArray(this.values).channel
    }
  }
})

/** The stream of `values`. */
export const make = <A>(values: ReadonlyArray<A>): Stream.Stream<A> => {
  const self = Object.create(ChunkStreamProto)
  self.values = values
  return self
}

/** The values of a stream made by {@link make}; `undefined` for any other stream. */
export const valuesOf = <A, E, R>(stream: Stream.Stream<A, E, R>): ReadonlyArray<A> | undefined =>
  Object.getPrototypeOf(stream) === ChunkStreamProto ? (stream as unknown as ChunkStream<A>).values : undefined
