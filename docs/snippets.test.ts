// @module-tag slow
/**
 * Every ```ts block of the docs is a program: this test type-checks them all
 * and runs each one, so the docs cannot drift from the API. Illustrative code
 * that is not a whole program is fenced as ```typescript instead, and an
 * excerpt of a file of the repository as ```ts <path>: the test checks that
 * the file still holds it, word for word.
 *
 * The programs are bundled together first (the packages' sources, split into
 * shared chunks), and each bundle runs in a process of its own: a process that
 * loads the sources module by module spends a second of CPU resolving and
 * compiling them before the program starts, and there are some fifty.
 */
import { build } from "esbuild"
import { execFile } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { beforeAll, describe, expect, it } from "vitest"

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

  // Beside the snippets' runs, which mostly wait. Incremental: the diagnostics of files unchanged since the last run
  // are kept in node_modules' cache (a run with nothing changed checks in a quarter of the CPU time). One checker, not
  // tsc's four: each of the four checks again the types they share (5.9 s of CPU on a fresh clone, 4.1 s with one),
  // and the cores are busy with the rest of the suite anyway.
  it.concurrent("type-checks every snippet", async () => {
    const tsc = join(docs, "..", "node_modules", ".bin", "tsc")
    const buildInfo = join(docs, "..", "node_modules", ".cache", "snippets.tsbuildinfo")
    const args = ["-p", join(out, "tsconfig.json"), "--incremental", "--tsBuildInfoFile", buildInfo, "--checkers", "1"]
    const result = await run(tsc, args).then(
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

  // The workspace's packages are bundled from their sources, as the tests import them (see vitest.shared.ts); the
  // bundles sit beside the snippets, so a snippet that resolves a file from its own place finds the same one.
  beforeAll(() =>
    build({
      entryPoints: snippets.map((snippet) => join(out, `${snippet.name}.ts`)),
      outdir: join(out, "bundle"),
      bundle: true,
      splitting: true,
      platform: "node",
      format: "esm",
      target: "node22",
      conditions: ["@agentloop/source"],
      // A failing snippet's stack points at its own lines (the maps name the sources rather than hold them).
      sourcemap: true,
      sourcesContent: false,
      // Dependencies written as CommonJS call `require`, which an ES module has not.
      banner: {
        js:
          "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);"
      },
      logLevel: "error"
    }), 120_000)

  // Each snippet runs in its own process, a few at a time. Source maps cost a process a fifth of a second to load:
  // only a snippet that failed runs again with them, for a stack that points at its own lines (and fails either way).
  for (const snippet of snippets) {
    it.concurrent(`runs ${snippet.name}`, async () => {
      const bundle = join(out, "bundle", `${snippet.name}.js`)
      const options = { cwd: out, timeout: 60_000 }
      await run(process.execPath, [bundle], options).catch(async (failure: unknown) => {
        // It failed: it fails still, with the stack of a second run that has the maps if it fails again.
        throw await run(process.execPath, ["--enable-source-maps", bundle], options).then(
          () => failure,
          (mapped) => mapped
        )
      })
    }, 120_000)
  }
})
