// The relay process of one host, started inside its network namespace (nsenter --net):
// argv[2] is the JSON list of routes ({port, socket}). It says "ready" on stdout once every
// port listens, and exits with its parent's guard (SIGTERM).
import { hostRelays, type RelayRoute } from "./relay";

const routes = JSON.parse(process.argv[2] ?? "[]") as RelayRoute[];
hostRelays(routes).then(
  () => process.stdout.write("ready\n"),
  (e) => {
    process.stderr.write(`relay: ${(e as Error).message}\n`);
    process.exit(1);
  },
);
process.on("SIGTERM", () => process.exit(0));
