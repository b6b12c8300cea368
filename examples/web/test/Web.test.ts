// @module-tag slow
/**
 * The chat page in a real headless Chromium (Debian's `chromium`, driven by
 * `playwright-core`; never a browser download). `.ci/run` installs Chromium;
 * elsewhere these tests skip, saying so, when it is missing.
 */
import { Checkpointer, EventStreamClient, Item, LiveRuns } from "@agentloop/core"
import type { AgentLoop, LanguageModel } from "@agentloop/core"
import { agent } from "@agentloop/core/stream/EventStream"
import * as Provider from "@agentloop/example-terminal/Provider"
import { question, script } from "@agentloop/example-terminal/script"
import { Responses } from "@agentloop/responses"
import { MockLanguageModel, ProviderServer } from "@agentloop/testing"
import { NodeHttpServer } from "@effect/platform-node"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Layer, Redacted, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { gzipSync } from "node:zlib"
import { chromium } from "playwright-core"
import type { Browser, Page } from "playwright-core"
import { bundle } from "../src/bundle.ts"
import * as Conversation from "../src/Conversation.ts"
import * as Durable from "../src/Durable.ts"
import * as Server from "../src/Server.ts"

const executablePath = "/usr/bin/chromium"
const hasChromium = existsSync(executablePath)
if (!hasChromium) {
  console.warn(`examples/web: SKIPPING the browser tests: no Chromium at ${executablePath} (apt-get install chromium)`)
}

/** The demo's scripted model, paced faster than the demo's: still many deltas, each a few milliseconds apart. */
const fastMock = MockLanguageModel.layer(script, { chunkSize: 6, delay: "4 millis" })

const screenshots = fileURLToPath(new URL("../test-output/", import.meta.url))

/**
 * Serves the chat routes on a random local port for the scope, its runs recorded in memory: the page's URL, and
 * `cut`, which closes every connection to the server (a network cut).
 */
const serve = (provider: string, model: Layer.Layer<LanguageModel.LanguageModel>) =>
  Effect.gen(function*() {
    const nodeServer = Http.createServer()
    yield* Layer.build(
      HttpRouter.serve(Server.routes({ provider, model }), { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provide(LiveRuns.layer),
        Layer.provide(Checkpointer.layerMemory),
        Layer.provide(NodeHttpServer.layer(() => nodeServer, { port: 0, host: "127.0.0.1" }))
      )
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
    const address = nodeServer.address()
    return {
      url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/`,
      cut: () => nodeServer.closeAllConnections()
    }
  })

/** One headless Chromium for the file's tests: launched by the first that needs it, closed after the last. */
let chromiumLaunched: Promise<Browser> | undefined
afterAll(() => chromiumLaunched?.then((browser) => browser.close()))

/** A fresh page in a browser context of its own (its own cookies, storage and cache), closed with the scope. */
const browserPage = Effect.gen(function*() {
  const browser = yield* Effect.promise(() =>
    chromiumLaunched ??= chromium.launch({
      executablePath,
      args: ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--disable-component-update"]
    })
  )
  const context = yield* Effect.acquireRelease(
    Effect.promise(() => browser.newContext({ viewport: { width: 900, height: 900 } })),
    (context) => Effect.promise(() => context.close())
  )
  return yield* Effect.promise(() => context.newPage())
})

const state = (page: Page) => page.locator("#status").getAttribute("data-state")

describe("the chat page's script", () => {
  it.live("reads a run's events with a bundle under 40 KB gzipped (esbuild, minified)", () =>
    Effect.gen(function*() {
      const script = yield* bundle
      const gzipped = gzipSync(script).length
      console.log(`examples/web: the page's script is ${script.length} bytes minified, ${gzipped} gzipped`)
      expect(gzipped).toBeLessThan(40 * 1024)
      // What keeps it small: no Effect runtime beyond what decoding needs, no HTTP server.
      expect(script).not.toContain("HttpServerResponse")
    }), 60_000)
})

/** Posts `body` to the chat server at `url`: the last event of its run; the failure it ended with, as the failure. */
const chat = (url: string, body: unknown) =>
  Effect.tryPromise({
    try: async () => {
      let last: AgentLoop.AgentEvent | undefined
      const init = { method: "POST", body: JSON.stringify(body) }
      for await (const event of EventStreamClient.events(agent, `${url}chat`, init)) last = event
      if (last === undefined) throw new Error("the run sent no event")
      return last
    },
    catch: (error) => error
  })

