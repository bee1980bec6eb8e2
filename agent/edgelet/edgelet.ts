// The node agent, assembled: join (credentials, Node registration, podCIDR
// and CNI config), heartbeats (Lease and node status), the runtime relist,
// the pod source feeding the pod workers, and housekeeping of orphans.
import { METRICS_REPORT_PREFIX } from "../../api/wire/metrics";
import { CriClient } from "../cri/client";
import type { Node, NodeCondition, NodeStatus } from "../lib/kube-types";
import { objectEventRecorder } from "../network/events";
import { type NodeNetwork, startNodeNetwork } from "../network/network";
import { findUplink, type PodNetwork, podMTU, startPodNetwork } from "../network/routes";
import { readNetworkSettings } from "../network/settings";
import { startTunnel } from "../tunnel/tunnel";
import { Api, sleep } from "./api";
import { Backoff } from "./backoff";
import { ensureQosCgroups, flushCgroupRemovals, sweepPodCgroups } from "./cgroups";
import { ensureCniConfig } from "./cni";
import type { EdgeletConfig } from "./config";
import type { NodeContext } from "./context";
import { StaticCpuManager } from "./cpu-manager";
import { CredentialRenewer, obtainCredentials } from "./credentials";
import { eventRecorder } from "./events";
import { ImagePullRecords } from "./image-pulls";
import { ImageManager } from "./images";
import { LeaseKeeper } from "./lease";
import { type ContainerLocation, locateContainer, locateSandbox } from "./lookup";
import { createMergePatch } from "./merge-patch";
import { UsageCollector } from "./metrics";
import { rotateNodeCertificate } from "./node-certificate";
import {
  capacity,
  ensureCSINode,
  type Health,
  machineInfo,
  type NodeFacts,
  nodeIP,
  nodeStatus,
  registerNode,
  waitForPodCIDR,
} from "./node-status";
import { PodSource } from "./pod-source";
import { PodWorkers } from "./pod-workers";
import { ProbeManager } from "./probes";
import { RuntimeCache } from "./runtime-cache";
import { StatusManager } from "./status-manager";

export interface Edgelet {
  nodeName: string;
  node: Node;
  workers: PodWorkers;
  cache: RuntimeCache;
  /** For the streaming tunnel: a container's CRI id and log path. */
  locate(
    namespace: string,
    pod: string,
    container: string,
    previous?: boolean,
  ): ContainerLocation | undefined;
  /** For port-forward: the pod's ready sandbox. */
  locateSandbox(namespace: string, pod: string): ReturnType<typeof locateSandbox>;
  cri: CriClient;
  network?: NodeNetwork;
  /** the pod network across nodes (undefined with backend none) */
  podNetwork?: PodNetwork;
  podCIDR: string;
  stop(): Promise<void>;
}

/** The Node condition the network proxier reports: whether the node's nftables rules are in place. */
export const NETWORK_CONDITION = "NetworkRulesApplied";

const DEFAULT_SANDBOX_IMAGE = "127.0.0.1:5000/edgeplane/pause:1";

async function sandboxImageOf(cri: CriClient, override?: string): Promise<string> {
  if (override) return override;
  try {
    const st = await cri.status(true);
    const cfg = JSON.parse(st.info?.config ?? "{}");
    if (typeof cfg.sandboxImage === "string" && cfg.sandboxImage) return cfg.sandboxImage;
  } catch {}
  return DEFAULT_SANDBOX_IMAGE;
}

/** Registers the node, retrying with backoff while the control plane is unreachable or refuses. */
async function registerWithRetry(
  api: Api,
  facts: NodeFacts,
  podCIDR: string | undefined,
  log: (m: string) => void,
): Promise<Node> {
  for (let delay = 500; ; delay = Math.min(delay * 2, 10_000)) {
    try {
      return await registerNode(api, facts, podCIDR);
    } catch (e) {
      log(`registering node ${facts.name}: ${(e as Error).message}; retrying in ${delay} ms`);
      await sleep(delay);
    }
  }
}

