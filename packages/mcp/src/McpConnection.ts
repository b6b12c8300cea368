/**
 * Where an MCP server is and how to reach it: a command to start and talk to
 * over its standard input and output, or a streamable HTTP endpoint, and the
 * scoped connection to either, on `effect/ai`'s `McpClient`.
 *
 * The connection speaks MCP `2025-11-25`, the latest revision the official
 * SDKs serve (`effect/ai`'s client does not negotiate down to older ones).
 *
 * @since 0.2.0
 */
import { McpClient, McpClientError, McpProtocol } from "effect/ai"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { FetchHttpClient, Headers, HttpClient, HttpClientError, HttpClientRequest } from "effect/http"
import type { HttpClientResponse } from "effect/http"
import * as Option from "effect/Option"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"

/**
 * A server started as a child process, spoken to over its standard input and
 * output. Build it with {@link stdio}.
 *
 * @since 0.2.0
 * @category models
 */
export interface Stdio {
  readonly _tag: "Stdio"
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string | Redacted.Redacted<string>>>
  readonly inheritEnv: boolean
  readonly cwd: string | undefined
  readonly name: string | undefined
}

/**
 * A server reached over MCP's streamable HTTP transport. Build it with {@link http}.
 *
 * @since 0.2.0
 * @category models
 */
export interface Http {
  readonly _tag: "Http"
  readonly url: URL
  readonly headers: Readonly<Record<string, string | Redacted.Redacted<string>>>
  readonly name: string | undefined
}

/**
 * An MCP server to connect to.
 *
 * @since 0.2.0
 * @category models
 */
export type Server = Stdio | Http

/**
 * What connecting to a server needs: a `ChildProcessSpawner` to start a stdio
 * server (`NodeServices.layer` from `@effect/platform-node` has one), an
 * `HttpClient` to reach an HTTP one (`FetchHttpClient.layer` from `effect/http`).
 *
 * @since 0.2.0
 * @category models
 */
export type Requirements<S extends Server> = S extends Stdio ? ChildProcessSpawner.ChildProcessSpawner
  : HttpClient.HttpClient

/**
 * Describes a server to start with `command` and `args`.
 *
 * The process gets only a few safe variables of this process's environment
 * (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`; on Windows their
 * equivalents), plus `env`: an API key in this process's environment does not
 * reach a third-party server unless passed on purpose. `inheritEnv: true` passes
 * the whole environment (with `env` on top). A value may be `Redacted`.
 *
 * `name` names the server in traces; by default, the name the server reports.
 *
 * @example
 * ```ts
 * import { Mcp } from "@agentloop/mcp"
 *
 * export const files = Mcp.stdio({
 *   command: "npx",
 *   args: ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
 *   env: { LOG_LEVEL: "warn" }
 * })
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const stdio = (options: {
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  readonly env?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
  readonly inheritEnv?: boolean | undefined
  readonly cwd?: string | undefined
  readonly name?: string | undefined
}): Stdio => ({
  _tag: "Stdio",
  command: options.command,
  args: options.args ?? [],
  env: options.env ?? {},
  inheritEnv: options.inheritEnv ?? false,
  cwd: options.cwd,
  name: options.name
})

/**
 * Describes a server at `url`, speaking MCP's streamable HTTP transport.
 * `headers` go with every request (a `Redacted` value for a token keeps it out
 * of logs and spans), and only to `url`'s origin: a redirect there (307, 308)
 * is followed, one elsewhere refused. `name` names the server in traces; by
 * default, the name the server reports.
 *
 * @example
 * ```ts
 * import { Mcp } from "@agentloop/mcp"
 * import { Redacted } from "effect"
 *
 * export const tickets = Mcp.http({
 *   url: "https://mcp.example.com/mcp",
 *   headers: { authorization: Redacted.make("Bearer my-token") }
 * })
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const http = (options: {
  readonly url: string | URL
  readonly headers?: Readonly<Record<string, string | Redacted.Redacted<string>>> | undefined
  readonly name?: string | undefined
}): Http => ({
  _tag: "Http",
  url: new URL(options.url),
  headers: options.headers ?? {},
  name: options.name
})

/**
 * An open connection: the `effect/ai` client, the server's name, and the span
 * attributes of a call to it (per OpenTelemetry's MCP conventions).
 *
 * @since 0.2.0
 * @category models
 */
