/**
 * Termination predicates: after every iteration a run asks its `Until` whether
 * to stop, and why.
 *
 * A predicate may answer with a plain `Verdict`, a `Promise` of one, or an
 * `Effect` (so it can use services, such as an `Embedder` or a `KeyValueStore`).
 * `evaluate` turns all three into an `Effect`; whatever keeps a predicate from
 * answering (a throw, a rejection, a failure, a defect, a value that is not a
 * verdict) becomes a `PredicateFailed`, never a silent stop.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Formatter from "effect/Formatter"
import * as Option from "effect/Option"
import { KeyValueStore } from "effect/persistence"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import type { AiError } from "./AiError.ts"
import * as Cost from "./Cost.ts"
import * as Embedder from "./Embedder.ts"
import * as InvalidOptions from "./InvalidOptions.ts"
import { PredicateFailed } from "./PredicateFailed.ts"

export {
  /** The error of a predicate that could not answer (defined in its own module, re-exported here). */
  PredicateFailed
} from "./PredicateFailed.ts"
import type { Snapshot } from "./Snapshot.ts"
import * as StepMeta from "./StepMeta.ts"
import * as Turn from "./Turn.ts"
import * as Verdict from "./Verdict.ts"

/**
 * A termination predicate, called with the run's snapshot after each iteration.
 * `E` and `R` are the error and services of the predicates that answer with an `Effect`.
 *
 * @since 0.1.0
 * @category models
 */
export type Until<E = never, R = never> = (
  snapshot: Snapshot
) => Verdict.Verdict | PromiseLike<Verdict.Verdict> | Effect.Effect<Verdict.Verdict, E, R>

type EffectOf<F> = Extract<
  F extends (...args: Array<never>) => infer Out ? Out : never,
  Effect.Effect<unknown, unknown, unknown>
>

/**
 * The errors of a predicate (or of any function that may answer with an `Effect`).
 *
 * @since 0.1.0
 * @category models
 */
export type ErrorOf<F> = Effect.Error<EffectOf<F>>

/**
 * The services a predicate (or any function that may answer with an `Effect`) needs.
 *
 * @since 0.1.0
 * @category models
 */
export type ServicesOf<F> = Effect.Services<EffectOf<F>>

const describe = (cause: unknown): string =>
  cause instanceof globalThis.Error ? cause.message : typeof cause === "string" ? cause : Formatter.format(cause)

const failed = (what: string, cause: unknown): PredicateFailed =>
  new PredicateFailed({ message: `${what}: ${describe(cause)}`, cause })

function settle<A, E, R>(
  what: string,
  evaluate: () => A | PromiseLike<A> | Effect.Effect<A, E, R>,
  isValid: (value: unknown) => value is A,
  expected: string
): Effect.Effect<A, E | PredicateFailed, R>
function settle(
  what: string,
  evaluate: () => unknown,
  isValid: (value: unknown) => boolean,
  expected: string
): Effect.Effect<unknown, unknown, unknown> {
  return Effect.suspend(() => {
    let out: unknown
    try {
      out = evaluate()
    } catch (cause) {
      return Effect.fail(failed(`${what} threw`, cause))
    }
    const settled: Effect.Effect<unknown, unknown, unknown> = Effect.isEffect(out)
      ? Effect.catchDefect(out, (defect) => Effect.fail(failed(`${what} died`, defect)))
      : Predicate.isPromiseLike(out)
      ? Effect.tryPromise({ try: () => Promise.resolve(out), catch: (cause) => failed(`${what} rejected`, cause) })
      : Effect.succeed(out)
    // An answer known at once (a predicate that answers a `Verdict`, not an `Effect`) is checked without a frame.
    return Effect.flatMapEager(settled, (value) =>
      isValid(value)
        ? Effect.succeed(value)
        : Effect.fail(new PredicateFailed({ message: `${what} returned ${Formatter.format(value)}, not ${expected}` })))
  })
}

const isVerdict = Schema.is(Verdict.Verdict)

/**
 * Runs a predicate as an `Effect`, keeping its own error `E`. A throw, a
 * rejection, a defect or an answer that is not a `Verdict` fail with `PredicateFailed`.
 * For composing predicates; a run uses {@link evaluate}.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toEffect = <E, R>(
  until: Until<E, R>,
  snapshot: Snapshot
): Effect.Effect<Verdict.Verdict, E | PredicateFailed, R> =>
  settle("until predicate", () => until(snapshot), isVerdict, "a verdict")

/**
 * Asks a predicate for its verdict, in a span `Until.evaluate` annotated with the
 * verdict (`until.stop`, `until.reason`, `until.feedback`). Every failure,
 * including the predicate's own error, arrives as a `PredicateFailed` whose
 * `cause` is the original: a run ends on it with `Termination.DuringExecution`.
 *
 * @since 0.1.0
 * @category evaluation
 */
