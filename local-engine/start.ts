// `npm start`: the local control plane on 127.0.0.1:8787 (EDGEPLANE_PORT), state under
// .edgeplane/, an admin kubeconfig at .edgeplane/kubeconfig. Ctrl-C stops everything.
//
// It supervises what it starts. The engine host (workerd and the front door) is started again
// when it dies (workerd itself is restarted by the engine host). Nothing outlives this process:
// SIGINT or SIGTERM stop everything in order; the engine host exits when this process dies
// however it dies (it watches a pipe from here, devserver.ts), and this process stops when its
// launcher (npm) goes. A port already taken is one line and exit code 1.
import { existsSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { type DevServer, ROOT, startDevServer } from "./devserver";
import { portInUse } from "./port-owner";

const port = Number(process.env.EDGEPLANE_PORT ?? 8787);
// EDGEPLANE_STATE_DIR moves it (tests use their own)
const stateDir = process.env.EDGEPLANE_STATE_DIR ?? join(ROOT, ".edgeplane");

/** Exits with one line on stderr: what a user needs, not a stack trace. */
function fail(line: string): never {
  console.error(`edgeplane: ${line}`);
  process.exit(1);
}

/** Whether `port` can be listened on (127.0.0.1), as the front door will. */
function portFree(p: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once("error", () => resolve(false));
    probe.listen(p, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}

// A signal at any point stops what was started so far: the engine runs detached, so it would
// outlive this process otherwise (it watches this process too, as a last resort).
let server: DevServer | undefined;
let stopping = false;
const stops: (() => Promise<void>)[] = [];
async function shutdown(why?: string) {
  if (stopping) return;
  stopping = true;
  console.log(`\nstopping edgeplane${why ? ` (${why})` : ""}...`);
  for (const stop of stops.reverse()) await stop().catch(() => {});
  if (!server) return; // still starting: stopped as soon as it is up
  await server.stop();
  process.exit(0);
}
process.on("SIGINT", () => void shutdown());
process.on("SIGTERM", () => void shutdown());
process.on("SIGHUP", () => void shutdown("the terminal closed"));

// `npm start` runs this in its place (exec: npm passes on SIGINT and SIGTERM to it); when npm
// itself dies (a kill -9) this process is handed to another parent: that is our cue.
const launcher = process.ppid;
setInterval(() => {
  if (process.ppid !== launcher) void shutdown(`its launcher, pid ${launcher}, is gone`);
}, 500).unref();

if (!(await portFree(port))) fail(portInUse(port));

try {
  server = await startDevServer({ stateDir, port, logLevel: process.env.EDGEPLANE_LOG_LEVEL ?? "info" });
} catch (e) {
  if (stopping) process.exit(0);
  const message = String((e as Error)?.message ?? e);
  // the engine's own one line (a port taken meanwhile), else the first line of the failure
  const inUse = /^port \d+ is in use.*$/m.exec(message)?.[0];
  fail(inUse ?? message.split("\n")[0]);
}
if (stopping) {
  await server.stop();
  process.exit(0);
}
console.log(`
edgeplane control plane is up at ${server.url}
  kubeconfig: ${server.kubeconfigPath}  (the same admin by client certificate: ${server.x509KubeconfigPath})
  try:        export KUBECONFIG=${server.kubeconfigPath}; kubectl get namespaces
`);
superviseEngine(server);

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

// one local node agent: containerd when it is reachable (or asked for), else simulated;
// EDGEPLANE_HOSTS=N: N real nodes, each in a network namespace of its own (local-engine/hosts)
const socket = "/run/edgeplane/containerd.sock";
const wanted = process.env.EDGEPLANE_RUNTIME;
const runtime = wanted ?? (existsSync(socket) ? "containerd" : "simulated");
const hostCount = Number(process.env.EDGEPLANE_HOSTS ?? 0);
if (hostCount > 0) {
  const { launchHosts } = await import("./hosts/launch");
  const hosts = await launchHosts({ url: server.url, token: server.token }, hostCount);
  stops.push(() => hosts.stop());
} else if (runtime === "containerd") {
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
  if (made.status !== 201) fail(`creating a bootstrap token failed: ${made.status} ${await made.text()}`);
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

/**
 * Starts the engine host again whenever it exits without being asked to (a crash, a kill -9),
 * after a backoff that grows with each exit in a row; gives up (exit 1) after a run of failed
 * starts. The nodes stay: they reconnect as they would to any apiserver that went away.
 */
function superviseEngine(s: DevServer) {
  const MAX_FAILED = 5;
  let inRow = 0;
  let upSince = Date.now();
  const watch = () =>
    s.child.once("exit", async (code, signal) => {
      if (stopping) return;
      if (Date.now() - upSince > 60_000) inRow = 0;
      for (let failed = 0; ; ) {
        const wait = Math.min(250 * 2 ** inRow++, 8000);
        console.error(
          `edgeplane: the engine host exited (${signal ?? `code ${code}`}); starting it again in ${wait} ms`,
        );
        await new Promise((r) => setTimeout(r, wait));
        if (stopping) return;
        try {
          await s.respawn();
          upSince = Date.now();
          console.error("edgeplane: the engine host is up again");
          return watch();
        } catch (e) {
          if (stopping) return;
          const line = String((e as Error).message).split("\n")[0];
          if (++failed >= MAX_FAILED) fail(`the engine host would not start again: ${line}`);
        }
      }
    });
  watch();
}