export interface Connection {
  readonly client: McpClient.McpClient
  readonly name: string
  readonly attributes: Readonly<Record<string, string | number>>
}

/**
 * How long a stdio server may take to exit once its input is closed, and then
 * once it is sent `SIGTERM`, before it is killed: real time, whatever clock
 * the program runs on (`effect/ai` alone waits five seconds on the Effect
 * clock, which a test clock never lets pass).
 *
 * @since 0.2.0
 * @category constants
 */
export const closeGrace: Duration.Duration = Duration.seconds(2)

/**
 * Connects to the server for as long as the scope is open. Closing the scope
 * closes a stdio server's input, and ends its process (its whole process
 * group) within {@link closeGrace} twice at most; an HTTP session is ended
 * with a `DELETE`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const connect = <S extends Server>(
  server: S,
  options: { readonly timeout?: Duration.Input | undefined } = {}
): Effect.Effect<Connection, McpClientError.McpClientError, Scope.Scope | Requirements<S>> =>
  // The branch taken needs exactly what `Requirements<S>` names; TypeScript cannot narrow `S` by `_tag`.
  Effect.gen(function*() {
    const transport = server._tag === "Stdio" ? yield* stdioTransport(server) : yield* httpTransport(server)
    const client = yield* McpClient.make({ ...clientInfo, timeout: options.timeout }).pipe(
      Effect.provideService(McpClient.Transport, transport)
    )
    const name = server.name ?? bounded(client.serverInfo?.name) ?? defaultName(server)
    return { client, name, attributes: attributes(server, name) }
  }) as Effect.Effect<Connection, McpClientError.McpClientError, Scope.Scope | Requirements<S>>

const clientInfo = { name: "agentloop", version: "0.2.0" }

const protocol = McpProtocol.v2025_11_25

const stdioTransport = Effect.fnUntraced(function*(server: Stdio) {
  const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
  let handle: ChildProcessSpawner.ChildProcessHandle | undefined
  const recording = ChildProcessSpawner.make((command) =>
    Effect.tap(spawner.spawn(command), (spawned) => Effect.sync(() => (handle = spawned)))
  )
  let stopping: Fiber.Fiber<void> | undefined
  // Finalizers run last-added first: this one, added before the transport, runs after the transport's.
  yield* Effect.addFinalizer(() => stopping === undefined ? Effect.void : Fiber.interrupt(stopping))
  const transport = yield* McpClient.stdio({ command: command(server), protocol }).pipe(
    Effect.provideService(ChildProcessSpawner.ChildProcessSpawner, recording)
  )
  // Runs before the transport's own finalizer, which closes the input and then waits on the Effect clock.
  yield* Effect.addFinalizer(() =>
    handle === undefined ? Effect.void : Effect.forkDetach(stopAfterGrace(handle)).pipe(
      Effect.tap((fiber) => Effect.sync(() => (stopping = fiber))),
      Effect.asVoid
    )
  )
  return transport
})

const liveClock = Clock.Clock.defaultValue()

const stopAfterGrace = (handle: ChildProcessSpawner.ChildProcessHandle): Effect.Effect<void> =>
  Effect.sleep(closeGrace).pipe(
    Effect.andThen(handle.kill({ killSignal: "SIGTERM", forceKillAfter: closeGrace })),
    Effect.ignore,
    Effect.provideService(Clock.Clock, liveClock)
  )

const command = (server: Stdio): ChildProcess.Command =>
  ChildProcess.make(server.command, server.args, {
    ...(server.cwd === undefined ? {} : { cwd: server.cwd }),
    env: { ...(server.inheritEnv ? globalThis.process.env : safeEnvironment()), ...server.env },
    extendEnv: false,
    // Its own process group, so that ending it also ends what it started (`npx` starts a second process).
    detached: true,
    killSignal: "SIGTERM",
    forceKillAfter: closeGrace
  })

// As the official SDK does (a list inspired by sudo's): what a server needs to run, and no secret.
const inheritedVariables = globalThis.process.platform === "win32"
  ? [
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES"
  ]
  : ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"]

const safeEnvironment = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const key of inheritedVariables) {
    const value = globalThis.process.env[key]
    // A value starting with "()" is a shell function exported by bash: never pass one on.
    if (value !== undefined && !value.startsWith("()")) env[key] = value
  }
  return env
}

const httpTransport = (server: Http) =>
  Effect.gen(function*() {
    if (server.url.username !== "" || server.url.password !== "") {
      // `fetch` refuses such a URL with an error that prints it, password and all: say why without it.
      return yield* new McpClientError.McpClientError({
        reason: new McpClientError.ConfigurationError({
          description: `the URL of MCP server ${server.url.host} carries credentials (user:password@host); ` +
            "pass them as a header (authorization) instead"
        })
      })
    }
    const client = yield* HttpClient.HttpClient
    const init = Option.getOrUndefined(yield* Effect.serviceOption(FetchHttpClient.RequestInit))
    const secretNames = Object.entries(server.headers).flatMap(([key, value]) =>
      Redacted.isRedacted(value) ? [key.toLowerCase()] : []
    )
    return yield* McpClient.http({
      url: server.url,
      protocol,
      headers: Object.fromEntries(
        Object.entries(server.headers).map((
          [key, value]
        ) => [key, Redacted.isRedacted(value) ? Redacted.value(value) : value])
      )
    }).pipe(Effect.provideService(
      HttpClient.HttpClient,
      HttpClient.transform(client, (response, request) =>
        sameOriginRedirects(client, response, request, server.url.origin).pipe(
          // `fetch` follows redirects itself, the headers given included: here they are seen and checked.
          Effect.provideService(FetchHttpClient.RequestInit, { ...init, redirect: "manual" }),
          Effect.updateService(Headers.CurrentRedactedNames, (names) => [...names, ...secretNames])
        ))
    ))
  })

const maxRedirects = 5

/**
 * Follows a 307 or 308 (which keep the method and body) to the server's own
 * origin; refuses any other redirect, which would carry the request's
 * headers, credentials among them, elsewhere.
 */
