// KWOK-style simulated nodes: one process joins N fake nodes to the control plane. Each
// registers a Node, keeps its Lease renewed and its status Ready, and "runs" the pods bound
// to it: they go Running with fake IPs, finish when their run time is up (a Job's pods after
// a second; see pod-finish.ts), and deleted ones are finished after a short grace.
import { parseCIDR } from "../../api/network";
import { asApiBody, itemsOf, type Taint } from "../lib/kube-types";
import { ApiClient, type ClientStats } from "./client";
import { Fleet, type FleetStats, LEASE_NAMESPACE } from "./fleet";
import { SimMetricsReporter } from "./metrics";
import { nodeIPFor } from "./node-spec";
import type { LifetimeDefaults } from "./pod-finish";
import { PodSimulator, type PodStats, type SimNodeRef } from "./pods";

export interface SimulatedNodesOptions {
  /** apiserver URL, http:// or https:// */
  server: string;
  token?: string;
  count: number;
  namePrefix?: string;
  zones?: string[];
  capacity?: Record<string, string>;
  /** Nodes that report another capacity than `capacity`, by name (each reports it on every status update). */
  nodeCapacity?: Record<string, Record<string, string>>;
  labels?: Record<string, string>;
  taints?: Taint[];
  /** Lease renewal period (leaseDurationSeconds is 40). */
  leaseSeconds?: number;
  /** Full node status report period (the kubelet's nodeStatusReportFrequency). */
  statusSeconds?: number;
  /**
   * How often each node posts its resource-usage report (the metrics API's source; default
   * 15, as metrics-server scrapes); 0: no reports. Figures: simulated/metrics.ts.
   */
  metricsSeconds?: number;
  /** How long a bound pod takes to become Running. */
  podStartDelayMs?: number;
  /**
   * When pods' containers finish, below what a pod's or its Node's annotations say
   * (pod-finish.ts): by default only a Job's pods do, after a second, with exit code 0.
   */
  podLifetimes?: LifetimeDefaults;
  /** Index of the first node (its zone is picked by index). */
  firstIndex?: number;
  instanceType?: string;
  /** Registrations in flight at once. */
  registerConcurrency?: number;
  /** Requests in flight at once overall. */
  maxInFlight?: number;
  ca?: string;
  insecure?: boolean;
  log?: (msg: string) => void;
}

export interface SimulatedNodesStats {
  client: ClientStats;
  fleet: FleetStats;
  pods: PodStats;
  trackedPods: number;
}

export interface StopOptions {
  /** Delete the Nodes (and Leases) this simulator registered, so no NotReady ghost stays behind. */
  removeNodes?: boolean;
}

export interface SimulatedNodes {
  nodes: string[];
  stop(opts?: StopOptions): Promise<void>;
  /**
   * The node dies: its Lease and status are no longer renewed and its pods are no longer
   * started or finished (they wait, as on a crashed kubelet).
   */
  stopLeases(name: string): void;
  /** The node comes back: heartbeats at once, then it catches up with its pods. */
  resumeLeases(name: string): void;
  stats(): SimulatedNodesStats;
  /** Replaces the bearer token every request uses from now on (a renewed node credential). */
  setToken(token: string): void;
}