export const evaluate = <E, R>(until: Until<E, R>, snapshot: Snapshot): Effect.Effect<
  Verdict.Verdict,
  PredicateFailed,
  R
> =>
  toEffect(until, snapshot).pipe(
    Effect.mapError((error) => error instanceof PredicateFailed ? error : failed("until predicate failed", error)),
    Effect.tap((verdict) => Verdict.annotateCurrentSpan(verdict)),
    // Evaluated once per turn: no `new Error()` for a stack trace that would name only this module.
    Effect.withSpan("Until.evaluate", undefined, { captureStackTrace: false })
  )

const proceed = Verdict.continue()

/** Why each predicate built with arguments that cannot work cannot, found when it was built. */
const refusals = new WeakMap<Until<unknown, unknown>, InvalidOptions.InvalidOptions>()

/**
 * A predicate that cannot work, because of `error`: what a constructor given
 * an argument that cannot work answers, and what a wrapper of such a predicate
 * (a `StopPolicy` layer) answers in its place. A run asks {@link invalid}
 * before anything runs and fails with the error; asked anyway, the predicate
 * dies with it, which a run reports as a `PredicateFailed`.
 *
 * @since 0.2.0
 * @category validation
 */
export const refused = (error: InvalidOptions.InvalidOptions): Until => {
  const until: Until = () => Effect.die(error)
  refusals.set(until, error)
  return until
}

/** `until`, or the refused predicate when `field` holding `value` breaks `rule`. */
const checked = <U extends Until<unknown, unknown>>(
  field: string,
  value: unknown,
  rule: InvalidOptions.Rule,
  until: () => U
): U | Until => {
  const error = InvalidOptions.check(field, value, rule)
  return error === undefined ? until() : refused(error)
}

/**
 * Why `until` cannot work, when it was built with an argument that cannot
 * (`Until.maxDuration(-1)`, a combinator of such a predicate), else
 * `undefined`. `AgentLoop` and `Step.execute` ask before anything runs.
 *
 * @since 0.2.0
 * @category validation
 */
export const invalid = (until: Until<unknown, unknown>): InvalidOptions.InvalidOptions | undefined =>
  refusals.get(until)

/**
 * Stops once `n` iterations have completed; `n` is a positive integer.
 *
 * @since 0.1.0
 * @category conditions
 */
export const maxSteps = (n: number): Until =>
  checked(
    "Until.maxSteps(n)",
    n,
    InvalidOptions.positiveInteger,
    (): Until => (snapshot) =>
      snapshot.stepCount >= n ? Verdict.stop(`step limit reached: ${snapshot.stepCount} of ${n}`) : proceed
  )

/**
 * Stops once the run has used `n` tokens in total (input and output); `n` is a positive integer.
 *
 * @since 0.1.0
 * @category conditions
 */
export const maxTokens = (n: number): Until =>
  checked(
    "Until.maxTokens(n)",
    n,
    InvalidOptions.positiveInteger,
    (): Until => (snapshot) =>
      snapshot.tokens.total >= n ? Verdict.stop(`token limit reached: ${snapshot.tokens.total} of ${n}`) : proceed
  )

/**
 * Stops once the run has cost `usd` dollars or more. A run whose cost is
 * unknown (a turn of a model without a price) fails the predicate: an unknown
 * cost is not a free one, and the limit could not be kept.
 *
 * @since 0.1.0
 * @category conditions
 */
export const maxCost = (usd: number): Until<PredicateFailed> =>
  checked("Until.maxCost(usd)", usd, InvalidOptions.positive, () => costAtMost(usd))

const costAtMost = (usd: number): Until<PredicateFailed> => (snapshot) => {
  if (snapshot.cost === null) {
    return Effect.fail(
      new PredicateFailed({
        message: `Until.maxCost(${Cost.format(usd)}) cannot be checked: the run's cost is unknown ` +
          "because a turn's model has no price; price it with Pricing.layer"
      })
    )
  }
  return Cost.reaches(snapshot.cost, usd)
    ? Verdict.stop(`cost limit reached: ${Cost.format(snapshot.cost)} of ${Cost.format(usd)}`)
    : proceed
}

