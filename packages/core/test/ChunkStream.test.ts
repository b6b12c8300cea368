import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import * as ChunkStream from "../src/internal/chunkStream.ts"
import * as Loop from "../src/Loop.ts"

describe("ChunkStream", () => {
  it.effect("is an ordinary stream of its values, in one chunk", () =>
    Effect.gen(function*() {
      const chunks = yield* Stream.runCollect(Stream.chunks(ChunkStream.make([1, 2, 3])))
      expect(chunks).toStrictEqual([[1, 2, 3]])
      expect(yield* Stream.runCollect(ChunkStream.make([]))).toStrictEqual([])
      expect(ChunkStream.valuesOf(ChunkStream.make([1]))).toStrictEqual([1])
      expect(ChunkStream.valuesOf(Stream.make(1))).toBeUndefined()
    }))

  it.effect("a loop emits its values as the same stream made otherwise, with the decision after them", () =>
    Effect.gen(function*() {
      const body = (make: (values: ReadonlyArray<number>) => Stream.Stream<number>) => (n: number) =>
        n < 3
          ? Loop.decideAfter(make([n, n * 10]), () => Loop.nextAfter(make(n === 1 ? [] : [n + 100]), n + 1))
          : Loop.stopAfter(make([]))
      const known = yield* Stream.runCollect(Stream.chunks(Loop.loop(0, body(ChunkStream.make))))
      const opened = yield* Stream.runCollect(
        Stream.chunks(Loop.loop(0, body((values) => Stream.fromIterable(values))))
      )
      expect(known).toStrictEqual([[0, 0], [100], [1, 10], [2, 20], [102]])
      expect(known).toStrictEqual(opened)
      // Consumed as a stream of events by something other than the loop, it is the same stream too.
      const events = yield* Stream.runCollect(Loop.nextAfter(ChunkStream.make([1, 2]), "next"))
      expect(events).toStrictEqual([Loop.value(1), Loop.value(2), Loop.next("next")])
    }))
})
