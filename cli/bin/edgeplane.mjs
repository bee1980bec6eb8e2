#!/usr/bin/env node
// The edgeplane launcher: loads the TypeScript sources through tsx and runs the CLI.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../main.ts");
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`edgeplane: ${err?.message ?? err}`);
    process.exit(1);
  },
);
