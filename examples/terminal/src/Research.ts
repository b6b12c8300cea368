/**
 * The demo's step program: a researcher. Three sub-agents search the web,
 * papers and the news at once (a `fork` of `spawn`s, each a small agent loop
 * with a `search` tool), their findings are merged into notes, and a writer
 * (a `loop` of one `llm` step) drafts a report until a verifier accepts it.
 */
import { Item, Step, TokenUsage, Tool, Toolkit, Turn, Until } from "@agentloop/core"
import type { Cost, LanguageModel, StepEvent } from "@agentloop/core"
import { MockLanguageModel } from "@agentloop/testing"
import { Effect, Schema, Stream } from "effect"

export const question = "How well do heat pumps heat homes in cold climates?"

export const sources = ["web", "papers", "news"] as const
export type Source = (typeof sources)[number]

/** What the canned search finds in each source. */
const corpus: Record<Source, ReadonlyArray<string>> = {
  web: [
    "Cold-climate air-source heat pumps keep heating down to about -25 °C.",
    "Their efficiency (COP) falls from about 4 at 8 °C to about 2 at -15 °C."
  ],
  papers: [
    "Field studies in Canada measured seasonal COPs of 2.5 to 3 in homes.",
    "Ground-source heat pumps hold a COP near 3.5 all winter."
  ],
  news: [
    "Norway, where winters are long, has about 60 heat pumps per 100 households.",
    "Sales in cold regions of the US doubled in three years."
  ]
}

export const search = Tool.make({
  name: "search",
  description: "Searches one source (web, papers or news) and returns what it found",
  input: Schema.Struct({ source: Schema.Literals(sources), query: Schema.String }),
  output: Schema.Array(Schema.String),
  execute: ({ source }) => Effect.succeed(corpus[source])
})

export const toolkit = Toolkit.make(search)

const model = "gpt-5-mini"

/** A sub-agent that searches one source until it has what it needs, then lists its findings. */
const searcher = (source: Source) =>
  Step.spawn({
    id: `search-${source}`,
    timeout: 60_000,
    child: Step.loop({
      id: "searcher",
      steps: [
        Step.llm({
          id: "search",
          model,
          instructions: `You search ${source} with the search tool, then list what you found, one line each.`,
          tools: ["search"]
        })
      ],
      until: Until.noToolCalls(),
      maxIterations: 4
    })
  })

const gather = Step.fork({
  id: "gather",
  mode: "all",
  paths: (_question: string) => sources.map(searcher),
  merge: (findings) => findings.map((found, i) => `From ${sources[i]}:\n${found}`).join("\n\n")
})

const brief = Step.run({
  id: "brief",
  execute: (notes: string, ctx) => {
    ctx.itemLog.append(Item.userMessage(`Notes from three searches:\n\n${notes}`, "notes"))
    return notes
  }
})

/** The feedback of a draft that names no sources. */
export const citeSources = "Cite your sources: end with a line \"Sources: …\" naming where each claim came from."

const verifier = Until.verified((draft) =>
  typeof draft === "string" && draft.includes("Sources:") ? { pass: true } : { pass: false, feedback: citeSources }
)

const write = Step.loop({
  id: "write",
  steps: [
    Step.llm({
      id: "writer",
      model,
      instructions: "You write a short, plain report answering the question from the notes.",
      tools: []
    })
  ],
  until: verifier,
  maxIterations: 3
})

/** The researcher: gather, brief, write. A loop of one iteration is a sequence. */
export const researcher = Step.loop({ id: "researcher", steps: [gather, brief, write], until: Until.maxSteps(1) })

const lastText = (history: ReadonlyArray<Item.Item>): string => {
  for (let i = history.length - 1; i >= 0; i--) {
    const item = history[i]
    if (item?.type === "message") return item.content.map(Item.partText).join("")
  }
  return ""
}

/**
 * The scripted model of the researcher: it answers each request from what it
 * asks, since the three searchers' requests arrive in no fixed order.
 */