/**
 * Stops once the run has been going for `limit` (a number is milliseconds), the limit itself included.
 *
 * @since 0.1.0
 * @category conditions
 */
export const maxDuration = (limit: Duration.Input): Until =>
  checked("Until.maxDuration(limit)", limit, InvalidOptions.duration, (): Until => {
    const ms = Duration.toMillis(Duration.fromInputUnsafe(limit))
    return (snapshot) =>
      snapshot.elapsed >= ms ? Verdict.stop(`time limit reached: ${snapshot.elapsed} ms of ${ms} ms`) : proceed
  })

const isTurn = Schema.is(Turn.Turn)

const lastToolCalls = (snapshot: Snapshot) => {
  const fromMeta = snapshot.lastStepMeta ? StepMeta.toolCalls(snapshot.lastStepMeta) : undefined
  if (fromMeta !== undefined) return fromMeta
  return isTurn(snapshot.lastOutput) ? Turn.functionCalls(snapshot.lastOutput) : undefined
}

/**
 * Stops after an iteration whose model turn called no tools. Never stops before
 * an iteration has completed (`stepCount < 1`). The tool calls are read from
 * `lastStepMeta` (`toolCalls`, else the function calls of `responseItems`), else
 * from `lastOutput` when it is a `Turn`; when none of these says, it does not stop.
 *
 * @since 0.1.0
 * @category conditions
 */
export const noToolCalls = (): Until => (snapshot) => {
  if (snapshot.stepCount < 1) return proceed
  const calls = lastToolCalls(snapshot)
  return calls !== undefined && calls.length === 0 ? Verdict.stop("the model answered without calling a tool") : proceed
}

/**
 * The answer of a verification: whether the output passes, and what to tell the model when it does not.
 *
 * @since 0.1.0
 * @category schemas
 */
export const VerifyResult = Schema.Struct({
  pass: Schema.Boolean,
  feedback: Schema.optionalKey(Schema.String)
})
export type VerifyResult = typeof VerifyResult.Type

/**
 * Checks the last iteration's output, `snapshot.lastOutput` (the snapshot is
 * there for context). In an `AgentLoop` run that output is the turn's text, a
 * string; in a step `loop` it is the output of the loop's last step.
 *
 * @since 0.1.0
 * @category models
 */
export type Verify<E = never, R = never> = (
  output: unknown,
  snapshot: Snapshot
) => VerifyResult | PromiseLike<VerifyResult> | Effect.Effect<VerifyResult, E, R>

const isVerifyResult = Schema.is(VerifyResult)

/**
 * Stops when `verify` passes the last output (`snapshot.lastOutput`: in an
 * `AgentLoop` run, the turn's text). A failed verification's feedback goes on
 * in the verdict, for the next iteration; so does a passing one's.
 *
 * @example
 * ```ts
 * import { AgentLoop, Until } from "@agentloop/core"
 * import { MockLanguageModel } from "@agentloop/testing"
 * import { Effect, Layer } from "effect"
 *
 * // Stop once the output passes a check; otherwise the model is told why and tries again.
 * const checkAnswer = Until.verified((output) =>
 *   output === "42" ? { pass: true } : { pass: false, feedback: `"${String(output)}" is not the answer` }
 * )
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* AgentLoop.AgentLoop
 *   const result = yield* agent.run({ input: "The answer to everything?", until: checkAnswer })
 *   if (result._tag === "Stopped") console.log(result.output, result.termination.accounting.steps) // 42 2
 * })
 *
 * const model = MockLanguageModel.layer([MockLanguageModel.textTurn("forty-one"), MockLanguageModel.textTurn("42")])
 * Effect.runPromise(program.pipe(Effect.provide(AgentLoop.layer.pipe(Layer.provide(model)))))
 * ```
 *
 * @since 0.1.0
 * @category conditions
 */
export const verified = <E = never, R = never>(verify: Verify<E, R>): Until<E | PredicateFailed, R> =>
  checked(
    "Until.verified(verify)",
    verify,
    InvalidOptions.function_,
    (): Until<E | PredicateFailed, R> => (snapshot) => verifiedBy(verify, snapshot)
  )

const verifiedBy = <E, R>(verify: Verify<E, R>, snapshot: Snapshot) =>
  Effect.map(
    settle("verify function", () => verify(snapshot.lastOutput, snapshot), isVerifyResult, "a verify result"),
    (result) => result.pass ? Verdict.stop("verification passed", result.feedback) : Verdict.continue(result.feedback)
  )

