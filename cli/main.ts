// `npx edgeplane <command>`: the user's tools for a running control plane. Each command lives
// in its own module under cli/commands/ and is loaded only when named.

export interface Command {
  /** One line for `edgeplane help`. */
  summary: string;
  /** Runs the command with the arguments after its name; resolves to the exit code. */
  run(args: string[]): Promise<number>;
}

const COMMANDS: Record<string, () => Promise<{ command: Command }>> = {
  trace: () => import("./commands/trace"),
  cluster: () => import("./commands/cluster"),
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "help" || name === "--help" || name === "-h") {
    await printHelp();
    return name ? 0 : 2;
  }
  const load = COMMANDS[name];
  if (!load) {
    console.error(`edgeplane: unknown command "${name}"; run "edgeplane help" for the list`);
    return 2;
  }
  const { command } = await load();
  return command.run(rest);
}

async function printHelp(): Promise<void> {
  const lines = ["usage: edgeplane <command> [arguments]", "", "commands:"];
  for (const [name, load] of Object.entries(COMMANDS)) {
    const { command } = await load();
    lines.push(`  ${name.padEnd(10)} ${command.summary}`);
  }
  console.log(lines.join("\n"));
}