/** A request with headers `fetch` will not set (`host`): its status and body. A body makes it a POST. */
const request = (url: string, path: string, headers: Http.OutgoingHttpHeaders, body?: string) =>
  Effect.callback<{ readonly status: number; readonly text: string }>((resume) => {
    const sent = Http.request(
      new URL(path, url),
      { method: body === undefined ? "GET" : "POST", headers },
      (response) => {
        let text = ""
        response.setEncoding("utf8")
        response.on("data", (chunk: string) => (text += chunk))
        response.on("end", () => resume(Effect.succeed({ status: response.statusCode ?? 0, text })))
      }
    )
    sent.on("error", (error) => resume(Effect.die(error)))
    sent.end(body)
  })

describe("the chat server", () => {
  it.live("builds its model once, for its lifetime: a run never uses a model already released", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      // A model holding a resource (a connection pool, say), released when its layer closes.
      const model = Layer.unwrap(Effect.acquireRelease(
        Effect.sync(() => {
          log.push("acquired")
          return MockLanguageModel.layer([...script, ...script])
        }),
        () => Effect.sync(() => log.push("released"))
      ))
      const { url } = yield* serve("mock", model)
      for (const index of [0, 1]) {
        const ended = yield* chat(url, { conversation: "conversation-1", index, message: question, context: [] })
        expect(ended._tag).toBe("Finished")
      }
      expect(log).toStrictEqual(["acquired"])
    }).pipe(Effect.scoped))

  it.live("runs a message on the conversation before it, which the page sends again as it was", () =>
    Effect.gen(function*() {
      const built = yield* Layer.build(MockLanguageModel.layer([...script, ...script]))
      const { url } = yield* serve("mock", Layer.succeedContext(built))
      const first = yield* chat(url, { conversation: "conversation-2", index: 0, message: question, context: [] })
      const history = first._tag === "Finished" ? first.result.history : []
      const next = {
        conversation: "conversation-2",
        index: 1,
        message: "And in miles per hour?",
        context: Schema.encodeSync(Conversation.History)(history)
      }
      expect((yield* chat(url, next))._tag).toBe("Finished")
      // The model read the first exchange, then the new message.
      const requests = yield* Context.get(built, MockLanguageModel.MockLanguageModel).requests
      expect(requests[3]?.history).toStrictEqual([...history, Item.userMessage("And in miles per hour?")])
      // Sent again as it was (a reload), it names the same run, which is not executed again.
      expect((yield* chat(url, next))._tag).toBe("Finished")
      expect(yield* Context.get(built, MockLanguageModel.MockLanguageModel).requests).toHaveLength(6)
      // The run's options are the same, as its log's fingerprint says; with another conversation, they are not.
      const cancel = (body: unknown) =>
        Effect.promise(() =>
          fetch(`${url}chat/cancel`, { method: "POST", body: JSON.stringify(body) }).then((r) => r.text())
        )
      expect(yield* cancel(next)).toBe("the run had ended\n")
      expect(yield* cancel({ ...next, context: [] })).toContain("was recorded with another input")
    }).pipe(Effect.scoped))

  it.live("answers only its own pages: another site's page, or a name that is not loopback (DNS rebinding), gets 403", () =>
    Effect.gen(function*() {
      const { url } = yield* serve("mock", MockLanguageModel.layer([...script, ...script]))
      const { port } = new URL(url)
      const body = JSON.stringify({ conversation: "conversation-4", index: 0, message: question, context: [] })
      // A form or a fetch with a text body, from any site the person visits, needs no permission of the browser's.
      const evil = yield* request(url, "/chat", { origin: "https://evil.example" }, body)
      expect(evil.status).toBe(403)
      // A name of the attacker's that resolves to 127.0.0.1: the page and the server then share an origin.
      const rebound = yield* request(url, "/chat", {
        host: `evil.example:${port}`,
        origin: `http://evil.example:${port}`
      }, body)
      expect(rebound.status).toBe(403)
      expect((yield* request(url, "/", { host: `evil.example:${port}` })).status).toBe(403)
      // The server's own page, reached as 127.0.0.1 or localhost, and a client without an Origin (curl) are answered.
      expect((yield* request(url, "/", { host: `localhost:${port}` })).status).toBe(200)
      const own = yield* request(url, "/chat", { origin: `http://127.0.0.1:${port}` }, body)
      expect(own.status).toBe(200)
      expect(own.text).toContain("event: end")
    }).pipe(Effect.scoped))

  it.live("refuses with 400 a conversation nested deeper than JSON can be written back, and answers the next request", () =>
    Effect.gen(function*() {
      const { url } = yield* serve("mock", MockLanguageModel.layer(script))
      const post = (body: string) =>
        Effect.promise(() =>
          fetch(`${url}chat`, { method: "POST", body }).then(async (r) => ({ status: r.status, text: await r.text() }))
        )
      // 20 KB: an item of the application's own whose data nests deeper than JSON.stringify can go.
      const depth = 10_000
      const note = `{"type":"x-note","id":"n1","status":"completed","data":{"v":${"[".repeat(depth)}${
        "]".repeat(depth)
      }}}`
      const refused = yield* post(
        `{"conversation":"conversation-3","index":0,"message":"Hi","context":[${note}]}`
      )
      expect(refused.status, refused.text.slice(0, 200)).toBe(400)
      expect(refused.text.length).toBeLessThan(2_000)
      const ended = yield* chat(url, { conversation: "conversation-3", index: 0, message: question, context: [] })
      expect(ended._tag).toBe("Finished")
    }).pipe(Effect.scoped))
})

