/**
 * Whether a local service (PostgreSQL, Redis…) is there, so tests and
 * benchmarks that need one can skip, saying so, rather than fail or hang.
 *
 * @since 0.1.0
 */
import { Socket } from "node:net"

/**
 * Whether something accepts TCP connections on `host:port` within `timeoutMs` (default one second).
 *
 * @example
 * ```ts
 * import { Reachable } from "@agentloop/testing"
 *
 * // Skip a test that needs PostgreSQL when none listens.
 * const pg = await Reachable.listening(5432, "127.0.0.1", 200)
 * console.log(typeof pg) // boolean
 * ```
 *
 * @since 0.1.0
 * @category predicates
 */
export const listening = (port: number, host = "127.0.0.1", timeoutMs = 1000): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = new Socket()
    const done = (reachable: boolean) => {
      socket.destroy()
      resolve(reachable)
    }
    socket.setTimeout(timeoutMs)
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
    socket.once("timeout", () => done(false))
    socket.connect(port, host)
  })
