/**
 * Every ```ts block of the docs is a program: this test type-checks them all
 * and runs each one, so the docs cannot drift from the API. Illustrative code
 * that is not a whole program is fenced as ```typescript instead, and an
 * excerpt of a file of the repository as ```ts <path>: the test checks that
 * the file still holds it, word for word.
 */
import { execFile } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"

const run = promisify(execFile)
const docs = dirname(fileURLToPath(import.meta.url))
const out = join(docs, ".snippets")

const snippets = readdirSync(docs)
  .filter((file) => file.endsWith(".md"))
  .sort()
  .flatMap((file) =>
    [...readFileSync(join(docs, file), "utf8").matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match, index) => ({
      name: `${file.replace(/\.md$/, "")}-${index + 1}`,
      code: match[1]!
    }))
  )

const excerpts = readdirSync(docs)
  .filter((file) => file.endsWith(".md"))
  .sort()
  .flatMap((file) =>
    [...readFileSync(join(docs, file), "utf8").matchAll(/^```ts (\S+)\n([\s\S]*?)^```$/gm)].map((match) => ({
      doc: file,
      path: match[1]!,
      code: match[2]!
    }))
  )

rmSync(out, { recursive: true, force: true })
mkdirSync(out, { recursive: true })
for (const snippet of snippets) writeFileSync(join(out, `${snippet.name}.ts`), snippet.code)
writeFileSync(
  join(out, "tsconfig.json"),
  JSON.stringify({
    extends: "../../tsconfig.base.json",
    compilerOptions: {
      composite: false,
      noEmit: true,
      emitDeclarationOnly: false,
      declaration: false,
      declarationMap: false
    },
    include: ["*.ts"]
  })
)

describe("docs", () => {
  it("has snippets", () => {
    expect(snippets.length).toBeGreaterThan(0)
  })

  it("type-checks every snippet", async () => {
    const tsc = join(docs, "..", "node_modules", ".bin", "tsc")
    const result = await run(tsc, ["-p", join(out, "tsconfig.json")]).then(
      () => "",
      (error: { stdout: string }) => error.stdout
    )
    expect(result).toBe("")
  }, 120_000)

  for (const excerpt of excerpts) {
    it(`${excerpt.doc} quotes ${excerpt.path} as it is`, () => {
      expect(readFileSync(join(docs, "..", excerpt.path), "utf8")).toContain(excerpt.code)
    })
  }

  // Each snippet runs in its own process, a few at a time.
  for (const snippet of snippets) {
    it.concurrent(`runs ${snippet.name}`, async () => {
      // The workspace's packages run from their sources, as in the tests (see vitest.shared.ts).
      await run(process.execPath, ["--conditions=@agentloop/source", join(out, `${snippet.name}.ts`)], {
        cwd: out,
        timeout: 60_000
      })
    }, 60_000)
  }
})
