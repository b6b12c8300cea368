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

  it.effect("a renewal written in time extends the window", () =>
    Effect.gen(function*() {
      const { looks, window } = windowOver(10_000, () => false)
      yield* TestClock.setTime(3_000)
      window.wrote(13_000, 3_000)
      yield* TestClock.setTime(11_999)
      expect(yield* window.held).toBe(true)
      expect(looks.count).toBe(0)
      yield* TestClock.setTime(12_000)
      expect(yield* window.held).toBe(true)
      expect(looks.count).toBe(1)
    }))

  it.effect("a renewal written late never opens the window again, even once the files said the lease is held", () =>
    Effect.gen(function*() {
      let taken = false
      const { looks, window } = windowOver(10_000, () => taken)
      // Landed after the window closed (at 9 s): a taker may have read the lapsed file before it landed.
      yield* TestClock.setTime(9_500)
      window.wrote(19_500, 9_500)
      expect(yield* window.held).toBe(true)
      expect(looks.count).toBe(1)
      // That taker takes the lease now, long before the late expiry: the next look tells.
      taken = true
      yield* TestClock.setTime(10_000)
      expect(yield* window.held).toBe(false)
      expect(looks.count).toBe(2)
      // Later renewals, however early before the expiries they write, are late too.
      taken = false
      window.wrote(25_000, 15_000)
      yield* TestClock.setTime(16_000)
      expect(yield* window.held).toBe(true)
      expect(looks.count).toBe(3)
    }))
})
