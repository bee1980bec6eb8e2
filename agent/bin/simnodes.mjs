#!/usr/bin/env node
// Joins N simulated (KWOK-style) nodes to a control plane and keeps them alive until
// SIGINT/SIGTERM. Nothing is deleted on exit: the nodes go NotReady once their leases lapse.
//   node agent/bin/simnodes.mjs --server URL --token T --count N [--prefix sim-node-]
//     [--zones a,b,c] [--lease-seconds 10] [--pod-start-delay-ms 0] [--first-index 0]
//     [--kubeconfig FILE: server, token, CA from it] [--ca FILE] [--insecure] [--stats-seconds S]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { register } from "tsx/esm/api";

const { values } = parseArgs({
  options: {
    server: { type: "string" },
    token: { type: "string" },
    kubeconfig: { type: "string" },
    count: { type: "string", default: "1" },
    prefix: { type: "string", default: "sim-node-" },
    zones: { type: "string" },
    "lease-seconds": { type: "string", default: "10" },
    "pod-start-delay-ms": { type: "string", default: "0" },
    "first-index": { type: "string", default: "0" },
    "stats-seconds": { type: "string", default: "0" },
    ca: { type: "string" },
    insecure: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});

if (values.help) {
  console.log(
    "usage: simnodes.mjs --server URL --token T --count N [--prefix P] [--zones a,b] [--lease-seconds S]",
  );
  process.exit(0);
}

/** server and token of the current context of a kubeconfig (token users only). */
function fromKubeconfig(file) {
  const text = readFileSync(file, "utf8");
  const server = /^\s*server:\s*(\S+)/m.exec(text)?.[1];
  const token = /^\s*token:\s*(\S+)/m.exec(text)?.[1];
  const caData = /^\s*certificate-authority-data:\s*(\S+)/m.exec(text)?.[1];
  return { server, token, ca: caData ? Buffer.from(caData, "base64").toString("utf8") : undefined };
}

const kc = values.kubeconfig ? fromKubeconfig(values.kubeconfig) : {};
const server = values.server ?? process.env.EDGEPLANE_SERVER ?? kc.server;
const token = values.token ?? process.env.EDGEPLANE_TOKEN ?? kc.token;
const count = Number(values.count);
if (!server || !Number.isInteger(count) || count < 0) {
  console.error("simnodes: --server URL and a non-negative --count N are required");
  process.exit(2);
}

register();
const { startSimulatedNodes } = await import("../simulated/simnodes.ts");

const started = Date.now();
const sim = await startSimulatedNodes({
  server,
  token,
  count,
  namePrefix: values.prefix,
  zones: values.zones ? values.zones.split(",").filter(Boolean) : undefined,
  leaseSeconds: Number(values["lease-seconds"]),
  podStartDelayMs: Number(values["pod-start-delay-ms"]),
  firstIndex: Number(values["first-index"]),
  ca: values.ca ? readFileSync(values.ca, "utf8") : kc.ca,
  insecure: values.insecure,
});
const shown = sim.nodes.length > 10 ? [...sim.nodes.slice(0, 5), "...", ...sim.nodes.slice(-2)] : sim.nodes;
console.log(
  `simnodes: ${sim.nodes.length} simulated node(s) joined ${server} in ${Date.now() - started} ms: ${shown.join(" ")}`,
);

let statsTimer;
const statsSeconds = Number(values["stats-seconds"]);
if (statsSeconds > 0) {
  let cpu = process.cpuUsage();
  let at = Date.now();
  let last = sim.stats();
  statsTimer = setInterval(() => {
    const now = Date.now();
    const used = process.cpuUsage(cpu);
    const s = sim.stats();
    const secs = (now - at) / 1000;
    const pct = ((used.user + used.system) / 1000 / (now - at)) * 100;
    console.log(
      `simnodes: cpu ${pct.toFixed(1)}% renewals/s ${((s.fleet.renewals - last.fleet.renewals) / secs).toFixed(1)} ` +
        `requests/s ${((s.client.requests - last.client.requests) / secs).toFixed(1)} pods ${s.trackedPods} ` +
        `started ${s.pods.started} deleted ${s.pods.deleted} failures ${s.client.failures + s.fleet.renewFailures}`,
    );
    cpu = process.cpuUsage();
    at = now;
    last = s;
  }, statsSeconds * 1000);
}

let stopping = false;
const shutdown = async (signal) => {
  if (stopping) return;
  stopping = true;
  clearInterval(statsTimer);
  console.log(`simnodes: ${signal}: stopping (nodes are left registered)`);
  await sim.stop();
  process.exit(0);
};
process.on("SIGINT", () => void shutdown("SIGINT"));
process.on("SIGTERM", () => void shutdown("SIGTERM"));
