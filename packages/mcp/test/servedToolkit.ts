/**
 * The toolkit the `Mcp.serve` tests serve, over stdio from a child process and
 * over HTTP in the test's own process.
 */
import * as Item from "@agentloop/core/Item"
import * as Tool from "@agentloop/core/Tool"
import * as Toolkit from "@agentloop/core/Toolkit"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** Printed to `console.log` and the Effect log by `shout`: it must never reach standard output. */
export const noise = "NOISE-ON-STDOUT"

const add = Tool.make({
  name: "add",
  description: "Adds two numbers",
  input: Schema.Struct({ a: Schema.Finite, b: Schema.Finite }),
  output: Schema.Finite,
  execute: ({ a, b }) => Effect.succeed(a + b)
})

const weather = Tool.make({
  name: "weather",
  description: "The weather in a city",
  input: Schema.Struct({ city: Schema.String }),
  output: Schema.Struct({ city: Schema.String, celsius: Schema.Finite }),
  execute: ({ city }) => Effect.succeed({ city, celsius: 21 })
})

const order = Tool.make({
  name: "order",
  description: "Orders an item",
  input: Schema.Struct({ item: Schema.String }),
  output: Schema.String,
  execute: ({ item }) => Effect.fail(`no ${item} left`)
})

const erase = Tool.make({
  name: "erase",
  description: "Erases a file",
  input: Schema.Struct({ path: Schema.String }),
  output: Schema.String,
  needsApproval: true,
  execute: ({ path }) => Effect.succeed(`erased ${path}`)
})

const shout = Tool.make({
  name: "shout",
  description: "Writes to the console and the log, then answers",
  input: Schema.Struct({}),
  output: Schema.String,
  execute: () =>
    Effect.sync(() => {
      console.log(noise)
      console.info(noise)
    }).pipe(Effect.andThen(Effect.log(noise)), Effect.as("shouted"))
})

/** The bytes of the screenshot `snap` attaches: a PNG's signature. */
export const screenshot = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10])

const snap = Tool.make({
  name: "snap",
  description: "Takes a screenshot of the page, and attaches the page's PDF and the site's logo",
  input: Schema.Struct({}),
  output: Schema.String,
  content: () => [
    { type: "input_text", text: "The page:" },
    Item.imageFromBytes(screenshot, "image/png"),
    Item.fileFromBytes(new TextEncoder().encode("%PDF-1.7"), "application/pdf", { filename: "page.pdf" }),
    Item.imageUrl("https://example.com/static/logo.webp"),
    Item.imageUrl("data:image/png;base64,***")
  ],
  execute: () => Effect.succeed("snapped")
})

/** The served tools. */
export const toolkit = Toolkit.make(add, weather, order, erase, shout, snap)