/**
 * Stops when the last output's text contains `marker`, a non-empty string.
 *
 * @since 0.1.0
 * @category conditions
 */
export const outputContains = (marker: string): Until =>
  checked(
    "Until.outputContains(marker)",
    marker,
    InvalidOptions.nonEmptyString,
    (): Until => (snapshot) =>
      snapshot.lastText.includes(marker) ? Verdict.stop(`output contains ${JSON.stringify(marker)}`) : proceed
  )

/**
 * Any predicate, as is: names a hand-written predicate where built-ins are listed.
 *
 * @since 0.1.0
 * @category conditions
 */
export const custom = <E = never, R = never>(until: Until<E, R>): Until<E, R> =>
  checked("Until.custom(until)", until, InvalidOptions.function_, () => until)

/**
 * Embeds a text for `converged`.
 *
 * @since 0.1.0
 * @category models
 */
export type Embed<E = never, R = never> = (
  text: string
) => ReadonlyArray<number> | PromiseLike<ReadonlyArray<number>> | Effect.Effect<ReadonlyArray<number>, E, R>

/**
 * Options of {@link converged}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ConvergedOptions<E = never, R = never> {
  /**
   * How similar two consecutive outputs must be. At 1 (the default) or above,
   * their texts must be equal; below 1, the cosine similarity of their embeddings
   * must reach it.
   */
  readonly threshold?: number | undefined
  /** Embeds the texts; without it, a threshold below 1 uses the `Embedder` service. */
  readonly embed?: Embed<E, R> | undefined
  /**
   * Keep the previous output (text or vector) in the `KeyValueStore` service
   * rather than in memory, so it survives the process (serverless invocations).
   */
  readonly cache?: boolean | undefined
}

type ConvergedServices<O> =
  | (O extends { readonly embed: infer F } ? ServicesOf<F>
    : O extends { readonly threshold: infer T } ? [T] extends [1 | undefined] ? never : Embedder.Embedder
    : never)
  | (O extends { readonly cache: true } ? KeyValueStore.KeyValueStore : never)

type ConvergedError<O> =
  | PredicateFailed
  | (O extends { readonly embed: infer F } ? ErrorOf<F>
    : O extends { readonly threshold: infer T } ? [T] extends [1 | undefined] ? never : AiError
    : never)
  | (O extends { readonly cache: true } ? KeyValueStore.KeyValueStoreError | Schema.SchemaError : never)

/**
 * Every key `converged({ cache: true })` writes starts with this; one run's keys
 * start with `${convergedCachePrefix}${runId}/` (clear them with `clearPrefix`).
 *
 * @since 0.1.0
 * @category conditions
 */
export const convergedCachePrefix = "@agentloop/core/Until/converged/"

const Represented = Schema.Union([Schema.String, Schema.Array(Schema.Number)])
type Represented = typeof Represented.Type

const Slot = Schema.Struct({
  step: Schema.Number,
  previous: Schema.optionalKey(Represented),
  current: Represented
})
type Slot = typeof Slot.Type

interface Slots<E, R> {
  readonly get: (runId: string) => Effect.Effect<Slot | undefined, E, R>
  readonly set: (runId: string, slot: Slot) => Effect.Effect<void, E, R>
}

const memoryRuns = 1024

const memorySlots = (): Slots<never, never> => {
  const slots = new Map<string, Slot>()
  return {
    get: (runId) => Effect.sync(() => slots.get(runId)),
    set: (runId, slot) =>
      Effect.sync(() => {
        slots.delete(runId)
        slots.set(runId, slot)
        if (slots.size > memoryRuns) {
          const oldest = slots.keys().next()
          if (!oldest.done) slots.delete(oldest.value)
        }
      })
  }
}

const storeSlots = (
  mode: "text" | "vector"
): Slots<KeyValueStore.KeyValueStoreError | Schema.SchemaError, KeyValueStore.KeyValueStore> => {
  const key = (runId: string) => `${convergedCachePrefix}${runId}/${mode}`
  const store = KeyValueStore.KeyValueStore.useSync((kv) => KeyValueStore.toSchemaStore(kv, Slot))
  return {
    get: (runId) => Effect.flatMap(store, (slots) => Effect.map(slots.get(key(runId)), Option.getOrUndefined)),
    set: (runId, slot) => Effect.flatMap(store, (slots) => slots.set(key(runId), slot))
  }
}

