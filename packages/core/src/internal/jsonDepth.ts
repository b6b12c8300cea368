/**
 * The nesting of JSON that came from a client. `JSON.parse` reads any depth,
 * but `JSON.stringify` (and every recursive walk) overflows the stack a few
 * thousand levels down: a value read from the network is checked here, in a
 * schema, before anything writes it back.
 *
 * @internal
 */
import * as Schema from "effect/Schema"

/** The deepest a client's JSON value may nest: far past any real one, far short of the stack's limit. */
export const maxDepth = 256

/**
 * Whether `value`'s arrays and objects nest at most {@link maxDepth} deep;
 * walked without recursion, each object once: a value built in memory may
 * share its objects (a tree from JSON never does), whose paths could be
 * exponentially many.
 */
export const isShallow = (value: unknown): boolean => {
  const seen = new Set<object>()
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!
    if (typeof item !== "object" || item === null || seen.has(item)) continue
    if (depth === maxDepth) return false
    seen.add(item)
    for (const child of Object.values(item)) stack.push([child, depth + 1])
  }
  return true
}

/** The check of a schema whose values come from a client: `what` nests at most {@link maxDepth} deep. */
export const shallow = (what: string) =>
  Schema.makeFilter(isShallow, { message: `${what} nests more than ${maxDepth} deep` })