const sameOriginRedirects = <E, R>(
  client: HttpClient.HttpClient,
  response: Effect.Effect<HttpClientResponse.HttpClientResponse, E, R>,
  request: HttpClientRequest.HttpClientRequest,
  origin: string,
  redirects = 0
): Effect.Effect<HttpClientResponse.HttpClientResponse, E | HttpClientError.HttpClientError, R> =>
  Effect.flatMap(response, (response) => {
    if (response.status < 300 || response.status >= 400) return Effect.succeed(response)
    const location = response.headers.location
    const target = location === undefined || !URL.canParse(location, request.url)
      ? undefined
      : new URL(location, request.url)
    const refused = target === undefined
      ? "to nowhere readable"
      : target.origin !== origin
      ? `to another origin, ${target.protocol}//${target.host}; the headers are sent only to the configured URL`
      : response.status !== 307 && response.status !== 308
      ? "with a status that would drop the request body; only 307 and 308 are followed"
      : redirects >= maxRedirects
      ? `more than ${maxRedirects} times`
      : undefined
    if (refused !== undefined) {
      return Effect.fail(
        new HttpClientError.HttpClientError({
          reason: new HttpClientError.TransportError({
            request,
            description: `the MCP server redirected (${response.status}) ${refused}`
          })
        })
      )
    }
    const next = HttpClientRequest.setUrl(request, target!.href)
    return sameOriginRedirects(
      client,
      client.execute(next),
      next,
      origin,
      redirects + 1
    )
  })

const defaultName = (server: Server): string => server._tag === "Stdio" ? server.command : server.url.host

// The name a server reports goes into every span of its calls: keep a hostile one short.
const bounded = (name: string | undefined): string | undefined =>
  name === undefined || name === "" ? undefined : name.slice(0, 128)

const attributes = (server: Server, name: string): Readonly<Record<string, string | number>> => ({
  "mcp.method.name": "tools/call",
  "mcp.protocol.version": protocol.protocolVersion,
  "agentloop.mcp.server.name": name,
  ...(server._tag === "Stdio"
    ? { "network.transport": "pipe" }
    : {
      "network.transport": "tcp",
      "server.address": server.url.hostname,
      ...(server.url.port === "" ? {} : { "server.port": Number(server.url.port) })
    })
})
