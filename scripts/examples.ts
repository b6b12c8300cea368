/**
 * Runs every `@example` of the public API: each becomes a file, all are
 * type-checked together against the packages' sources, then run one after
 * another in one process (an example that throws, rejects or leaves a
 * rejection unhandled fails the run). `npm run check` runs it after `tsc -b`.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { modules, root, stripFence } from "./jsdoc.ts"

const out = join(root, "scripts", ".examples")

const examples = modules().flatMap((module) =>
  [module.doc?.examples ?? [], ...module.exports.map((entry) => entry.doc?.examples ?? [])]
    .flat()
    .map((code, index) => ({
      name: `${module.specifier.replace(/^@agentloop\//, "").replaceAll("/", "-")}-${index + 1}`,
      code: stripFence(code)
    }))
)

if (process.argv.includes("--run")) {
  // The child: import each example in turn; a rejection nobody handled is a failure of the one running.
  let current = ""
  const failures: Array<string> = []
  process.on("unhandledRejection", (reason) => failures.push(`${current}: unhandled rejection: ${String(reason)}`))
  for (const example of examples) {
    current = example.name
    try {
      await import(pathToFileURL(join(out, `${example.name}.ts`)).href)
    } catch (error) {
      failures.push(`${example.name}: ${error instanceof Error ? error.stack ?? error.message : String(error)}`)
    }
  }
  // Let examples that run their program without awaiting it finish.
  await new Promise((resolve) => setTimeout(resolve, 100))
  for (const failure of failures) console.error(failure)
  process.exitCode = failures.length > 0 ? 1 : 0
} else {
  rmSync(out, { recursive: true, force: true })
  mkdirSync(out, { recursive: true })
  for (const example of examples) writeFileSync(join(out, `${example.name}.ts`), example.code + "\n")
  writeFileSync(
    join(out, "tsconfig.json"),
    JSON.stringify({
      extends: "../../tsconfig.base.json",
      compilerOptions: {
        composite: false,
        noEmit: true,
        declaration: false,
        declarationMap: false,
        // An example may name a value only to show it.
        noUnusedLocals: false
      },
      include: ["*.ts"]
    })
  )
  const tsc = join(root, "node_modules", ".bin", "tsc")
  const checked = spawnSync(tsc, ["-p", join(out, "tsconfig.json")], { stdio: "inherit" })
  const ran = checked.status === 0
    ? spawnSync(process.execPath, ["--conditions=@agentloop/source", import.meta.filename, "--run"], {
      stdio: ["ignore", "ignore", "inherit"],
      cwd: out
    })
    : checked
  if (ran.status === 0) console.log(`${examples.length} examples type-check and run.`)
  else process.exitCode = 1
}