const convergedBy = (options: {
  readonly mode: "text" | "vector"
  readonly cache: boolean
  readonly represent: (text: string) => Effect.Effect<Represented, unknown, unknown>
  readonly compare: (previous: Represented, current: Represented) => Effect.Effect<Verdict.Verdict, PredicateFailed>
}): Until<unknown, unknown> => {
  const slots: Slots<unknown, unknown> = options.cache ? storeSlots(options.mode) : memorySlots()
  return (snapshot) =>
    Effect.gen(function*() {
      // A turn without text (tool calls only) has no output to compare, so it never converges.
      if (isBlank(snapshot.lastText)) return proceed
      const step = snapshot.stepCount
      const slot = yield* slots.get(snapshot.runId)
      if (slot !== undefined && slot.step === step) {
        // Seen this step already: a re-evaluation, or a sibling predicate sharing the cache.
        return slot.previous === undefined ? proceed : yield* options.compare(slot.previous, slot.current)
      }
      const current = yield* options.represent(snapshot.lastText)
      const previous = slot !== undefined && slot.step === step - 1 ? slot.current : undefined
      yield* slots.set(snapshot.runId, previous === undefined ? { step, current } : { step, previous, current })
      return previous === undefined ? proceed : yield* options.compare(previous, current)
    })
}

const isBlank = (text: string): boolean => text.trim() === ""

const isVector = Schema.is(Schema.Array(Schema.Number))

/**
 * Stops when the last output is the same as the previous iteration's: equal
 * text at `threshold` 1 (the default), or embeddings with a cosine similarity of
 * at least `threshold` below 1. Embeddings come from `embed`, else from the
 * `Embedder` service. The previous output is kept per `snapshot.runId` (so one
 * predicate serves concurrent runs): in memory for the last 1,024 runs, or with
 * `cache: true` in the `KeyValueStore` service under {@link convergedCachePrefix}.
 * The first iteration of a run, one after a gap in `stepCount`, and one
 * without text (a turn of tool calls only), never stop: two turns that only
 * call tools have not converged on an answer.
 *
 * @since 0.1.0
 * @category conditions
 */
export function converged(): Until<PredicateFailed>
export function converged<const O extends ConvergedOptions<unknown, unknown>>(
  options: O
): Until<ConvergedError<O>, ConvergedServices<O>>
export function converged(options: ConvergedOptions<unknown, unknown> = {}): Until<unknown, unknown> {
  const error = InvalidOptions.first(
    InvalidOptions.check("Until.converged threshold", options.threshold, thresholdRule),
    InvalidOptions.check("Until.converged embed", options.embed, InvalidOptions.function_)
  )
  if (error !== undefined) return refused(error)
  const threshold = options.threshold ?? 1
  const cache = options.cache === true
  if (threshold >= 1) {
    return convergedBy({
      mode: "text",
      cache,
      represent: Effect.succeed,
      compare: (previous, current) =>
        Effect.succeed(previous === current ? Verdict.stop("output unchanged since the previous step") : proceed)
    })
  }
  const embed = options.embed
  return convergedBy({
    mode: "vector",
    cache,
    represent: embed === undefined
      ? (text) => Embedder.Embedder.use((embedder) => embedder.embed(text))
      : (text) => settle("embed function", () => embed(text), isVector, "a vector"),
    compare: (previous, current) => {
      if (typeof previous === "string" || typeof current === "string" || previous.length !== current.length) {
        return Effect.fail(
          new PredicateFailed({
            message: "converged: the previous and the current embeddings are not comparable vectors"
          })
        )
      }
      const similarity = Embedder.cosineSimilarity(previous, current)
      return Effect.succeed(
        similarity >= threshold
          ? Verdict.stop(
            `output converged: similarity ${similarity.toFixed(3)} to the previous step, threshold ${threshold}`
          )
          : proceed
      )
    }
  })
}

/** A similarity threshold: a cosine similarity (below 1), or 1 and above for equal texts. */
const thresholdRule: InvalidOptions.Rule = {
  expected: "a finite number above -1",
  test: (value) => typeof value === "number" && Number.isFinite(value) && value > -1
}

type NonEmpty<A> = readonly [A, ...Array<A>]

