/**
 * The event handlers of a `ProviderStream.Decoder` whose wire tells its events
 * apart by a JSON `type` (the Responses API, Anthropic's Messages API): a
 * handler per type, each reading its event with its own schema, and one
 * dispatch that parses an event, reads its type and runs that type's handler.
 *
 * A decoder keeps its state in an object `S` (usually the decoder itself) and
 * its handlers in a map by type; events of types without a handler are skipped.
 *
 * @since 0.2.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as AiError from "../AiError.ts"
import type * as TurnDelta from "../TurnDelta.ts"
import * as ProviderStream from "./ProviderStream.ts"

/**
 * A handler of one type of event: reads the event's parsed `json` into `state`,
 * pushes the deltas it makes to `out`, and returns the error that ends the
 * turn, if any. `event` names the event in errors.
 *
 * @since 0.2.0
 * @category models
 */
export type Handler<S> = (
  state: S,
  event: string,
  json: unknown,
  out: Array<TurnDelta.TurnDelta>
) => AiError.AiError | undefined

/**
 * A decoder's handlers, by event type.
 *
 * @since 0.2.0
 * @category models
 */
export type Handlers<S> = ReadonlyMap<string, Handler<S>>

/**
 * The function `on(schema, f)` that makes the {@link Handler} of the events
 * `schema` decodes: `f` sees the decoded event, or the stream fails with the
 * decoding error (an `AiError.MalformedEvent` naming the event and the field).
 *
 * @since 0.2.0
 * @category models
 */
export type On<S> = <A>(
  schema: Schema.Decoder<A>,
  f: (state: S, e: A, out: Array<TurnDelta.TurnDelta>, event: string) => AiError.AiError | void
) => Handler<S>

/**
 * The `on` of a provider's handlers, for a decoder whose state is `S`.
 *
 * @example
 * ```ts
 * import { EventHandlers, TurnDelta } from "@agentloop/core"
 * import { Schema } from "effect"
 *
 * interface State { text: string }
 * const on = EventHandlers.on<State>("example")
 *
 * const handlers: EventHandlers.Handlers<State> = new Map([
 *   ["text.delta", on(Schema.Struct({ delta: Schema.String }), (state, e, out) => {
 *     state.text += e.delta
 *     out.push({ type: "text_delta", delta: e.delta })
 *   })]
 * ])
 *
 * const dispatch = EventHandlers.dispatch("example", handlers)
 * const state: State = { text: "" }
 * const out: Array<TurnDelta.TurnDelta> = []
 * dispatch(state, "message", "{\"type\":\"text.delta\",\"delta\":\"Hi\"}", out)
 * console.log(state.text, out.length) // Hi 1
 * console.log(dispatch(state, "message", "{\"type\":\"text.delta\",\"delta\":1}", out)?._tag) // MalformedEvent
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const on = <S>(provider: string): On<S> => (schema, f) => {
  const decode = ProviderStream.valueDecoder(provider, schema)
  return (state, event, json, out) => {
    const decoded = decode(event, json)
    return Result.isFailure(decoded) ? decoded.failure : f(state, decoded.success, out, event) ?? undefined
  }
}

/** What every event of a typed wire carries: its type. */
const Typed = Schema.Struct({ type: Schema.String })

/**
 * Handles one event with `handlers`: parses its `data` as JSON, reads its
 * `type` and runs that type's handler, which sees the type as the event's name.
 * An event whose data is not JSON or has no string `type` fails the turn with
 * `AiError.MalformedEvent`; an event of a type without a handler is skipped.
 *
 * With `byName`, an event whose SSE `event:` field names it (anything but
 * `"message"`) is handled by the handler of that name, and skipped without
 * parsing its data when there is none; only unnamed events are read for their `type`.
 *
 * @since 0.2.0
 * @category decoding
 */
export const dispatch = <S>(
  provider: string,
  handlers: Handlers<S>,
  options?: { readonly byName?: boolean | undefined }
): (state: S, name: string, data: string, out: Array<TurnDelta.TurnDelta>) => AiError.AiError | undefined => {
  const decodeTyped = ProviderStream.valueDecoder(provider, Typed)
  const byName = options?.byName === true
  return (state, name, data, out) => {
    if (byName && name !== "message") {
      const handle = handlers.get(name)
      if (handle === undefined) return undefined
      const json = ProviderStream.parseJson(provider, name, data)
      return Result.isFailure(json) ? json.failure : handle(state, name, json.success, out)
    }
    const json = ProviderStream.parseJson(provider, name, data)
    if (Result.isFailure(json)) return json.failure
    const typed = decodeTyped(name, json.success)
    if (Result.isFailure(typed)) return typed.failure
    const type = typed.success.type
    return handlers.get(type)?.(state, type, json.success, out)
  }
}
