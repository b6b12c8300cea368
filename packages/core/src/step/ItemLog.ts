/**
 * The conversation of an execution context: the items its `llm` steps send to
 * the model, in order.
 *
 * A step program appends to it (the input text, a prompt, each turn's items and
 * tool outputs, a verdict's feedback, an inbox message); only a `loop` with
 * `maxHistorySize` shortens it, from the front and never between a function
 * call and its output.
 *
 * @since 0.1.0
 */
import type * as Item from "../Item.ts"

/**
 * An append-only log of items. `items` is a snapshot: appending later does not change an array already read.
 *
 * @since 0.1.0
 * @category models
 */
export interface ItemLog {
  readonly items: ReadonlyArray<Item.Item>
  /** Appends items at the end, in order. */
  append(...items: ReadonlyArray<Item.Item>): void
}

/**
 * A log that starts with `items` (none by default).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (items: Iterable<Item.Item> = []): ItemLog => {
  let current: ReadonlyArray<Item.Item> = Array.from(items)
  return {
    get items() {
      return current
    },
    append: (...more) => {
      if (more.length > 0) current = [...current, ...more]
    }
  }
}

/**
 * The newest `max` items of `items`, less any function call output whose call
 * is not among them, so a model never sees an output without its call.
 * Returns `items` itself when it already fits.
 *
 * @example
 * ```ts
 * import { Item, ItemLog } from "@agentloop/core"
 *
 * const log = ItemLog.make([Item.userMessage("first")])
 * log.append(Item.userMessage("second"), Item.userMessage("third"))
 * console.log(log.items.length) // 3
 * console.log(ItemLog.newest(log.items, 2).length) // 2
 * ```
 *
 * @since 0.1.0
 * @category getters
 */
export const newest = (items: ReadonlyArray<Item.Item>, max: number): ReadonlyArray<Item.Item> => {
  if (items.length <= max) return items
  const start = items.length - Math.max(0, Math.floor(max))
  const dropped = new Set<string>()
  for (let i = 0; i < start; i++) {
    const item = items[i]
    if (item?.type === "function_call") dropped.add(item.call_id)
  }
  return items.slice(start).filter((item) => item.type !== "function_call_output" || !dropped.has(item.call_id))
}
