/**
 * What it costs to bring a model's delta to a browser: a Responses API turn
 * of 20,000 text deltas, served on loopback as the upstream model, goes
 * through a server on loopback to an HTTP client that reads every SSE event
 * (`fetch`, lines, `JSON.parse` of each `data:`; the same client for every
 * case). The servers:
 *
 * - baseline: a bare Node pipe, the upstream's bytes written on as they come
 *   (the floor of any server in the middle);
 * - a hand-written parse-and-re-encode: the upstream's SSE parsed line by
 *   line, each delta re-encoded as an SSE event of agentloop's shape, one
 *   write per upstream read; and the same with one write per delta, to tell
 *   what writing each event on its own costs;
 * - agentloop: `Responses.layer` → `AgentLoop.stream` → `EventStream.toHttpResponse`
 *   on `effect/http`'s Node server, with its keepalives and typed end frame
 *   (issue 20's goal 1: at most 3x the hand-written re-encode); and, to tell
 *   the serving from the rest, the same run's `EventStream.encodeBytes`
 *   drained in process, with no server and no client.
 */
import { AgentLoop, EventStream } from "@agentloop/core"
import { Responses } from "@agentloop/responses"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { HttpRouter } from "effect/http"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { compare } from "./measure.ts"
import * as ResponsesBody from "./responsesBody.ts"
import { readEvents, serve } from "./sseLoopback.ts"

const deltas = 20_000
const upstream = await serve(ResponsesBody.make(deltas).body)
const upstreamUrl = `${upstream.url}/responses`

const listen = async (server: Http.Server): Promise<string> => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
}

const upstreamBody = async () => {
  const response = await fetch(upstreamUrl, { method: "POST", body: "{}" })
  if (response.body === null) throw new Error("the upstream sent no body")
  return response.body
}

const pipeServer = Http.createServer(async (_request, response) => {
  response.writeHead(200, EventStream.headers)
  for await (const bytes of await upstreamBody()) response.write(bytes)
  response.end()
})

/**
 * Re-encodes each delta of the upstream as agentloop's `Delta` event: parse,
 * build, stringify, frame; one write per upstream read, or per delta.
 */
const reencodeServer = (writes: "per read" | "per delta") =>
  Http.createServer(async (_request, response) => {
    response.writeHead(200, EventStream.headers)
    const decoder = new TextDecoder()
    let buffer = ""
    for await (const bytes of await upstreamBody()) {
      buffer += decoder.decode(bytes, { stream: true })
      let out = ""
      let newline = buffer.indexOf("\n")
      while (newline !== -1) {
        const line = buffer.slice(0, newline)
        buffer = buffer.slice(newline + 1)
        if (line.startsWith("data: ")) {
          const event = JSON.parse(line.slice(6))
          if (event.type === "response.output_text.delta") {
            const delta = { _tag: "Delta", step: 1, delta: { type: "text_delta", delta: event.delta } }
            const frame = `event: message\ndata: ${JSON.stringify(delta)}\n\n`
            if (writes === "per delta") response.write(frame)
            else out += frame
          }
        }
        newline = buffer.indexOf("\n")
      }
      if (out !== "") response.write(out)
    }
    response.end("event: end\ndata: {}\n\n")
  })
const reencodeServers = { perRead: reencodeServer("per read"), perDelta: reencodeServer("per delta") }

const agentServer = Http.createServer()
const run = Stream.unwrap(AgentLoop.AgentLoop.useSync((agent) => agent.stream({ input: "go" })))
const routes = HttpRouter.add("POST", "/", EventStream.toHttpResponse(run, EventStream.agent))
const agentLayer = AgentLoop.layer.pipe(
  Layer.provide(Responses.layer({ apiKey: Redacted.make("bench"), baseUrl: upstream.url }))
)
const agentloop = ManagedRuntime.make(
  HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(agentLayer),
    Layer.provide(NodeHttpServer.layer(() => agentServer, { port: 0, host: "127.0.0.1" }))
  )
)
await agentloop.runPromise(Effect.void)
const agentUrl = `http://127.0.0.1:${(agentServer.address() as AddressInfo).port}/`

/** The run's SSE bytes with no server: `EventStream.encodeBytes` drained, its frames counted. */
const inProcess = ManagedRuntime.make(agentLayer)
const encodedInProcess = () =>
  inProcess.runPromise(Effect.gen(function*() {
    const decoder = new TextDecoder()
    let frames = 0
    yield* Stream.runForEachArray(EventStream.encodeBytes(run, EventStream.agent), (chunks) =>
      Effect.sync(() => {
        for (const bytes of chunks) {
          const text = decoder.decode(bytes)
          for (let end = text.indexOf("\n\n"); end !== -1; end = text.indexOf("\n\n", end + 2)) frames++
        }
      }))
    if (frames < deltas) throw new Error(`encodeBytes gave ${frames} frames for ${deltas} deltas`)
  }))

const urls = {
  pipe: await listen(pipeServer),
  reencode: await listen(reencodeServers.perRead),
  reencodePerDelta: await listen(reencodeServers.perDelta),
  agentloop: agentUrl
}

const client = (url: string) => async () => {
  const events = await readEvents(url)
  if (events < deltas) throw new Error(`the client read ${events} events of ${deltas} deltas from ${url}`)
}

const names = {
  pipe: "bare Node pipe (bytes on as they come)",
  reencode: "hand-written parse and re-encode",
  reencodePerDelta: "the same, one write per delta",
  agentloop: "Responses → AgentLoop → EventStream SSE",
  encoded: "the same, encodeBytes drained (no HTTP out)"
}

try {
  await compare({
    title: `a delta to a browser: ${
      deltas.toLocaleString("en-US")
    } deltas from a loopback Responses upstream, through a server, to an HTTP client`,
    label: "a delta to a browser (SSE)",
    units: deltas,
    unit: "delta",
    rounds: 9,
    baseline: { name: names.pipe, run: client(urls.pipe) },
    cases: [
      { name: names.reencode, run: client(urls.reencode) },
      { name: names.reencodePerDelta, run: client(urls.reencodePerDelta) },
      { name: names.agentloop, run: client(urls.agentloop) },
      { name: names.encoded, run: encodedInProcess }
    ],
    ratios: [
      { of: names.agentloop, to: names.reencode, goal: { atMost: 3, source: "issue 20 goal 1; 14.3x quoted" } },
      { of: names.agentloop, to: names.pipe, note: "for reference; 23.7x quoted" },
      {
        of: names.agentloop,
        to: names.reencodePerDelta,
        note: "for reference: what is left once each event is a write"
      }
    ]
  })
} finally {
  await Promise.all([agentloop.dispose(), inProcess.dispose()])
  pipeServer.close()
  reencodeServers.perRead.close()
  reencodeServers.perDelta.close()
  upstream.close()
}
