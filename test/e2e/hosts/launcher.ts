// A launcher the hosts test kills with SIGKILL: starts hosts against the server named in argv
// (url, token, prefix), prints their run's ledger file, then waits to be killed.
import { startHosts } from "../../../local-engine/hosts/hosts";

const [url, token, prefix] = process.argv.slice(2);
const hosts = await startHosts({
  count: 1,
  server: { url: url!, token: token! },
  namePrefix: prefix,
  log: (m) => process.stderr.write(`${m}\n`),
});
process.stdout.write(
  `${JSON.stringify({ ledger: hosts.ledgerFile, runId: hosts.runId, netns: hosts.hosts[0]!.netns })}\n`,
);
setInterval(() => {}, 1 << 30);
