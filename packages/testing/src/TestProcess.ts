/**
 * Child processes for crash tests: a Node script started with a JSON config
 * as its argument, which reports what it does as one JSON object per line of
 * its standard output; the test waits for those lines and kills it with
 * `SIGKILL` in the middle of its work.
 *
 * @since 0.1.0
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as ChildProcess from "node:child_process"
import * as Readline from "node:readline"

const Message = Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown))
export type Message = typeof Message.Type

/** A running child. */
export interface Child {
  /** Every line it printed so far, decoded. */
  readonly messages: ReadonlyArray<Message>
  /**
   * Waits for the first message (printed so far or later) that `predicate`
   * accepts. A child that exits without printing one fails the wait at once
   * (a defect carrying its exit code and standard error), rather than leaving
   * the test to time out.
   */
  readonly waitFor: (predicate: (message: Message) => boolean) => Effect.Effect<Message>
  /** Its exit code, once it has exited and all it printed was read (`null` when killed by a signal). */
  readonly exit: Effect.Effect<number | null>
  /** Kills it with `SIGKILL`, and waits until it is gone. */
  readonly kill: Effect.Effect<void>
  /** What it wrote to standard error, for failure messages. */
  readonly stderr: () => string
}

/**
 * Starts `script` (a path) with Node, `config` as its JSON argument,
 * `execArgv` as Node's own options and `env` added to this process's
 * environment; it is killed when the scope closes, if still running.
 */
export const spawn = (
  script: string,
  config: unknown,
  options: {
    readonly execArgv?: ReadonlyArray<string> | undefined
    readonly env?: Readonly<Record<string, string>> | undefined
  } = {}
): Effect.Effect<Child, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function*() {
      const exited = yield* Deferred.make<number | null>()
      const process = ChildProcess.spawn(globalThis.process.execPath, [
        "--no-warnings",
        ...(options.execArgv ?? []),
        script,
        JSON.stringify(config)
      ], {
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...globalThis.process.env, ...options.env }
      })
      const messages: Array<Message> = []
      const waiters: Array<
        { readonly predicate: (message: Message) => boolean; readonly found: Deferred.Deferred<Message> }
      > = []
      let stderr = ""
      /** Why no message will come any more, once the child has exited and its output was read. */
      let closed: string | undefined
      process.stderr.on("data", (chunk) => (stderr += String(chunk)))
      Readline.createInterface({ input: process.stdout }).on("line", (line) => {
        const decoded = Schema.decodeUnknownOption(Message)(line)
        if (decoded._tag === "None") return
        messages.push(decoded.value)
        for (const waiter of waiters) {
          if (waiter.predicate(decoded.value)) Deferred.doneUnsafe(waiter.found, Effect.succeed(decoded.value))
        }
      })
      // `close` comes once the child has exited and its output is read to the end: a wait still open then never ends.
      process.on("close", (code, signal) => {
        Deferred.doneUnsafe(exited, Effect.succeed(code))
        closed = `the child exited (${signal ?? `code ${code}`}) without printing the message awaited`
        for (const waiter of waiters) {
          Deferred.doneUnsafe(waiter.found, Effect.die(new Error(`${closed}; its stderr:\n${stderr}`)))
        }
      })
      const child: Child = {
        messages,
        waitFor: (predicate) =>
          Effect.suspend(() => {
            const seen = messages.find(predicate)
            if (seen !== undefined) return Effect.succeed(seen)
            if (closed !== undefined) return Effect.die(new Error(`${closed}; its stderr:\n${stderr}`))
            const found = Deferred.makeUnsafe<Message>()
            waiters.push({ predicate, found })
            return Deferred.await(found)
          }),
        exit: Deferred.await(exited),
        kill: Effect.suspend(() => {
          if (process.exitCode === null && process.signalCode === null) process.kill("SIGKILL")
          return Effect.asVoid(Deferred.await(exited))
        }),
        stderr: () => stderr
      }
      return child
    }),
    (child) => child.kill
  )

/** A message that has `key`. */
export const has = (key: string) => (message: Message): boolean => key in message

/**
 * In the child: its config, the JSON argument {@link spawn} passed it,
 * decoded with `schema`; throws when it does not decode.
 */
export const config = <S extends Schema.Codec<unknown, unknown, never, never>>(schema: S): S["Type"] =>
  Schema.decodeUnknownSync(Schema.fromJsonString(schema))(process.argv[2])

/** In the child: reports `message` to the test, as one JSON line of standard output. */
export const report = (message: Message): Effect.Effect<void> => Effect.sync(() => console.log(JSON.stringify(message)))
