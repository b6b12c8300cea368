/**
 * The demo's command line: `[--program agent|research] [question…]`, the
 * program also from `AGENTLOOP_PROGRAM` (the flag wins; `agent` by default).
 */

/** The program asked for and the question (empty: the program's own). */
export interface Args {
  readonly program: string
  readonly asked: string
}

/** Reads the arguments after `node src/main.ts`, and the `AGENTLOOP_PROGRAM` variable. */
export const parse = (argv: ReadonlyArray<string>, env: string | undefined): Args => {
  const flag = argv.indexOf("--program")
  const program = flag === -1 ? env ?? "agent" : argv[flag + 1] ?? "agent"
  const rest = flag === -1 ? argv : [...argv.slice(0, flag), ...argv.slice(flag + 2)]
  return { program, asked: rest.join(" ").trim() }
}
