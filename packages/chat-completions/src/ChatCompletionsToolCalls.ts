/**
 * Tool calls streamed in pieces, assembled: which call a piece continues,
 * when a call can be announced, and its arguments.
 *
 * A piece names its call by `index`; the `id` and `name` come on the first
 * piece and the arguments in pieces after it, parallel calls interleaved. What
 * servers do besides, and how it is read:
 *
 * - a piece without `index` (Google's compatibility endpoint, whole calls):
 *   the call with its `id`, else a new call when it has an id no call has or,
 *   without an id, a name while the last call has one, else the last call;
 * - an index that starts at 1, or jumps: indices only key a map;
 * - a later piece with another non-empty `id` at a known index: a new call
 *   when it names its function (servers that number every call 0), else the
 *   same call (Poolside gives the pieces after a call's first another id);
 * - `id: ""` or `name: ""` on later pieces: empty is absent;
 * - a first piece without a name: the call is announced once its name comes,
 *   with the arguments that came before it as one delta;
 * - arguments sent as a JSON object rather than text: its JSON text;
 * - a call without an id: an id is made up for it (`call_<key>_<n>`);
 * - `extra_content` (Gemini's thought signature) on any piece: kept with the
 *   call when it is an object, and skipped when it is not.
 *
 * @since 0.2.0
 */
import { AiError, type TurnDelta } from "@agentloop/core"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import type * as ChatCompletionsChunk from "./ChatCompletionsChunk.ts"
import * as ChatCompletionsError from "./ChatCompletionsError.ts"

/**
 * A call being assembled.
 *
 * @since 0.2.0
 * @category models
 */
export interface Call {
  /** The id the server gave it, if any. */
  id: string | undefined
  name: string | undefined
  /** The id the deltas and the item carry: the server's, or one made up; set once the call is announced. */
  callId: string | undefined
  readonly pieces: Array<string>
  /** The normalizer of the call's arguments, when its tool's schema was made strict with nullable keys. */
  normalize: ((text: string) => string) | undefined
  /** The call's `extra_content`, the last one a piece carried. */
  extra: { readonly [key: string]: unknown } | undefined
}

/**
 * A call as it ended: the id its deltas carried, its name and its arguments.
 *
 * @since 0.2.0
 * @category models
 */
export interface Done {
  readonly callId: string
  readonly name: string
  readonly arguments: string
  /** The call's `extra_content`, when a piece carried one. */
  readonly extra?: { readonly [key: string]: unknown }
}

/**
 * What {@link make} needs to know about the request.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /** Per tool name, the normalizer of its arguments: its argument deltas are held back until the call is done. */
  readonly normalizers?: ReadonlyMap<string, (text: string) => string> | undefined
  /** The key made-up ids are built from (the answer's id, when the stream has one by then). */
  readonly key: () => string
}

/**
 * The calls of one answer.
 *
 * @since 0.2.0
 * @category models
 */
export interface ToolCalls {
  /** Reads one piece of a call, pushing the deltas it makes. */
  readonly add: (piece: ChatCompletionsChunk.ToolCallDelta, out: Array<TurnDelta.TurnDelta>) => void
  /** The calls in the order they started. */
  readonly calls: ReadonlyArray<Call>
  /**
   * Ends every call: pushes what was held back of its arguments and its
   * `function_call_done`, and returns the calls. Fails with `MalformedEvent`
   * when a call never got a name.
   */
  readonly finish: (out: Array<TurnDelta.TurnDelta>) => Result.Result<ReadonlyArray<Done>, AiError.MalformedEvent>
}

const nonEmpty = (text: string | null | undefined): string | undefined =>
  text === undefined || text === null || text === "" ? undefined : text

const argumentsText = (value: string | { readonly [key: string]: unknown } | null | undefined): string =>
  value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value)

