import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import * as LeaseWindow from "../src/internal/leaseWindow.ts"

/** A window over lease files that say `taken`, counting how often they are looked at. */
const windowOver = (expiresAt: number, taken: () => boolean) => {
  const looks = { count: 0 }
  const window = LeaseWindow.make({
    expiresAt,
    margin: 1_000,
    superseded: Effect.sync(() => (looks.count++, taken()))
  })
  return { window, looks }
}

describe("LeaseWindow", () => {
  it.effect("the files are looked at only once the lease may have lapsed, and then tell", () =>
    Effect.gen(function*() {
      let taken = false
      const { looks, window } = windowOver(10_000, () => taken)
      yield* TestClock.setTime(8_999)
      expect(yield* window.held).toBe(true)
      expect(looks.count).toBe(0)
      yield* TestClock.setTime(9_000)
      expect(yield* window.held).toBe(true)
      expect(looks.count).toBe(1)
      taken = true
      expect(yield* window.held).toBe(false)
    }))

  it.effect("a renewal written in time extends the window; one written late counts once the files confirm", () =>
    Effect.gen(function*() {
      const { looks, window } = windowOver(10_000, () => false)
      yield* TestClock.setTime(3_000)
      window.wrote(13_000, 3_000)
      yield* TestClock.setTime(11_999)
      expect(yield* window.held).toBe(true)
      expect(looks.count).toBe(0)
      // Landed after the window closed: someone may have taken the lease over before it did.
      window.wrote(25_000, 12_500)
      yield* TestClock.setTime(13_000)
      expect(yield* window.held).toBe(true)
      expect(looks.count).toBe(1)
      // Confirmed: no newer lease after it landed, so none before it lapses.
      yield* TestClock.setTime(23_999)
      expect(yield* window.held).toBe(true)
      expect(looks.count).toBe(1)
    }))
})
