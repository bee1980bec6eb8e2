// The guard of a run of hosts: started detached by the launcher with the run's ledger, it
// holds the read end of a pipe from the launcher. When that pipe closes, whether the launcher
// stopped the run or died (even by SIGKILL), the guard undoes everything the ledger lists and
// exits: nothing of the run outlives its launcher. It also serves the machine's ends of the
// relays (relay.ts), in a process of their own: a launcher busy with other work (a test
// waiting on a synchronous child) never stalls the hosts' traffic to the control plane.
import { undo } from "./cleanup";
import { readLedger } from "./ledger";
import { machineRelays, type RelayRoute } from "./relay";

const file = process.argv[2];
if (!file) {
  process.stderr.write("usage: guard-main.ts <ledger file> [<relay routes JSON>]\n");
  process.exit(2);
}
const routes = JSON.parse(process.argv[3] ?? "[]") as RelayRoute[];
// the launcher reads our stderr while it lives; once it is gone a write must not kill us
process.stderr.on("error", () => {});
const log = (m: string) => process.stderr.write(`hosts guard: ${m}\n`);
let cleaning = false;
async function cleanup(): Promise<void> {
  if (cleaning) return;
  cleaning = true;
  try {
    await undo(readLedger(file!), log);
  } catch (e) {
    log(`cleanup failed: ${(e as Error).stack ?? e}`);
  }
  process.exit(0);
}
process.stdin.on("end", cleanup);
process.stdin.on("close", cleanup);
process.stdin.on("error", cleanup);
process.stdin.resume();
machineRelays(routes).then(
  () => process.stdout.write("ready\n"),
  (e) => {
    log(`relays: ${(e as Error).message}`);
    void cleanup();
  },
);
process.stdout.on("error", () => {});
process.on("SIGTERM", cleanup);
process.on("SIGINT", cleanup);
process.on("SIGHUP", cleanup);
