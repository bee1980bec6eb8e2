#!/usr/bin/env node
// The edgelet launcher: loads the TypeScript sources through tsx and runs the CLI.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../edgelet/cli.ts");
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`edgelet: ${err?.stack ?? err}`);
    process.exit(1);
  },
);