export async function startSimulatedNodes(opts: SimulatedNodesOptions): Promise<SimulatedNodes> {
  const count = opts.count;
  if (!Number.isInteger(count) || count < 0)
    throw new Error(`count must be a non-negative integer, got ${count}`);
  const prefix = opts.namePrefix ?? "sim-node-";
  const first = opts.firstIndex ?? 0;
  const log = opts.log ?? ((msg: string) => console.error(`simnodes: ${msg}`));
  const client = new ApiClient({
    server: opts.server,
    token: opts.token,
    ca: opts.ca,
    insecure: opts.insecure,
    maxInFlight: opts.maxInFlight ?? 64,
  });
  const refs = new Map<string, SimNodeRef>();
  let pods: PodSimulator | undefined;
  const fleet = new Fleet(client, {
    leaseSeconds: opts.leaseSeconds ?? 10,
    statusSeconds: opts.statusSeconds ?? 300,
    log,
    // the control plane allocated a node's pod CIDR: its address and its pods' come from it
    onPodCIDR: (name, podCIDR) => {
      const ref = refs.get(name);
      const cidr = parseCIDR(podCIDR);
      if (!ref || !cidr || ref.cidr) return;
      ref.cidr = cidr;
      ref.hostIP = nodeIPFor(podCIDR);
      if (ref.alive) pods?.revive(name);
    },
    // a Node's annotations set its pods' lifetimes (pod-finish.ts)
    onNode: (obj) => {
      const ref = refs.get(obj.metadata?.name ?? "");
      if (ref) ref.annotations = obj.metadata?.annotations ?? {};
    },
    template: {
      zones: opts.zones ?? ["zone-a", "zone-b", "zone-c"],
      capacity: opts.capacity ?? { cpu: "32", memory: "256Gi", pods: "110" },
      capacityByName: opts.nodeCapacity,
      labels: opts.labels ?? {},
      taints: opts.taints ?? [],
      instanceType: opts.instanceType ?? "edgeplane.sim-32x256",
    },
  });
  const names = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  names.forEach((name, i) => {
    const index = first + i;
    refs.set(name, { index, used: new Set(), alive: true });
  });
  const sims = new PodSimulator(client, refs, opts.podStartDelayMs ?? 0, log, opts.podLifetimes);
  pods = sims;
  const metricsSeconds = opts.metricsSeconds ?? 15;
  const reporter =
    metricsSeconds > 0
      ? new SimMetricsReporter(client, {
          intervalSeconds: metricsSeconds,
          // registered, living nodes
          nodes: () =>
            [...fleet.nodes.values()]
              .filter((n) => n.uid && !n.gone && refs.get(n.name)?.alive)
              .map((n) => n.name),
          runningPods: (node) => sims.runningPods(node),
          log,
        })
      : undefined;

  let stopped = false;
  const stop = async (how: StopOptions = {}) => {
    if (stopped) return;
    stopped = true;
    reporter?.stop();
    await Promise.all([fleet.stop(), sims.stop()]);
    if (how.removeNodes) {
      const removed = await fleet.remove();
      log(`removed ${removed} of ${names.length} node(s)`);
    }
    client.close();
  };

  try {
    // the pod watch first: pods bound before a node finished registering are not missed
    await sims.start();
    fleet.start();
    reporter?.start();
    let next = 0;
    const worker = async () => {
      while (next < names.length && !stopped) {
        const i = next++;
        await fleet.register(names[i], first + i);
      }
    };
    const width = Math.max(1, Math.min(opts.registerConcurrency ?? 32, names.length));
    await Promise.all(Array.from({ length: width }, worker));
  } catch (e) {
    await stop({ removeNodes: true });
    throw e;
  }

  return {
    nodes: names,
    stop: (how) => stop(how),
    stopLeases: (name) => {
      fleet.stopLeases(name);
      refs.get(name)!.alive = false;
    },
    resumeLeases: (name) => {
      fleet.resumeLeases(name);
      refs.get(name)!.alive = true;
      sims.revive(name);
    },
    setToken: (token) => client.setToken(token),
    stats: () => ({
      client: { ...client.stats, byVerb: { ...client.stats.byVerb } },
      fleet: { ...fleet.stats },
      pods: { ...sims.stats },
      trackedPods: sims.count(),
    }),
  };
}

/**
 * Deletes the Nodes carrying `label` (key=value) and their Leases: what a launcher left behind
 * when it was killed before it could remove the simulated nodes it joined.
 */
export async function removeLabelledNodes(
  opts: Pick<SimulatedNodesOptions, "server" | "token" | "ca" | "insecure">,
  label: string,
): Promise<string[]> {
  const client = new ApiClient({ ...opts, maxInFlight: 16 });
  try {
    const r = await client.request("GET", `/api/v1/nodes?labelSelector=${encodeURIComponent(label)}`);
    if (r.status !== 200) throw new Error(`listing nodes: ${r.status} ${r.json?.message ?? ""}`);
    const nodes = (itemsOf(r.json) ?? []).flatMap((item) => {
      const m = asApiBody(item)?.metadata;
      return typeof m?.name === "string" ? [{ name: m.name, uid: m.uid }] : [];
    });
    await Promise.all(
      nodes.map(async ({ name, uid }) => {
        const body = { apiVersion: "v1", kind: "DeleteOptions", preconditions: { uid } };
        await client.request("DELETE", `/api/v1/nodes/${name}`, body);
        await client.request(
          "DELETE",
          `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases/${name}`,
        );
      }),
    );
    return nodes.map((n) => n.name);
  } finally {
    client.close();
  }
}
