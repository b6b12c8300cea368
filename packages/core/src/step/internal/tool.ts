/**
 * The `tool` step: one tool, run on the step's input.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Approval from "../../Approval.ts"
import type { Halt } from "../../Halt.ts"
import { detached } from "../../internal/detached.ts"
import type * as Item from "../../Item.ts"
import * as Termination from "../../Termination.ts"
import * as Tool from "../../Tool.ts"
import * as Toolkit from "../../Toolkit.ts"
import type { StepTool } from "../StepAst.ts"
import { InvalidToolInput, StepFailed, StepTimeout, ToolDenied } from "../StepError.ts"
import { Runner, TypeId, variance } from "./runner.ts"

/** The fields of a `tool` step. */
export interface ToolOptions<Name extends string, Input, Output, Failure, P, R, A> {
  readonly id: string
  readonly tool: Tool.Tool<Name, Input, Output, Failure, P, R>
  /** Preset arguments: the step's input is merged over them, and the whole decoded with the tool's input schema. */
  readonly args?: A | undefined
}

/** The errors of every `tool` step, besides its tool's own. */
export type ToolStepError = InvalidToolInput | ToolDenied | StepTimeout | StepFailed

/** The input of a `tool` step whose tool takes `Input` and whose preset arguments are `A`: the rest of `Input`. */
export type ToolInput<Input, A> = Omit<Input, keyof A> & Partial<Input>

const run = <Output, Failure, P, R>(
  tool: Tool.Tool<string, unknown, Output, Failure, P, R>,
  input: unknown
): Effect.Effect<Output, Failure | Halt | StepFailed, R> =>
  Effect.suspend(() => {
    const running = tool.execute(input)
    if (!Stream.isStream(running)) return running
    return running.pipe(
      Stream.filter((event): event is Tool.Done<Output> => event._tag === "Done"),
      Stream.runHead,
      Effect.flatMap(Option.match({
        onNone: () =>
          Effect.fail(
            new StepFailed({ stepId: tool.name, message: `tool ${tool.name}: its stream ended without a Done event` })
          ),
        onSome: (event) => Effect.succeed(event.value)
      }))
    )
  })

/**
 * A step that runs `tool` on its input merged over the preset `args`, decoded
 * with the tool's input schema (`InvalidToolInput` when it does not decode),
 * asking the `Approval` service first when the tool needs approval
 * (`ToolDenied`), within the tool's own `timeout` (`StepTimeout`). The output
 * is the tool's; the tool's own failures (and `Halt`) fail the step as they
 * are. In a checkpointed execution the tool runs with a `Tool.IdempotencyKey`,
 * and a tool that is not idempotent records its start first: a step cut off
 * after that is not run again, and fails with `StepFailed` saying its
 * outcome is unknown. `ctx.lastStepMeta` gets the call and its output as items, the output's
 * as the tool's `decorateResultItem` makes it (`StepFailed` when it cannot).
 */
export const make = <
  Name extends string,
  Input extends object,
  Output,
  Failure = never,
  P = never,
  R = never,
  const A extends Partial<Input> = {}
>(
  options: ToolOptions<Name, Input, Output, Failure, P, R, A>
): StepTool<ToolInput<Input, A>, Output, Failure | Halt | ToolStepError, R, unknown> => {
  const { id, tool, args } = options
  const decodeInput = Schema.decodeUnknownEffect(tool.input)
  const encodeInput = Schema.encodeUnknownEffect(Schema.toCodecJson(tool.input))
  const encodeOutput = Schema.encodeUnknownEffect(Schema.toCodecJson(tool.output))
  return {
    [TypeId]: variance,
    kind: "tool",
    id,
    tool,
    ...(args === undefined ? {} : { args }),
    [Runner]: (input, scope) =>
      Effect.gen(function*() {
        const merged = { ...args, ...input }
        const decoded = yield* Effect.mapError(decodeInput(merged), (error) =>
          new InvalidToolInput({
            stepId: id,
            diagnostic: Termination.diagnose({ target: "tool_arguments", name: tool.name, error })
          }))
        const encoded = yield* Effect.mapError(encodeInput(decoded), (error) =>
          new InvalidToolInput({
            stepId: id,
            diagnostic: Termination.diagnose({ target: "tool_arguments", name: tool.name, error })
          }))
        const call: Item.FunctionCall = {
          type: "function_call",
          id: `fc_${id}`,
          status: "completed",
          call_id: id,
          name: tool.name,
          arguments: JSON.stringify(encoded) ?? "{}"
        }
        const { execution, ledger, path: key } = scope
        // A checkpointed step of a tool that is not idempotent, cut off after its tool started, is not run again.
        const recorded = ledger !== undefined && !tool.idempotent
        if (recorded && ledger.toolStepStarted(execution.id, key)) {
          return yield* new StepFailed({ stepId: id, message: `step ${id}: ${Toolkit.outcomeUnknown(call).reason}` })
        }
        if (tool.needsApproval(decoded)) {
          const approval = yield* Approval.Approval
          const decision = yield* approval.decide({ tool: tool.name, call, input: decoded })
          if (decision._tag === "Denied") {
            return yield* new ToolDenied({ stepId: id, tool: tool.name, reason: decision.reason })
          }
        }
        if (recorded) yield* Effect.orDie(ledger.toolStarted(execution.id, key, 0))
        const limit = tool.timeout
        const execute = run(tool, decoded)
        // At its time limit the step ends at once: a tool that cannot stop is left to finish on its own.
        const running = ledger === undefined
          ? execute
          : Effect.flatMap(
            ledger.idempotencyKey(execution.id, key, 0),
            (idempotencyKey) => Effect.provideService(execute, Tool.IdempotencyKey, idempotencyKey)
          )
        const finished = yield* detached(running, limit)
        if (Option.isNone(finished)) {
          return yield* new StepTimeout({ stepId: id, timeoutMs: Duration.toMillis(limit ?? Duration.infinity) })
        }
        const output = finished.value
        const json = yield* Effect.mapError(encodeOutput(output), (error) =>
          new StepFailed({
            stepId: id,
            message: `step ${id}: tool ${tool.name} returned an output its schema does not encode: ${error.message}`,
            cause: error
          }))
        const baseItem: Item.FunctionCallOutput = {
          type: "function_call_output",
          id: `fco_${id}`,
          status: "completed",
          call_id: id,
          output: JSON.stringify(json) ?? "null"
        }
        const result = Tool.checkedResultItem(tool, {
          baseItem,
          callItem: call,
          args: decoded,
          result: output,
          output: baseItem.output,
          error: false
        })
        if (Result.isFailure(result)) {
          return yield* new StepFailed({ stepId: id, message: `step ${id}: ${result.failure}` })
        }
        scope.report({ toolCalls: [call], responseItems: [call, result.success] })
        return output
      })
  }
}
