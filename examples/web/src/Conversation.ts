/**
 * What the chat page sends with each message: the conversation before it,
 * which is the history of its last exchange that finished (the `history` of
 * that run's result), as JSON. The page keeps it with the message, so that
 * the request it sends again (after a reload) is the same, and so is the run
 * it names.
 */
import * as Item from "@agentloop/core/Item"
import * as Schema from "effect/Schema"

/** The most items of a conversation the server takes: past them, start a new chat. */
export const maxItems = 200

/** A conversation's items as JSON: what the page keeps of an exchange that finished. */
export const History = Schema.toCodecJson(Item.History)

/** The items of a conversation before a message, as the server takes them: at most `maxItems`. */
export const Context = History.check(Schema.isMaxLength(maxItems))
