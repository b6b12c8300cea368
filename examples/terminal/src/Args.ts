/**
 * The demo's command line: `[--program agent|research] [--mcp "<command>"]… [question…]`,
 * the program also from `AGENTLOOP_PROGRAM` (the flag wins; `agent` by default).
 */

/** The program asked for, the MCP servers to start (shell commands), and the question (empty: the program's own). */
export interface Args {
  readonly program: string
  readonly mcp: ReadonlyArray<string>
  readonly asked: string
}

/** Reads the arguments after `node src/main.ts`, and the `AGENTLOOP_PROGRAM` variable. */
export const parse = (argv: ReadonlyArray<string>, env: string | undefined): Args => {
  let program: string | undefined
  const mcp: Array<string> = []
  const rest: Array<string> = []
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index]!
    if (arg === "--program") program = argv[++index] ?? "agent"
    else if (arg === "--mcp") {
      const command = argv[++index]
      if (command !== undefined && command.trim() !== "") mcp.push(command)
    } else rest.push(arg)
  }
  return { program: program ?? env ?? "agent", mcp, asked: rest.join(" ").trim() }
}