export const respond: MockLanguageModel.Respond = ({ history, options }) => {
  const instructions = options.instructions ?? ""
  const source = sources.find((candidate) => instructions.startsWith(`You search ${candidate}`))
  if (source !== undefined) {
    const results = history.flatMap((item) => item.type === "function_call_output" ? [item.output] : [])
    if (results.length === 0) {
      return MockLanguageModel.callsTurn(
        [{ name: "search", arguments: { source, query: lastText(history) }, callId: `call_${source}` }],
        { model, usage: TokenUsage.make(120, 24) }
      )
    }
    const found = results.flatMap((output) =>
      Schema.decodeUnknownSync(Schema.fromJsonString(Schema.Array(Schema.String)))(output)
    )
    return MockLanguageModel.textTurn(found.map((line) => `- ${line}`).join("\n"), {
      model,
      usage: TokenUsage.make(210, 60)
    })
  }
  const draft = "Heat pumps heat homes well in cold climates. Cold-climate models keep working down to about -25 °C, " +
    "with an efficiency that falls from about 4 to about 2 as it gets colder; homes measured over a season get 2.5 to 3, " +
    "and ground-source pumps about 3.5 all winter. Norway, with long winters, has 60 per 100 households."
  const cited = history.some((item) => item.type === "message" && lastText([item]) === citeSources)
  return MockLanguageModel.textTurn(cited ? `${draft}\nSources: web, papers, news.\n` : `${draft}\n`, {
    model,
    usage: TokenUsage.make(480, 90)
  })
}

/** The scripted model, paced like a real one. */
export const mock = MockLanguageModel.layer(respond, { chunkSize: 6, delay: "5 millis" })

const dim = (text: string) => `\x1b[2m${text}\x1b[22m`
const green = (text: string) => `\x1b[32m${text}\x1b[39m`
const usd = (cost: Cost.Cost) => cost === null ? "cost unknown" : `$${cost.toFixed(6)}`

/** What the terminal shows of an event of the researcher. */
export const render = (event: StepEvent.Event<string>, rootId: string): string => {
  if (event._tag === "Output") return `\n${green("✓")} report written\n`
  const sub = event.contextId === rootId ? "" : `${event.contextId.slice(rootId.length + 1)} `
  switch (event._tag) {
    case "Started":
      return event.kind === "spawn" || event.stepId === "write" ? `${dim(`◆ ${event.stepId} started`)}\n` : ""
    case "Completed":
      if (event.kind === "spawn") return `${dim(`◆ ${event.stepId} done`)}\n`
      if (event.stepId === "gather") return `${dim(`◆ notes merged from ${sources.length} searches`)}\n`
      return ""
    case "Failed":
      return `✗ ${event.stepId}: ${event.error.message}\n`
    case "Verdict":
      return event.stepId === "write"
        ? `${
          dim(`  [verifier: ${event.verdict.stop ? "accepted" : `asked again: ${event.verdict.feedback ?? ""}`}]`)
        }\n`
        : ""
    case "LoopEnded":
      return event.reason === "maxIterations"
        ? `${dim(`  [${event.stepId} stopped at its limit of ${event.iterations} iterations]`)}
`
        : ""
    case "Recorded":
      return ""
    case "Turn": {
      const turn = event.event
      if (turn._tag === "Delta") {
        const delta = turn.delta
        return sub === "" && delta.type === "text_delta" ? delta.delta : ""
      }
      if (turn._tag === "ToolResult") return `${dim(`  ${sub}← ${turn.call.name} ${turn.call.arguments}`)}\n`
      if (turn._tag === "TurnCompleted" && sub === "") {
        const books = turn.accounting
        const text = Turn.text(turn.turn)
        return `${text === "" || text.endsWith("\n") ? "" : "\n"}${
          dim(
            `  [writer turn ${turn.step} · so far, sub-agents included: ${books.usage.input} in / ${books.usage.output} out tokens · ${
              usd(books.cost)
            }]`
          )
        }\n`
      }
      return ""
    }
  }
}

/**
 * Runs the researcher on `question`, writing its events with `write`; returns
 * the report, or the error the program failed with (printed, not raised).
 */
export const run = (
  asked: string,
  write: (text: string) => Effect.Effect<void>
): Effect.Effect<string | Error, never, LanguageModel.LanguageModel> => {
  const id = "research"
  return Effect.andThen(
    write(`> ${asked}\n\n`),
    Step.stream(researcher, asked, { toolkit, id }).pipe(
      Stream.tap((event) => {
        const text = render(event, id)
        return text === "" ? Effect.void : write(text)
      }),
      Stream.runFold(() => "", (report, event) => event._tag === "Output" ? event.value : report),
      Effect.catch((error) => Effect.as(write(`✗ ${error._tag}: ${error.message}\n`), new Error(error.message)))
    )
  )
}
