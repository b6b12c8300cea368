/**
 * Which model the demo talks to. `AGENTLOOP_PROVIDER` chooses: `mock` (the
 * default, a scripted model that needs no key), `responses` (OpenAI, reads
 * `OPENAI_API_KEY`), `gemini` (Google, reads `GEMINI_API_KEY`), `anthropic`
 * (Claude, reads `ANTHROPIC_API_KEY`) or `chat-completions` (any server that
 * speaks OpenAI's Chat Completions: needs `AGENTLOOP_BASE_URL`, e.g.
 * `http://localhost:11434/v1` for Ollama, and reads `CHAT_COMPLETIONS_API_KEY`
 * when the server wants a key).
 * `AGENTLOOP_BASE_URL` and `AGENTLOOP_MODEL` override the endpoint and model.
 */
import { Anthropic } from "@agentloop/anthropic"
import { ChatCompletions } from "@agentloop/chat-completions"
import type { LanguageModel } from "@agentloop/core"
import { Gemini } from "@agentloop/gemini"
import { Responses } from "@agentloop/responses"
import { MockLanguageModel } from "@agentloop/testing"
import { Config, Effect, Layer, Option, Schema } from "effect"
import { script } from "./script.ts"

export const name = Config.Literals(
  ["mock", "responses", "gemini", "anthropic", "chat-completions"],
  "AGENTLOOP_PROVIDER"
).pipe(
  Config.withDefault("mock" as const)
)

/**
 * The scripted model, paced like a real one. It answers the turn the history
 * is at since the person's last message (each answer of the script has a
 * text), so a run resumed from its checkpoints is asked only for the turns it
 * had not had, and a conversation's next message is answered afresh.
 */
export const mock = MockLanguageModel.layer(
  ({ history }) => {
    const asked = history.findLastIndex((item) => item.type === "message" && item.role === "user")
    const answered = history.slice(asked + 1).filter((item) => item.type === "message" && item.role === "assistant")
    return script[answered.length] ?? MockLanguageModel.textTurn("(The script has no more turns.)")
  },
  { chunkSize: 6, delay: "20 millis" }
)

/** The provider chosen has no API key in the environment. */
export class MissingApiKey extends Schema.TaggedError<MissingApiKey>()("MissingApiKey", { message: Schema.String }) {}

/** The provider chosen has no server to talk to: `chat-completions` has no default one. */
export class MissingBaseUrl
  extends Schema.TaggedError<MissingBaseUrl>()("MissingBaseUrl", { message: Schema.String })
{}

const apiKey = (provider: string, variable: string) =>
  Effect.mapError(
    Config.Redacted(variable),
    () => new MissingApiKey({ message: `AGENTLOOP_PROVIDER=${provider} needs ${variable} in the environment` })
  )

/** The `LanguageModel` the environment asks for, with `scripted` as the mock. */
export const layerWith = (
  scripted: Layer.Layer<LanguageModel.LanguageModel>
): Layer.Layer<LanguageModel.LanguageModel, Config.ConfigError | MissingApiKey | MissingBaseUrl> =>
  Layer.unwrap(
    Effect.gen(function*() {
      const provider = yield* name
      const baseUrl = Option.getOrUndefined(yield* Config.option(Config.String("AGENTLOOP_BASE_URL")))
      const model = Option.getOrUndefined(yield* Config.option(Config.String("AGENTLOOP_MODEL")))
      switch (provider) {
        case "mock":
          return scripted
        case "responses":
          return Responses.layer({ apiKey: yield* apiKey(provider, "OPENAI_API_KEY"), baseUrl, model })
        case "gemini":
          return Gemini.layer({ apiKey: yield* apiKey(provider, "GEMINI_API_KEY"), baseUrl, model })
        case "anthropic":
          return Anthropic.layer({ apiKey: yield* apiKey(provider, "ANTHROPIC_API_KEY"), baseUrl, model })
        case "chat-completions": {
          if (baseUrl === undefined) {
            return yield* new MissingBaseUrl({
              message: `AGENTLOOP_PROVIDER=${provider} needs AGENTLOOP_BASE_URL, the server's URL ` +
                "(e.g. http://localhost:11434/v1 for Ollama)"
            })
          }
          const key = Option.getOrUndefined(yield* Config.option(Config.Redacted("CHAT_COMPLETIONS_API_KEY")))
          return ChatCompletions.layer({ apiKey: key, baseUrl, model })
        }
      }
    })
  )

/** The `LanguageModel` the environment asks for; the mock is the calculator agent's script. */
export const layer: Layer.Layer<LanguageModel.LanguageModel, Config.ConfigError | MissingApiKey | MissingBaseUrl> =
  layerWith(mock)