/** `combined` of `predicates`, or the refused predicate when there are none or one of them is refused. */
const combining = (
  name: string,
  predicates: ReadonlyArray<Until<unknown, unknown>>,
  combined: () => Until<unknown, unknown>
): Until<unknown, unknown> => {
  if (predicates.length === 0) {
    return refused(
      InvalidOptions.make({ field: `Until.${name}(...predicates)`, value: [], expected: "at least one predicate" })
    )
  }
  for (const [index, predicate] of predicates.entries()) {
    if (typeof predicate !== "function") {
      return refused(
        InvalidOptions.make({
          field: `Until.${name} predicate ${index}`,
          value: predicate,
          expected: "a predicate (a function)"
        })
      )
    }
    const error = invalid(predicate)
    if (error !== undefined) return refused(error)
  }
  return combined()
}

const joinFeedback = (feedback: ReadonlyArray<string>): string | undefined =>
  feedback.length === 0 ? undefined : feedback.join("\n")

/**
 * Stops when any predicate stops, with the reason of the first (in argument
 * order) that stops. Every predicate is asked every time, so the feedback of
 * a non-stopping one (a failed `verified`) is kept wherever it stands, joined
 * by newlines, and stateful ones such as `converged` see each iteration.
 *
 * @example
 * ```ts
 * import { Snapshot, TokenUsage, Until } from "@agentloop/core"
 * import { Effect } from "effect"
 *
 * // Stop after 10 turns, or once a run has used 50,000 tokens, whichever comes first.
 * const until = Until.any(Until.maxSteps(10), Until.maxTokens(50_000))
 *
 * const program = Effect.gen(function*() {
 *   const early = yield* Until.evaluate(until, Snapshot.make({ runId: "run-1", stepCount: 2, tokens: TokenUsage.make(1000, 200) }))
 *   console.log(early.stop) // false
 *   const late = yield* Until.evaluate(until, Snapshot.make({ runId: "run-1", stepCount: 10 }))
 *   console.log(late.stop, late.reason) // true step limit reached: 10 of 10
 * })
 *
 * Effect.runPromise(program)
 * ```
 *
 * @since 0.1.0
 * @category combinators
 */
export function any<const P extends NonEmpty<Until<unknown, unknown>>>(
  ...predicates: P
): Until<ErrorOf<P[number]> | PredicateFailed, ServicesOf<P[number]>>
export function any(...predicates: ReadonlyArray<Until<unknown, unknown>>): Until<unknown, unknown> {
  return combining("any", predicates, () => anyOf(predicates))
}

const anyOf = (predicates: ReadonlyArray<Until<unknown, unknown>>): Until<unknown, unknown> => (snapshot) =>
  Effect.gen(function*() {
    const feedback: Array<string> = []
    let stopping: Verdict.Verdict | undefined
    for (const predicate of predicates) {
      const verdict = yield* toEffect(predicate, snapshot)
      if (verdict.feedback !== undefined) feedback.push(verdict.feedback)
      if (verdict.stop && stopping === undefined) stopping = verdict
    }
    return stopping === undefined
      ? Verdict.continue(joinFeedback(feedback))
      : Verdict.stop(stopping.reason ?? "a predicate stopped", joinFeedback(feedback))
  })

/**
 * Stops when every predicate stops; the reasons are joined with `'; '`. Every
 * predicate is asked every time (so stateful ones such as `converged` see each
 * iteration); feedback is kept, joined by newlines.
 *
 * @since 0.1.0
 * @category combinators
 */
export function all<const P extends NonEmpty<Until<unknown, unknown>>>(
  ...predicates: P
): Until<ErrorOf<P[number]> | PredicateFailed, ServicesOf<P[number]>>
export function all(...predicates: ReadonlyArray<Until<unknown, unknown>>): Until<unknown, unknown> {
  return combining("all", predicates, () => allOf(predicates))
}

const allOf = (predicates: ReadonlyArray<Until<unknown, unknown>>): Until<unknown, unknown> => (snapshot) =>
  Effect.gen(function*() {
    const feedback: Array<string> = []
    const reasons: Array<string> = []
    let stop = true
    for (const predicate of predicates) {
      const verdict = yield* toEffect(predicate, snapshot)
      if (verdict.feedback !== undefined) feedback.push(verdict.feedback)
      if (verdict.reason !== undefined) reasons.push(verdict.reason)
      stop = stop && verdict.stop
    }
    if (!stop) return Verdict.continue(joinFeedback(feedback))
    return Verdict.stop(reasons.length === 0 ? "every predicate stopped" : reasons.join("; "), joinFeedback(feedback))
  })
