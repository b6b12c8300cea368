/**
 * `Mcp.http` against the official SDK's own streamable HTTP server, behind a bearer token.
 */
import { Toolkit } from "@agentloop/core"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Redacted } from "effect"
import type { Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import type { HttpClient } from "effect/http"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Mcp, McpToolkit } from "../src/index.ts"
import { call } from "./fixtures.ts"
import * as SdkHttpServer from "./sdkHttpServer.ts"

const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope | HttpClient.HttpClient>) =>
  effect.pipe(Effect.scoped, Effect.provide(FetchHttpClient.layer))

const one = (toolkit: Toolkit.Toolkit, name: string, args: unknown) =>
  Effect.map(Toolkit.executeAllSafe(toolkit, [call(name, args)]), ([result]) => result!)

const authorized = (url: string) =>
  Mcp.http({ url, headers: { authorization: Redacted.make(`Bearer ${SdkHttpServer.token}`) } })

describe("Mcp.http", () => {
  it.live("lists and calls the tools of the SDK's streamable HTTP server", () =>
    run(Effect.gen(function*() {
      const server = yield* SdkHttpServer.start
      const toolkit = yield* Mcp.toolkit(authorized(server.url), { prefix: "calc_" })
      // "admin.reset" is a name model providers refuse: left out.
      expect(toolkit.tools.map((tool) => tool.name)).toEqual(["calc_multiply", "calc_tag", "calc_fail"])
      expect(toolkit.byName.get("calc_multiply")?.parameters).toEqual({
        type: "object",
        properties: { a: { type: "integer" }, b: { type: "integer" } },
        required: ["a", "b"],
        additionalProperties: false
      })
      const product = yield* one(toolkit, "calc_multiply", { a: 6, b: 7 })
      expect(product.output.output).toBe(JSON.stringify("42"))
      const failed = yield* one(toolkit, "calc_fail", {})
      expect(failed.outcome).toBe("failure")
      expect(JSON.parse(failed.output.output).error).toContain("this tool always fails")
      expect(server.calls).toEqual(["multiply", "fail"])
    })))

  it.live("checks every keyword of the server's schema before calling", () =>
    run(Effect.gen(function*() {
      const server = yield* SdkHttpServer.start
      const toolkit = yield* Mcp.toolkit(authorized(server.url))
      const bad = [
        ["multiply", { a: 1.5, b: 2 }],
        ["multiply", { a: 1, b: 2, c: 3 }],
        ["tag", { tags: ["draft"] }],
        ["tag", { tags: ["reviewed"], kind: "link" }]
      ] as const
      for (const [name, args] of bad) {
        const result = yield* one(toolkit, name, args)
        expect(result.outcome, JSON.stringify(args)).toBe("invalid_arguments")
      }
      expect((yield* one(toolkit, "tag", { tags: ["draft", "reviewed"], kind: "link", url: "x" })).outcome).toBe(
        "success"
      )
      // None of the bad calls reached the server.
      expect(server.calls).toEqual(["tag"])
    })))

  it.live("a wrong token fails the toolkit with the server's 401", () =>
    Effect.gen(function*() {
      const server = yield* SdkHttpServer.start
      const error = yield* Mcp.toolkit(Mcp.http({ url: server.url, headers: { authorization: "Bearer wrong" } })).pipe(
        Effect.flip
      )
      expect(error.reason._tag).toBe("HttpError")
      expect(error.reason._tag === "HttpError" && error.reason.status).toBe(401)
      expect(error.message).not.toContain(SdkHttpServer.token)
    }).pipe(run))

  it.live("a server that is gone fails the toolkit with a typed error", () =>
    Effect.gen(function*() {
      const error = yield* Mcp.toolkit(authorized("http://127.0.0.1:9/mcp")).pipe(Effect.flip)
      expect(error._tag).toBe("McpClientError")
      expect(error.reason._tag).toBe("TransportError")
    }).pipe(run))

  it.live("a URL with credentials in it is refused before any request, and the error does not print them", () =>
    Effect.gen(function*() {
      const error = yield* Mcp.toolkit(Mcp.http({ url: "http://user:pass-1234@127.0.0.1:9/mcp" })).pipe(Effect.flip)
      expect(error.reason._tag).toBe("ConfigurationError")
      expect(Cause.pretty(Cause.fail(error))).not.toContain("pass-1234")
      expect(error.message).toContain("127.0.0.1:9")
    }).pipe(run))

  it.live("bounds what a server's tool costs every model request: a description cut, a huge schema left out", () =>
    run(Effect.gen(function*() {
      const server = yield* SdkHttpServer.startWith([
        { name: "verbose", description: `Read this. ${"x".repeat(200_000)}`, inputSchema: { type: "object" } },
        {
          name: "bloated",
          description: "Has a huge schema",
          inputSchema: {
            type: "object",
            properties: Object.fromEntries(
              Array.from({ length: 5000 }, (_, i) => [`field${i}`, { type: "string", description: "y".repeat(40) }])
            )
          }
        }
      ])
      const toolkit = yield* Mcp.toolkit(authorized(server.url))
      expect(toolkit.tools.map((tool) => tool.name)).toEqual(["multiply", "tag", "fail", "verbose"])
      const verbose = toolkit.byName.get("verbose")!
      expect(verbose.description.startsWith("Read this. xxx")).toBe(true)
      expect(verbose.description.length).toBeLessThanOrEqual(McpToolkit.maxDescriptionLength)
    })))

  it.live("bounds what a server's tools cost every model request together: those past the budget are left out", () =>
    run(Effect.gen(function*() {
      // Each tool within the bounds of one; 300 of them are 2.4 MB in every request.
      const many = Array.from({ length: 300 }, (_, i) => ({
        name: `tool_${i}`,
        description: "z".repeat(McpToolkit.maxDescriptionLength - 100),
        inputSchema: { type: "object" }
      }))
      const server = yield* SdkHttpServer.startWith(many)
      const toolkit = yield* Mcp.toolkit(authorized(server.url))
      const names = toolkit.tools.map((tool) => tool.name)
      // The server's own tools come first, then as many of the others as fit, in the order listed.
      expect(names.slice(0, 4)).toEqual(["multiply", "tag", "fail", "tool_0"])
      expect(names.length).toBeLessThan(300)
      const length = toolkit.tools.reduce(
        (sum, tool) => sum + tool.name.length + tool.description.length + JSON.stringify(tool.parameters).length,
        0
      )
      expect(length).toBeLessThanOrEqual(McpToolkit.maxToolsLength)
      expect(length).toBeGreaterThan(McpToolkit.maxToolsLength - McpToolkit.maxDescriptionLength)
    })))

  it.live("follows a 307 to the server's own origin", () =>
    run(Effect.gen(function*() {
      const server = yield* SdkHttpServer.start
      const toolkit = yield* Mcp.toolkit(authorized(server.url.replace(/\/mcp$/, "/moved")))
      expect(toolkit.tools.map((tool) => tool.name)).toContain("multiply")
      expect((yield* one(toolkit, "multiply", { a: 2, b: 3 })).output.output).toBe(JSON.stringify("6"))
    })))

  it.live("refuses a redirect to another origin: the headers given, credentials among them, are not sent there", () =>
    run(Effect.gen(function*() {
      const seen: Array<Http.IncomingHttpHeaders> = []
      const elsewhere = yield* listen((request, response) => {
        seen.push(request.headers)
        response.writeHead(500).end()
      })
      // "localhost" is another origin than "127.0.0.1".
      const redirector = yield* listen((_, response) =>
        response.writeHead(307, { location: `http://localhost:${elsewhere.port}/mcp` }).end()
      )
      const error = yield* Mcp.toolkit(Mcp.http({
        url: `http://127.0.0.1:${redirector.port}/mcp`,
        headers: { authorization: Redacted.make("Bearer secret-1"), "x-tenant-key": Redacted.make("secret-2") }
      })).pipe(Effect.flip)
      expect(seen).toEqual([])
      expect(error.reason._tag).toBe("TransportError")
      expect(String(Cause.pretty(Cause.fail(error)))).toContain("another origin")
      expect(String(Cause.pretty(Cause.fail(error)))).not.toContain("secret-")
    })))
})

/** A plain HTTP server on a loopback port for the scope. */
const listen = (handler: Http.RequestListener) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<Http.Server>((resolve) => {
        const server = Http.createServer(handler)
        server.listen(0, "127.0.0.1", () => resolve(server))
      })
    ),
    (server) => Effect.sync(() => server.close())
  ).pipe(Effect.map((server) => ({ port: (server.address() as AddressInfo).port })))