describe.skipIf(!hasChromium)("the chat page in Chromium", () => {
  it.live(
    "shows the answer as it streams, the tool calls and results, and the turn's cost",
    () =>
      Effect.gen(function*() {
        const { url } = yield* serve("mock", fastMock)
        const page = yield* browserPage
        yield* Effect.promise(() => page.goto(url))
        // Every change of the answer's text is sampled with the page's state at that moment.
        yield* Effect.promise(() =>
          page.evaluate(() => {
            const samples: Array<readonly [number, string | undefined]> = []
            Object.assign(window, { samples })
            new MutationObserver(() =>
              samples.push([
                document.querySelector(".assistant")?.textContent?.length ?? 0,
                document.getElementById("status")?.dataset["state"]
              ])
            ).observe(document.body, { subtree: true, childList: true, characterData: true })
          })
        )
        yield* Effect.promise(() => page.click("#send"))

        yield* Effect.promise(() => page.waitForSelector("#status[data-state=finished]", { timeout: 30_000 }))
        // The answer streamed: its text grew many times while the run was going.
        const samples = yield* Effect.promise(() =>
          page.evaluate(() => (window as unknown as { samples: Array<readonly [number, string | undefined]> }).samples)
        )
        const streaming = new Set(
          samples.flatMap(([length, state]) => state === "running" && length > 0 ? [length] : [])
        )
        expect(streaming.size).toBeGreaterThan(5)
        const results = yield* Effect.promise(() => page.locator(".result.success").allTextContents())
        expect(results.some((result) => result.startsWith("← convert_units"))).toBe(true)
        expect(yield* Effect.promise(() => page.locator(".result.mistake").allTextContents())).toHaveLength(1)
        const costs = yield* Effect.promise(() => page.locator(".meta").allTextContents())
        expect(costs).toHaveLength(3)
        expect(costs[2]).toMatch(/^turn 3 · 671 in \/ 58 out · \$0\.000284$/)
        expect(yield* Effect.promise(() => page.locator(".ending").textContent())).toContain("✓ Stop")

        mkdirSync(screenshots, { recursive: true })
        yield* Effect.promise(() => page.screenshot({ path: `${screenshots}chat.png`, fullPage: true }))
      }).pipe(Effect.scoped),
    60_000
  )

  it.live("Stop cancels the run on the server, and the provider sees its request closed", () =>
    Effect.gen(function*() {
      const provider = yield* ProviderServer.ProviderServer
      // The model never answers: the run waits on its HTTP request until Stop.
      yield* provider.reply(ProviderServer.hang)
      const model = Responses.layer({ apiKey: Redacted.make("test-key"), baseUrl: provider.url, model: "gpt-5-mini" })
      const { url } = yield* serve("responses", model)
      const page = yield* browserPage
      yield* Effect.promise(() => page.goto(url))
      yield* Effect.promise(() => page.click("#send"))
      yield* provider.awaitRequests(1)
      expect(yield* Effect.promise(() => state(page))).toBe("running")
      yield* Effect.promise(() => page.click("#stop"))
      yield* Effect.promise(() => page.waitForSelector("#status[data-state=stopped]"))
      yield* provider.awaitClientAbort.pipe(Effect.timeout("10 seconds"))
      expect(yield* Effect.promise(() => page.locator(".ending").textContent())).toBe("■ stopped")
      expect(yield* Effect.promise(() => page.locator("#send").isEnabled())).toBe(true)
    }).pipe(Effect.scoped, Effect.provide(ProviderServer.layer)), 60_000)

  it.live(
    "a reload mid-run shows the whole conversation, each answer once, and the run went on",
    () =>
      Effect.gen(function*() {
        // One scripted model for both runs (it answers the turn each history is at), to count what it was asked.
        const model = yield* Layer.build(Provider.mock)
        const { url } = yield* serve("mock", Layer.succeedContext(model))
        const page = yield* browserPage
        yield* Effect.promise(() => page.goto(url))
        // A first exchange, then a second message, whose run is in progress when the page is loaded again.
        yield* Effect.promise(() => page.click("#send"))
        yield* Effect.promise(() => page.waitForSelector("#status[data-state=finished]", { timeout: 30_000 }))
        yield* Effect.promise(() => page.fill("#message", "And in miles per hour?"))
        yield* Effect.promise(() => page.click("#send"))
        yield* Effect.promise(() =>
          page.locator(".assistant").nth(1).locator(".meta").first().waitFor({ timeout: 30_000 })
        )
        expect(yield* Effect.promise(() => state(page))).toBe("running")
        yield* Effect.promise(() => page.reload())
        yield* Effect.promise(() => page.waitForSelector("#status[data-state=finished]", { timeout: 30_000 }))

        expect(yield* Effect.promise(() => page.locator(".user").allTextContents())).toStrictEqual([
          question,
          "And in miles per hour?"
        ])
        expect(yield* Effect.promise(() => page.locator(".assistant").count())).toBe(2)
        for (const answer of [0, 1]) {
          const bubble = page.locator(".assistant").nth(answer)
          const costs = yield* Effect.promise(() => bubble.locator(".meta").allTextContents())
          expect(costs.map((cost) => cost.split(" · ")[0])).toStrictEqual(["turn 1", "turn 2", "turn 3"])
          const texts = yield* Effect.promise(() => bubble.locator(".turn .text").allTextContents())
          expect(texts[0]).toBe("Let me work these out with the tools.\n")
          expect(texts[2]).toContain("A marathon is about 42.16 km.")
          expect(yield* Effect.promise(() => bubble.locator(".call").count())).toBe(4)
          expect(yield* Effect.promise(() => bubble.locator(".result").count())).toBe(4)
          expect(yield* Effect.promise(() => bubble.locator(".ending").textContent())).toContain("✓ Stop")
        }
        // The reload did not start the run again: each run's three turns were asked once.
        const requests = yield* Context.get(model, MockLanguageModel.MockLanguageModel).requests
        expect(requests).toHaveLength(6)
        // The second message was asked on the first exchange: the question, and its answer.
        const read = requests[3]?.history.map((item) =>
          item.type === "message" ? item.content.map(Item.partText).join("") : item.type
        )
        expect(read?.[0]).toBe(question)
        expect(read?.at(-2)).toContain("A marathon is about 42.16 km.")
        expect(read?.at(-1)).toBe("And in miles per hour?")
        mkdirSync(screenshots, { recursive: true })
        yield* Effect.promise(() => page.screenshot({ path: `${screenshots}chat-reload.png`, fullPage: true }))
      }).pipe(Effect.scoped),
    90_000
  )

  it.live(
    "a connection cut in the middle of a turn, then cut again after the resume, shows each turn once",
    () =>
      Effect.gen(function*() {
        // The script's second turn stops after two deltas until the test lets it go on.
        const stalled = yield* Deferred.make<void>()
        const goOn = yield* Deferred.make<void>()
        const [first, second, third] = script
        const model = MockLanguageModel.layer([
          first!,
          MockLanguageModel.held(
            second!,
            2,
            Effect.andThen(Deferred.succeed(stalled, undefined), Deferred.await(goOn))
          ),
          third!
        ])
        const { cut, url } = yield* serve("mock", model)
        const page = yield* browserPage
        yield* Effect.promise(() => page.goto(url))
        yield* Effect.promise(() => page.click("#send"))
        yield* Deferred.await(stalled)
        const secondTurnShown = () =>
          page.waitForFunction(() => (document.querySelectorAll(".turn .text")[1]?.textContent ?? "") !== "")
        /** Cuts the connection; the page reconnects, drops the turn in progress, and shows it again. */
        const cutAndResume = Effect.promise(async () => {
          const resumed = page.waitForResponse((response) => response.url().endsWith("/chat"))
          cut()
          await resumed
          await secondTurnShown()
        })
        yield* Effect.promise(secondTurnShown)
        yield* cutAndResume
        yield* cutAndResume
        yield* Deferred.succeed(goOn, undefined)
        yield* Effect.promise(() => page.waitForSelector("#status[data-state=finished]", { timeout: 30_000 }))

        const costs = yield* Effect.promise(() => page.locator(".meta").allTextContents())
        expect(costs.map((cost) => cost.split(" · ")[0])).toStrictEqual(["turn 1", "turn 2", "turn 3"])
        const texts = yield* Effect.promise(() => page.locator(".turn .text").allTextContents())
        expect(texts).toHaveLength(3)
        expect(texts[0]).toBe("Let me work these out with the tools.\n")
        expect(texts[1]).toBe("I asked for the wrong unit; converting to Celsius instead.\n")
        expect(yield* Effect.promise(() => page.locator(".call").count())).toBe(4)
        expect(yield* Effect.promise(() => page.locator(".result").count())).toBe(4)
        expect(yield* Effect.promise(() => page.locator(".ending").textContent())).toContain("✓ Stop")
      }).pipe(Effect.scoped),
    60_000
  )

  it.live("a durable run's page survives a reload: the whole conversation, once, and the run went on", () => {
    const dir = mkdtempSync(join(tmpdir(), "agentloop-web-"))
    return Effect.gen(function*() {
      const nodeServer = Http.createServer()
      const model = MockLanguageModel.layer(script, { chunkSize: 6, delay: "10 millis" })
      yield* Layer.build(
        HttpRouter.serve(Durable.routes, { disableLogger: true, disableListenLog: true }).pipe(
          Layer.provide(Durable.runner(join(dir, "runs.db"), model)),
          Layer.provide(NodeHttpServer.layer(() => nodeServer, { port: 0, host: "127.0.0.1" }))
        )
      )
      yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
      const address = nodeServer.address()
      const base = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
      const started = yield* Effect.promise(() => fetch(`${base}/runs/r1`, { method: "POST", body: question }))
      expect(started.status).toBe(202)

      const page = yield* browserPage
      yield* Effect.promise(() => page.goto(`${base}/runs/r1`))
      yield* Effect.promise(() => page.waitForSelector(".meta"))
      // The reader goes away mid-run, and a new one reads the run again from its start.
      yield* Effect.promise(() => page.reload())
      yield* Effect.promise(() => page.waitForSelector("#status[data-state=finished]", { timeout: 30_000 }))
      expect(yield* Effect.promise(() => page.locator(".assistant").count())).toBe(1)
      const costs = yield* Effect.promise(() => page.locator(".meta").allTextContents())
      expect(costs.map((cost) => cost.split(" · ")[0])).toEqual(["turn 1", "turn 2", "turn 3"])
      const texts = yield* Effect.promise(() => page.locator(".turn .text").allTextContents())
      expect(texts[0]).toBe("Let me work these out with the tools.\n")
      expect(texts[2]).toContain("A marathon is about 42.16 km.")
      const calls = yield* Effect.promise(() => page.locator(".call").allTextContents())
      expect(calls).toHaveLength(4)
      expect(yield* Effect.promise(() => page.locator(".result").count())).toBe(4)
      expect(yield* Effect.promise(() => page.locator(".ending").textContent())).toContain("✓ Stop")
      mkdirSync(screenshots, { recursive: true })
      yield* Effect.promise(() => page.screenshot({ path: `${screenshots}durable-reload.png`, fullPage: true }))
    }).pipe(Effect.scoped, Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))))
  }, 90_000)
})
