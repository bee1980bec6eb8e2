// `npm start`: the local control plane on 127.0.0.1:8787 (EDGEPLANE_PORT), state under
// .edgeplane/, an admin kubeconfig at .edgeplane/kubeconfig. Ctrl-C stops everything.
import { join } from "node:path";
import { ROOT, startDevServer } from "./lib/devserver.mjs";

const port = Number(process.env.EDGEPLANE_PORT ?? 8787);
const stateDir = join(ROOT, ".edgeplane");

const server = await startDevServer({ stateDir, port, logLevel: process.env.EDGEPLANE_LOG_LEVEL ?? "info" });
console.log(`
edgeplane control plane is up at ${server.url}
  kubeconfig: ${server.kubeconfigPath}
  try:        export KUBECONFIG=${server.kubeconfigPath}; kubectl get namespaces
`);

let stopping = false;
async function shutdown() {
  if (stopping) return;
  stopping = true;
  console.log("\nstopping edgeplane...");
  await server.stop();
  process.exit(0);
}
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
server.child.on("exit", (code) => {
  if (!stopping) {
    console.error(`wrangler dev exited (${code})`);
    process.exit(1);
  }
});
