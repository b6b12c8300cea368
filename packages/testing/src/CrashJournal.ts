/**
 * What an app's program does to the world outside its run, as a crash test
 * sees it: each run of a tool, and each side effect the app makes elsewhere.
 * `CrashTest` compares these between an uninterrupted run and runs killed and
 * resumed, so a tool that is not idempotent and ran twice is found without
 * the app keeping counts of its own.
 *
 * An app's tests wrap its toolkit with {@link track} (or a tool with
 * {@link trackTool}) and mark an effect made outside a tool with
 * {@link record}; outside a crash test nothing is recorded.
 *
 * @since 0.2.0
 */
import * as Tool from "@agentloop/core/Tool"
import * as Toolkit from "@agentloop/core/Toolkit"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

/**
 * One effect on the world: a run of tool `name` with arguments `key` (their
 * JSON), or an effect the app recorded under `name` and `key`. Running it
 * again is safe when `idempotent`.
 *
 * @since 0.2.0
 * @category models
 */
export const SideEffect = Schema.Struct({
  name: Schema.String,
  key: Schema.String,
  idempotent: Schema.Boolean
})

/**
 * @since 0.2.0
 * @category models
 */
export type SideEffect = typeof SideEffect.Type

/**
 * Where side effects are recorded: a crash test provides its own; by default
 * they are dropped.
 *
 * @since 0.2.0
 * @category services
 */
export const Journal: Context.Reference<(effect: SideEffect) => Effect.Effect<void>> = Context.Reference(
  "@agentloop/testing/CrashJournal/Journal",
  { defaultValue: () => (_effect: SideEffect) => Effect.void }
)

/**
 * Records a side effect the program makes outside a tool (an email sent, a
 * row written): `key` tells one effect of `name` from another (default
 * `""`), and `idempotent` says that making it again is safe (default
 * `false`). Run it where the effect is made.
 *
 * @example
 * ```ts
 * import { CrashJournal } from "@agentloop/testing"
 * import { Effect } from "effect"
 *
 * const notify = (user: string) =>
 *   Effect.andThen(CrashJournal.record("notify", { key: user }), Effect.log(`notified ${user}`))
 * ```
 *
 * @since 0.2.0
 * @category recording
 */
export const record = (
  name: string,
  options: { readonly key?: string | undefined; readonly idempotent?: boolean | undefined } = {}
): Effect.Effect<void> =>
  Effect.flatMap(
    Journal,
    (journal) => journal({ name, key: options.key ?? "", idempotent: options.idempotent ?? false })
  )

/** Records a run of `tool` with `input`, keyed by the JSON of its arguments. */
const recordRun = (tool: Tool.Any<unknown>, input: unknown): Effect.Effect<void> =>
  Schema.encodeUnknownEffect(Schema.toCodecJson(tool.input))(input).pipe(
    Effect.map((encoded) => JSON.stringify(encoded)),
    // The input was decoded by this schema: it encodes back, unless the schema is lossy.
    Effect.orElseSucceed(() => "arguments that do not encode back"),
    Effect.flatMap((key) => record(tool.name, { key, idempotent: tool.idempotent }))
  )

/**
 * `tool`, recording each of its runs (its name, its arguments and whether it
 * is `idempotent`) in the crash test's journal when it starts.
 *
 * @since 0.2.0
 * @category recording
 */
export const trackTool = <Name extends string, Input, Output, Failure, P, R>(
  tool: Tool.Tool<Name, Input, Output, Failure, P, R>
): Tool.Tool<Name, Input, Output, Failure, P, R> => ({
  ...tool,
  execute: (input) => {
    const running = tool.execute(input)
    return Stream.isStream(running)
      ? Stream.concat(Stream.drain(Stream.fromEffect(recordRun(tool, input))), running)
      : Effect.andThen(recordRun(tool, input), running)
  }
})

/**
 * `toolkit`, each tool recording its runs (see {@link trackTool}): the toolkit
 * a crash test gives the app's program.
 *
 * @example
 * ```ts
 * import { Tool, Toolkit } from "@agentloop/core"
 * import { CrashJournal } from "@agentloop/testing"
 * import { Effect, Schema } from "effect"
 *
 * const charge = Tool.make({
 *   name: "charge",
 *   description: "Charges a card",
 *   input: Schema.Struct({ cents: Schema.Int }),
 *   output: Schema.String,
 *   execute: ({ cents }) => Effect.succeed(`charged ${cents}`)
 * })
 *
 * const tools = CrashJournal.track(Toolkit.make(charge))
 * ```
 *
 * @since 0.2.0
 * @category recording
 */
export const track = <R>(toolkit: Toolkit.Toolkit<R>): Toolkit.Toolkit<R> =>
  Toolkit.make(...toolkit.tools.map(trackTool))
