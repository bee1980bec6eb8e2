// `npm start`: the local control plane on 127.0.0.1:8787 (EDGEPLANE_PORT), state under
// .edgeplane/, an admin kubeconfig at .edgeplane/kubeconfig. Ctrl-C stops everything.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type DevServer, ROOT, startDevServer } from "./devserver";

const port = Number(process.env.EDGEPLANE_PORT ?? 8787);
// EDGEPLANE_STATE_DIR moves it (tests use their own)
const stateDir = process.env.EDGEPLANE_STATE_DIR ?? join(ROOT, ".edgeplane");

// A signal at any point stops what was started so far: the engine runs detached, so it
// would outlive this process otherwise.
let server: DevServer | undefined;
let stopping = false;
const stops: (() => Promise<void>)[] = [];
async function shutdown() {
  if (stopping) return;
  stopping = true;
  console.log("\nstopping edgeplane...");
  for (const stop of stops.reverse()) await stop().catch(() => {});
  if (!server) return; // still starting: stopped as soon as it is up
  await server.stop();
  process.exit(0);
}
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);

server = await startDevServer({ stateDir, port, logLevel: process.env.EDGEPLANE_LOG_LEVEL ?? "info" });
if (stopping) {
  await server.stop();
  process.exit(0);
}
console.log(`
edgeplane control plane is up at ${server.url}
  kubeconfig: ${server.kubeconfigPath}
  try:        export KUBECONFIG=${server.kubeconfigPath}; kubectl get namespaces
`);

// The simulated nodes a start joins carry this label and leave with it (stop removes them); a
// start also removes those a killed launcher could not, so no NotReady ghost gets pods.
const JOINED_BY = { "sim.edgeplane.dev/joined-by": "npm-start" };
{
  const { removeLabelledNodes } = await import("../agent/simulated/simnodes");
  const ghosts = await removeLabelledNodes(
    { server: server.url, token: server.token },
    "sim.edgeplane.dev/joined-by=npm-start",
  );
  if (ghosts.length) console.log(`removed ${ghosts.length} simulated node(s) an earlier start left behind`);
}

const simulated = Number(process.env.EDGEPLANE_NODES ?? 0);
if (simulated > 0) {
  const { startSimulatedNodes } = await import("../agent/simulated/simnodes");
  const sim = await startSimulatedNodes({
    server: server.url,
    token: server.token,
    count: simulated,
    labels: JOINED_BY,
  });
  stops.push(() => sim.stop({ removeNodes: true }));
  console.log(
    `joined ${sim.nodes.length} simulated node(s): ${sim.nodes.slice(0, 5).join(", ")}${sim.nodes.length > 5 ? ", ..." : ""}`,
  );
}

// one local node agent: containerd when it is reachable (or asked for), else simulated
const socket = "/run/edgeplane/containerd.sock";
const wanted = process.env.EDGEPLANE_RUNTIME;
const runtime = wanted ?? (existsSync(socket) ? "containerd" : "simulated");
if (runtime === "containerd") {
  const { parseConfig } = await import("../agent/edgelet/config");
  const { startEdgelet } = await import("../agent/edgelet/edgelet");
  // the local node joins as any node would: a bootstrap token exchanged for its own credential
  const { bootstrapTokenSecret, randomBootstrapToken } = await import("../api/bootstrap-token");
  const { id, secret, token } = randomBootstrapToken();
  const made = await fetch(`${server.url}/api/v1/namespaces/kube-system/secrets`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body: JSON.stringify(bootstrapTokenSecret(id, secret, { ttlSeconds: 3600 })),
  });
  if (made.status !== 201)
    throw new Error(`creating a bootstrap token failed: ${made.status} ${await made.text()}`);
  const cfg = parseConfig(["join", "--server", server.url, "--token", token, "--runtime", "containerd"]);
  const agent = await startEdgelet(cfg);
  stops.push(() => agent.stop());
  console.log(
    `*** local node ${agent.nodeName} joined with the CONTAINERD runtime (real containers via ${socket}) ***`,
  );
} else {
  const { startSimulatedNodes } = await import("../agent/simulated/simnodes");
  const local = await startSimulatedNodes({
    server: server.url,
    token: server.token,
    count: 1,
    namePrefix: "local-",
    labels: JOINED_BY,
  });
  stops.push(() => local.stop({ removeNodes: true }));
  console.log(
    `*** local node ${local.nodes[0]} joined with the SIMULATED runtime (no containers run; ${
      wanted ? "EDGEPLANE_RUNTIME=simulated" : `containerd not found at ${socket}: npm run setup:containerd`
    }) ***`,
  );
}

server.child.on("exit", (code) => {
  if (!stopping) {
    console.error(`the control plane engine (workerd) exited (${code})`);
    process.exit(1);
  }
});
