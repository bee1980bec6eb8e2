// `npm start`: the local control plane on 127.0.0.1:8787 (EDGEPLANE_PORT), state under
// .edgeplane/, an admin kubeconfig at .edgeplane/kubeconfig. Ctrl-C stops everything.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ROOT, startDevServer } from "./lib/devserver.mjs";

const port = Number(process.env.EDGEPLANE_PORT ?? 8787);
// EDGEPLANE_STATE_DIR moves it (tests use their own)
const stateDir = process.env.EDGEPLANE_STATE_DIR ?? join(ROOT, ".edgeplane");

// A signal at any point stops what was started so far: the engine runs detached, so it
// would outlive this process otherwise.
let server;
let stopping = false;
const stops = [];
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

// TypeScript parts (simulated nodes, edgelet) load through tsx
const { register } = await import("tsx/esm/api");
register();

const simulated = Number(process.env.EDGEPLANE_NODES ?? 0);
if (simulated > 0) {
  const { startSimulatedNodes } = await import("../agent/simulated/simnodes.ts");
  const sim = await startSimulatedNodes({ server: server.url, token: server.token, count: simulated });
  stops.push(() => sim.stop());
  console.log(
    `joined ${sim.nodes.length} simulated node(s): ${sim.nodes.slice(0, 5).join(", ")}${sim.nodes.length > 5 ? ", ..." : ""}`,
  );
}

// one local node agent: containerd when it is reachable (or asked for), else simulated;
// EDGEPLANE_HOSTS=N: N real nodes, each in a network namespace of its own (local-engine/hosts)
const socket = "/run/edgeplane/containerd.sock";
const wanted = process.env.EDGEPLANE_RUNTIME;
const runtime = wanted ?? (existsSync(socket) ? "containerd" : "simulated");
const hostCount = Number(process.env.EDGEPLANE_HOSTS ?? 0);
if (hostCount > 0) {
  const { launchHosts } = await import("../local-engine/hosts/launch.ts");
  const hosts = await launchHosts({ url: server.url, token: server.token }, hostCount);
  stops.push(() => hosts.stop());
} else if (runtime === "containerd") {
  const { parseConfig } = await import("../agent/edgelet/config.ts");
  const { startEdgelet } = await import("../agent/edgelet/edgelet.ts");
  // the local node joins as any node would: a bootstrap token exchanged for its own credential
  const { bootstrapTokenSecret, randomBootstrapToken } = await import("../workers/authn/bootstrap.ts");
  const { id, secret, token } = randomBootstrapToken();
  const made = await fetch(`${server.url}/api/v1/namespaces/kube-system/secrets`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body: JSON.stringify(bootstrapTokenSecret(id, secret, { ttlSeconds: 3600 })),
  });
  if (made.status !== 201)
    throw new Error(`creating a bootstrap token failed: ${made.status} ${await made.text()}`);
  // one node on the machine's own containerd and network namespace, whose CNI bridge
  // (edgeplane0 on 10.88.0.0/16, scripts/setup-containerd.sh) every agent using that containerd
  // shares: its pods keep that subnet (outside the cluster CIDR, so no simulated node's pods
  // collide with them) and it programs no pod network there. EDGEPLANE_HOSTS gives each real
  // node a namespace, a containerd and an allocated podCIDR of its own.
  const cfg = parseConfig([
    "join",
    "--server",
    server.url,
    "--token",
    token,
    "--runtime",
    "containerd",
    "--pod-cidr",
    "10.88.0.0/16",
    "--cni-ipam-dir",
    "/var/lib/edgeplane/cni/networks",
    "--pod-network",
    "none",
  ]);
  const agent = await startEdgelet(cfg);
  stops.push(() => agent.stop());
  console.log(
    `*** local node ${agent.nodeName} joined with the CONTAINERD runtime (real containers via ${socket}) ***`,
  );
} else {
  const { startSimulatedNodes } = await import("../agent/simulated/simnodes.ts");
  const local = await startSimulatedNodes({
    server: server.url,
    token: server.token,
    count: 1,
    namePrefix: "local-",
  });
  stops.push(() => local.stop());
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
