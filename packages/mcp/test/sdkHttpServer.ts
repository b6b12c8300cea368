/**
 * A streamable HTTP MCP server written with the official TypeScript SDK, behind
 * a bearer token, on a loopback port: what `Mcp.http` is tested against. Its
 * tools use raw JSON Schemas, one with keywords beyond the common ones.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import type { Scope } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

/** The token the server accepts. */
export const token = "test-token-7f3a"

/** What the server saw: the tool calls it ran, by name. */
export interface SdkHttpServer {
  readonly url: string
  readonly calls: ReadonlyArray<string>
}

const tools = [
  {
    name: "multiply",
    description: "Multiplies two integers",
    inputSchema: {
      type: "object",
      properties: { a: { type: "integer" }, b: { type: "integer" } },
      required: ["a", "b"],
      additionalProperties: false
    }
  },
  {
    name: "tag",
    description: "Tags a document; at least one tag must be 'reviewed'",
    inputSchema: {
      type: "object",
      properties: {
        tags: { type: "array", items: { type: "string" }, contains: { const: "reviewed" } },
        kind: { type: "string" },
        url: { type: "string" }
      },
      required: ["tags"],
      if: { properties: { kind: { const: "link" } }, required: ["kind"] },
      then: { required: ["url"] }
    }
  },
  {
    name: "fail",
    description: "Always reports an error",
    inputSchema: { type: "object", properties: {} }
  },
  {
    // MCP allows dots; model providers do not: left out of the toolkit.
    name: "admin.reset",
    description: "Resets everything",
    inputSchema: { type: "object", properties: {} }
  }
]

const makeServer = (calls: Array<string>, extra: ReadonlyArray<object>): Server => {
  const server = new Server({ name: "sdk-http-test", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools, ...extra] }) as never)
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    calls.push(request.params.name)
    const args = request.params.arguments ?? {}
    switch (request.params.name) {
      case "multiply":
        return { content: [{ type: "text", text: String(Number(args.a) * Number(args.b)) }] }
      case "tag":
        return { content: [{ type: "text", text: `tagged ${JSON.stringify(args.tags)}` }] }
      default:
        return { isError: true, content: [{ type: "text", text: "this tool always fails" }] }
    }
  })
  return server
}

/** Starts the server, listing `extra` tools after its own, for as long as the scope is open; stateless, one SDK server per request. */
export const startWith = (extra: ReadonlyArray<object>): Effect.Effect<SdkHttpServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => {
      const calls: Array<string> = []
      const http = createServer((request, response) => {
        // An old address of the endpoint, moved on the same origin.
        if (request.url === "/moved") {
          response.writeHead(307, { location: "/mcp" }).end()
          return
        }
        if (request.headers.authorization !== `Bearer ${token}`) {
          response.writeHead(401, { "www-authenticate": "Bearer" }).end()
          return
        }
        const server = makeServer(calls, extra)
        const transport = new StreamableHTTPServerTransport({})
        response.on("close", () => {
          void transport.close()
          void server.close()
        })
        void server.connect(transport).then(() => transport.handleRequest(request, response))
      })
      return new Promise<{ readonly http: typeof http; readonly server: SdkHttpServer }>((resolve) =>
        http.listen(0, "127.0.0.1", () => {
          const { port } = http.address() as AddressInfo
          resolve({ http, server: { url: `http://127.0.0.1:${port}/mcp`, calls } })
        })
      )
    }),
    ({ http }) => Effect.promise(() => new Promise<void>((resolve) => http.close(() => resolve())))
  ).pipe(Effect.map(({ server }) => server))

/** The server with its own tools only. */
export const start: Effect.Effect<SdkHttpServer, never, Scope.Scope> = startWith([])