/**
 * The calls of one answer, read piece by piece.
 *
 * @example
 * ```ts
 * import { ChatCompletionsToolCalls } from "@agentloop/chat-completions"
 * import type { TurnDelta } from "@agentloop/core"
 * import { Result } from "effect"
 *
 * // A call streamed in pieces: its id and name first, its arguments split anywhere.
 * const calls = ChatCompletionsToolCalls.make({ key: () => "turn-1" })
 * const out: Array<TurnDelta.TurnDelta> = []
 * calls.add({ index: 0, id: "call_1", function: { name: "add", arguments: "{\"a\":2," } }, out)
 * calls.add({ index: 0, function: { arguments: "\"b\":3}" } }, out)
 * const done = calls.finish(out)
 * if (Result.isSuccess(done)) console.log(done.success.map((call) => `${call.name}(${call.arguments})`)) // [ 'add({"a":2,"b":3})' ]
 * console.log(out.map((delta) => delta.type).join(" "))
 * // function_call_start function_call_arguments_delta function_call_arguments_delta function_call_done
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (options: Options): ToolCalls => {
  const calls: Array<Call> = []
  // Indices and ids come from the wire: they key maps.
  const byIndex = new Map<number, Call>()
  const byId = new Map<string, Call>()
  let made = 0

  const open = (id: string | undefined): Call => {
    const call: Call = { id, name: undefined, callId: undefined, pieces: [], normalize: undefined, extra: undefined }
    calls.push(call)
    if (id !== undefined) byId.set(id, call)
    return call
  }

  const locate = (index: number | undefined, id: string | undefined, named: boolean): Call => {
    if (index !== undefined) {
      const known = byIndex.get(index)
      if (known !== undefined && (id === undefined || known.id === undefined || known.id === id || !named)) {
        if (known.id === undefined && id !== undefined) {
          known.id = id
          byId.set(id, known)
        }
        return known
      }
      const call = open(id)
      byIndex.set(index, call)
      return call
    }
    if (id !== undefined) return byId.get(id) ?? open(id)
    const last = calls[calls.length - 1]
    return last === undefined || (named && last.name !== undefined) ? open(undefined) : last
  }

  return {
    calls,
    add: (piece, out) => {
      const name = nonEmpty(piece.function?.name)
      const call = locate(piece.index ?? undefined, nonEmpty(piece.id), name !== undefined)
      const args = argumentsText(piece.function?.arguments)
      if (args !== "") call.pieces.push(args)
      const extra = piece.extra_content
      if (Predicate.isReadonlyObject(extra) && !Array.isArray(extra)) call.extra = extra
      if (call.callId === undefined) {
        if (name === undefined) return
        // Announced once its name is known, with the arguments that came before as one delta.
        call.name = name
        call.callId = call.id ?? `call_${options.key()}_${made++}`
        call.normalize = options.normalizers?.get(name)
        out.push({ type: "function_call_start", call_id: call.callId, name })
        const before = call.pieces.join("")
        if (before !== "" && call.normalize === undefined) {
          out.push({ type: "function_call_arguments_delta", call_id: call.callId, delta: before })
        }
      } else if (args !== "" && call.normalize === undefined) {
        out.push({ type: "function_call_arguments_delta", call_id: call.callId, delta: args })
      }
    },
    finish: (out) => {
      const done: Array<Done> = []
      for (const [position, call] of calls.entries()) {
        if (call.callId === undefined || call.name === undefined) {
          return Result.fail(
            new AiError.MalformedEvent({
              provider: ChatCompletionsError.provider,
              event: "message",
              message: `tool_calls: call ${call.id ?? `#${position}`} never got a function name`
            })
          )
        }
        const text = call.pieces.join("")
        const args = call.normalize === undefined ? text : call.normalize(text)
        // A normalized call's arguments were held back: they go out whole, normalized.
        if (call.normalize !== undefined && args !== "") {
          out.push({ type: "function_call_arguments_delta", call_id: call.callId, delta: args })
        }
        out.push({ type: "function_call_done", call_id: call.callId, name: call.name, arguments: args })
        done.push({
          callId: call.callId,
          name: call.name,
          arguments: args,
          ...(call.extra === undefined ? {} : { extra: call.extra })
        })
      }
      return Result.succeed(done)
    }
  }
}