export async function startEdgelet(
  cfg: EdgeletConfig,
  log: (m: string) => void = (m) => console.error(`edgelet: ${m}`),
): Promise<Edgelet> {
  const creds = await obtainCredentials(cfg, log);
  const tls = { ca: cfg.ca, insecure: cfg.insecure, cert: creds.cert, key: creds.key };
  const api = new Api({ server: cfg.server, token: creds.token, ...tls });
  // a node credential is renewed at ~80% of its life; each client (and the tunnel, on its next
  // connect) takes the new one. A client certificate rotates itself (node-certificate.ts).
  const renewer = new CredentialRenewer(cfg, creds, api, log);
  renewer.start();
  const cri = new CriClient({ endpoint: cfg.containerdSocket });
  // the runtime; its network is ready once the CNI config below is written
  await cri.waitReady(60_000, 200, ["RuntimeReady"]);
  const version = await cri.version();
  const runtimeVersion = `${version.runtime_name}://${version.runtime_version}`;
  const machine = machineInfo();
  const facts: NodeFacts = {
    name: cfg.nodeName,
    ip: nodeIP(cfg.nodeIP),
    machine,
    runtimeVersion,
    labels: cfg.labels,
  };
  let node = await registerWithRetry(api, facts, cfg.podCIDR, log);
  await ensureCSINode(api, node).catch((e) => log(`csinode ${cfg.nodeName}: ${(e as Error).message}`));
  // the pod CIDR: the agent's own (--pod-cidr), else the one the control plane allocates
  let podCIDR: string;
  if (cfg.podCIDR) podCIDR = cfg.podCIDR;
  else if (node.spec?.podCIDR) podCIDR = node.spec.podCIDR;
  else ({ podCIDR, node } = await waitForPodCIDR(api, cfg.nodeName, log));
  if (cfg.podCIDR && node.spec?.podCIDR && node.spec.podCIDR !== cfg.podCIDR)
    log(
      `--pod-cidr ${cfg.podCIDR} differs from the Node's podCIDR ${node.spec.podCIDR}: pods get ${cfg.podCIDR}`,
    );
  const network = await readNetworkSettings(api, log);
  const backend = cfg.podNetwork ?? network.backend;
  const uplink = backend === "none" ? undefined : await findUplink(facts.ip);
  const cni = {
    podCIDR,
    ipamDir: cfg.cniIpamDir,
    // the agent masquerades itself (agent/network/masquerade.ts) when it runs the pod network
    ipMasq: backend === "none",
    mtu: uplink ? podMTU(backend, uplink.mtu) : undefined,
    bridge: cfg.cniBridge,
  };
  if (ensureCniConfig(cfg.cniConfDir, cni))
    log(`wrote CNI config for podCIDR ${podCIDR}${cni.mtu ? ` (mtu ${cni.mtu})` : ""}`);
  ensureQosCgroups(cfg.cgroupRoot, log);
  log(
    `node ${cfg.nodeName} registered (IP ${facts.ip}, podCIDR ${podCIDR}, pod network ${backend}, runtime ${runtimeVersion}, credentials from ${creds.source})`,
  );
  const podNetwork =
    backend === "none" || !uplink
      ? undefined
      : await startPodNetwork({
          api,
          nodeName: cfg.nodeName,
          nodeIP: facts.ip,
          podCIDR,
          backend,
          settings: network,
          uplink,
          log,
        });

  // heartbeats
  const abort = new AbortController();
  const lease = new LeaseKeeper(api, cfg.nodeName, node.metadata?.uid);
  let lastConds: NodeCondition[] = node.status?.conditions ?? [];
  let knownStatus: NodeStatus = node.status ?? {};
  const runtimeHealth = async (): Promise<Health> => {
    try {
      const st = await cri.status(false, { timeoutMs: 5000 });
      const conds = st.status?.conditions ?? [];
      const rr = conds.find((c) => c.type === "RuntimeReady");
      const nr = conds.find((c) => c.type === "NetworkReady");
      const message = [rr, nr]
        .filter((c) => c && !c.status)
        .map((c) => `${c?.type}=false reason:${c?.reason} message:${c?.message}`)
        .join("; ");
      return { runtimeReady: !!rr?.status, networkReady: !!nr?.status, message: message || undefined };
    } catch (e) {
      return {
        runtimeReady: false,
        networkReady: false,
        message: `container runtime is down: ${(e as Error).message}`,
      };
    }
  };
  let postedReady: boolean | undefined;
  /** the network proxier's condition, once it has one */
  let networkCondition: { type: string; status: string; reason: string; message: string } | undefined;
  const postStatus = async () => {
    const health = await runtimeHealth();
    postedReady = health.runtimeReady && health.networkReady;
    let images: { names: string[]; sizeBytes: number }[] = [];
    try {
      images = (await cri.listImages())
        .map((i) => ({ names: [...i.repo_digests, ...i.repo_tags], sizeBytes: i.size }))
        .filter((i) => i.names.length);
    } catch {}
    const status = nodeStatus(
      facts,
      health,
      images,
      lastConds,
      new Date(),
      networkCondition ? [networkCondition] : [],
    );
    const patch = createMergePatch(knownStatus, status) ?? { conditions: status.conditions };
    const r = await api.mergePatch(`/api/v1/nodes/${encodeURIComponent(cfg.nodeName)}/status`, {
      status: patch,
    });
    if (r.status === 200 && r.json) {
      node = r.json as Node; // the patched Node
      knownStatus = node.status ?? status;
      lastConds = status.conditions;
    } else if (r.status === 404) {
      log("node object is gone: registering again");
      node = await registerNode(api, facts, podCIDR);
      knownStatus = node.status ?? {};
    } else log(`node status: ${r.status} ${r.json?.message ?? ""}`);
  };
  await postStatus();
  await lease.renew().catch((e) => log(`lease: ${(e as Error).message}`));
  const heartbeat = async (every: number, fn: () => Promise<void>, what: string) => {
    while (!abort.signal.aborted) {
      await sleep(every * 1000, abort.signal);
      if (abort.signal.aborted) return;
      await fn().catch((e) => log(`${what}: ${(e as Error).message}`));
    }
  };
  // a change of runtime readiness is reported at once, not at the next period
  const watchHealth = async () => {
    const h = await runtimeHealth();
    if (h.runtimeReady && h.networkReady) {
      if (postedReady === false) await postStatus();
    } else if (postedReady !== false) await postStatus();
  };
  const loops = [
    heartbeat(cfg.leaseSeconds, () => lease.renew(), "lease"),
    heartbeat(cfg.statusSeconds, postStatus, "node status"),
    heartbeat(2, watchHealth, "runtime health"),
  ];

  // Services, cluster DNS and NetworkPolicy (kube-proxy, a node-local CoreDNS and a policy agent)
  let nodeNet: NodeNetwork | undefined;
  // a client of its own: its five watches must not queue behind (or hold up) the pods' one
  const netApi = new Api({
    server: cfg.server,
    token: creds.token,
    ...tls,
    maxWatches: 8,
  });
  renewer.add(netApi);
  if (cfg.proxy) {
    try {
      nodeNet = await startNodeNetwork({
        client: netApi,
        nodeName: cfg.nodeName,
        nodeIP: facts.ip,
        podCIDR,
        server: cfg.server,
        table: cfg.nftTable,
        dnsPort: cfg.clusterDnsPort,
        relayPort: cfg.apiserverRelayPort,
        localhostNodePorts: cfg.localhostNodePorts,
        log: (m) => log(`network: ${m}`),
        event: objectEventRecorder(netApi, cfg.nodeName, log),
        onHealth: (ok, message) => {
          networkCondition = {
            type: NETWORK_CONDITION,
            status: ok ? "True" : "False",
            reason: ok ? "RulesApplied" : "RulesNotApplied",
            message,
          };
          postStatus().catch((e) => log(`node status: ${(e as Error).message}`));
        },
      });
    } catch (e) {
      log(`network: not started: ${(e as Error).message}`);
    }
  } else log("network: --proxy off: no Services, cluster DNS or NetworkPolicy on this node");

  // pods
  let workers!: PodWorkers;
  const events = eventRecorder(api, cfg.nodeName, log);
  const cache = new RuntimeCache(cri, cfg.nodeName, (uid) => workers?.sync(uid), log);
  const probes = new ProbeManager(cri, (uid, _id, kind, ok, output) => {
    if (!ok) {
      const pod = source.pods.get(uid);
      if (pod)
        events(
          pod,
          "Warning",
          "Unhealthy",
          `${kind[0]?.toUpperCase()}${kind.slice(1)} probe failed: ${output}`.slice(0, 1024),
        );
    }
    workers?.sync(uid);
  });
  const cap = capacity(machine);
  const cpuManager =
    cfg.cpuManagerPolicy === "static" ? new StaticCpuManager(cri, machine.cpus, [0], log) : undefined;
  const ctx: NodeContext = {
    nodeName: cfg.nodeName,
    hostIP: facts.ip,
    hostHostname: machine.hostname,
    root: cfg.root,
    cgroupRoot: cfg.cgroupRoot,
    sandboxImage: await sandboxImageOf(cri, cfg.podInfraImage),
    memoryCapacity: machine.memoryBytes,
    allocatable: { cpu: cap.cpu as string, memory: cap.memory as string, pods: cap.pods as string },
    cri,
    api,
    cache,
    images: new ImageManager(cri, api, events, undefined, new ImagePullRecords(`${cfg.root}/image-pulls`)),
    probes,
    crashBackoff: new Backoff(),
    events,
    log,
    requestSync: (uid, afterMs) => workers.sync(uid, afterMs),
    onContainerCreated: cpuManager ? (p, c, id) => cpuManager.onContainerCreated(p, c, id) : undefined,
    onPodRemoved: cpuManager ? (uid) => cpuManager.release(uid) : undefined,
    network: nodeNet && {
      dns: () => nodeNet?.dnsSettings(),
      serviceEnv: (ns, links) => nodeNet!.serviceEnv(ns, links),
    },
  };
  ctx.images
    .ensureSandboxImage(ctx.sandboxImage)
    .catch((e) => log(`pre-pull ${ctx.sandboxImage}: ${(e as Error).message}`));
  const status = new StatusManager(api, log);
  workers = new PodWorkers(ctx, status, api);
  await cache.relist(); // adopt what is running before the first pod list
  const source = new PodSource({
    api,
    nodeName: cfg.nodeName,
    resyncMs: cfg.resyncSeconds * 1000,
    log,
    onUpdate: (kind, pod) => {
      if (kind === "remove") workers.remove(pod);
      else workers.update(pod);
    },
  });
  source.start();
  cache.start(cfg.relistMs);
  // housekeeping: runtime pods no API pod claims are torn down
  const housekeeping = async () => {
    await Promise.race([
      source.synced,
      new Promise((r) => abort.signal.addEventListener("abort", r, { once: true })),
    ]);
    while (!abort.signal.aborted) {
      for (const uid of cache.uids()) if (!source.pods.has(uid)) workers.orphan(uid);
      sweepPodCgroups(cfg.cgroupRoot, new Set([...cache.uids(), ...source.pods.keys()]));
      await sleep(10_000, abort.signal);
    }
  };
  loops.push(housekeeping());
  // the node's and its pods' CPU and memory use, for the metrics API (kubectl top, the HPA)
  if (cfg.metricsSeconds > 0) {
    const usage = new UsageCollector(cri, cfg.nodeName, cfg.metricsSeconds);
    const path = `${METRICS_REPORT_PREFIX}${encodeURIComponent(cfg.nodeName)}`;
    let lastStatus = 200;
    const report = async () => {
      const r = await usage.collect();
      if (!r) return;
      const res = await api.request("POST", path, r);
      if (res.status !== 200 && res.status !== lastStatus)
        log(`metrics report: ${res.status} ${res.json?.message ?? ""}`);
      lastStatus = res.status;
    };
    await usage.collect().catch(() => undefined); // the first sample: rates from the next one
    loops.push(heartbeat(cfg.metricsSeconds, report, "metrics report"));
  }
  // the outbound tunnel that carries kubectl logs/exec/attach/port-forward to this node
  const tunnel = startTunnel({
    server: cfg.server,
    token: () => creds.token,
    clientCertificate: () => ({ cert: creds.cert, key: creds.key }),
    nodeName: cfg.nodeName,
    lookup: {
      locate: (ns, pod, container, previous) => locateContainer(cache, ns, pod, container, previous),
      locateSandbox: (ns, pod) => locateSandbox(cache, ns, pod),
    },
    cri,
    ca: cfg.ca,
    insecure: cfg.insecure,
    log: (m) => log(`tunnel: ${m}`),
  });
  // a client certificate is renewed before it ends, over the node's own connection
  if (creds.cert)
    loops.push(
      rotateNodeCertificate(api, cfg.nodeName, creds, abort.signal, log, (cert, key) => {
        api.setClientCertificate(cert, key);
        netApi.setClientCertificate(cert, key);
      }),
    );
  return {
    nodeName: cfg.nodeName,
    get node() {
      return node;
    },
    workers,
    cache,
    locate: (ns, pod, container, previous) => locateContainer(cache, ns, pod, container, previous),
    locateSandbox: (ns, pod) => locateSandbox(cache, ns, pod),
    cri,
    network: nodeNet,
    podNetwork,
    podCIDR,
    async stop() {
      abort.abort();
      await renewer.stop();
      await nodeNet?.stop();
      netApi.close();
      await podNetwork?.stop();
      await tunnel.stop();
      await source.stop();
      cache.stop();
      probes.stopAll();
      await workers.stop();
      await Promise.allSettled(loops);
      await flushCgroupRemovals();
      cri.close();
      api.close();
    },
  };
}
