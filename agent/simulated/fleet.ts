// The node side of the simulator: registration, Lease renewal and node status for every
// simulated node, driven by one 100 ms tick over all nodes (no timer per node). Renewals
// are phase-spread so N nodes make about N / leaseSeconds renewals a second, evenly.

import { Informer } from "../lib/informer";
import { type ApiBody, asApiBody, isObject, type Lease, stringData } from "../lib/kube-types";
import { type ApiClient, type Lane, type Reply, withRetry } from "./client";
import {
  microTime,
  type NodeTemplate,
  nodeIPFor,
  nodeObject,
  nodeStatus,
  rfc3339,
  statusIsHealthy,
} from "./node-spec";

export const LEASE_NAMESPACE = "kube-node-lease";
const LEASE_DURATION_SECONDS = 40;
const TICK_MS = 100;

export interface SimNode {
  name: string;
  index: number;
  uid?: string;
  lease?: Lease;
  leaseDue: number;
  statusDue: number;
  /** When the reported conditions last changed. */
  since: string;
  leasesStopped: boolean;
  gone: boolean;
  /** resourceVersion of our last status write: older watch events are not news. */
  statusRV?: string;
  busyLease: boolean;
  busyStatus: boolean;
  /** the pod CIDR the control plane allocated (none yet: no InternalIP, no pods started) */
  podCIDR?: string;
  /** the InternalIP the last status posted */
  reportedIP?: string;
}

export interface FleetStats {
  registered: number;
  renewals: number;
  renewFailures: number;
  statusUpdates: number;
}

export interface FleetOptions {
  leaseSeconds: number;
  statusSeconds: number;
  template: NodeTemplate;
  log: (msg: string) => void;
  /** Every Node object the watch sees (listed, added or modified). */
  onNode?: (obj: { metadata?: { name?: string; annotations?: Record<string, string> } }) => void;
  /** a node of ours got its pod CIDR */
  onPodCIDR?: (name: string, podCIDR: string) => void;
}

const leasePath = (name?: string) =>
  `/apis/coordination.k8s.io/v1/namespaces/${LEASE_NAMESPACE}/leases${name ? `/${name}` : ""}`;

export class Fleet {
  readonly stats: FleetStats = { registered: 0, renewals: 0, renewFailures: 0, statusUpdates: 0 };
  readonly nodes = new Map<string, SimNode>();
  private timer: NodeJS.Timeout | undefined;
  private readonly watcher: Informer;
  private stopped = false;

  constructor(
    private readonly client: ApiClient,
    private readonly opts: FleetOptions,
  ) {
    this.watcher = new Informer(
      client,
      "/api/v1/nodes",
      {},
      {
        // a list may predate a registration in flight: only DELETED events and 404s retire nodes
        onList: (items) => {
          for (const item of items) {
            const obj = asApiBody(item);
            if (!obj) continue;
            opts.onNode?.(nodeView(obj));
            this.observe(obj);
          }
        },
        onEvent: (type, item) => {
          const obj = asApiBody(item);
          if (!obj) return;
          if (type !== "DELETED") opts.onNode?.(nodeView(obj));
          const n = this.nodes.get(String(obj.metadata?.name));
          if (n && type === "DELETED" && obj.metadata?.uid === n.uid) n.gone = true;
          else this.observe(obj);
        },
      },
      opts.log,
    );
  }

  get leaseMs(): number {
    return this.opts.leaseSeconds * 1000;
  }

  /** Registers one node: Node, its status, its Lease. Throws when the API refuses. */
  async register(name: string, index: number): Promise<SimNode> {
    const n: SimNode = {
      name,
      index,
      leaseDue: 0,
      statusDue: 0,
      since: rfc3339(),
      leasesStopped: false,
      gone: false,
      busyLease: true,
      busyStatus: true,
    };
    this.nodes.set(name, n);
    const t = this.opts.template;
    let r = await this.call("POST", "/api/v1/nodes", nodeObject(name, index, t), undefined, "normal");
    if (r.status === 409) r = await this.call("GET", `/api/v1/nodes/${name}`, undefined, undefined, "normal");
    if (r.status !== 200 && r.status !== 201)
      throw new Error(`register node ${name}: ${r.status} ${r.json?.message ?? ""}`);
    n.uid = r.json?.metadata?.uid;
    this.notePodCIDR(n, r.json);
    // status is dropped on create (and stale when the node was already there)
    await this.postStatus(n, true);
    n.busyStatus = false;
    await this.renew(n, true);
    n.busyLease = false;
    const now = Date.now();
    // spread the next renewals over one whole period, whatever the registration burst was
    n.leaseDue = now + Math.random() * this.leaseMs;
    n.statusDue = now + Math.random() * this.opts.statusSeconds * 1000;
    this.stats.registered++;
    return n;
  }

  start(): void {
    this.timer ??= setInterval(() => this.tick(), TICK_MS);
    this.watcher.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.watcher.stop();
  }

  /**
   * Takes the registered nodes out of the cluster (after stop): each Node (only the one this
   * fleet registered, by uid) and its Lease, a few at a time. Their pods are the pod garbage
   * collector's then, as upstream's are when a node is deleted.
   */
  async remove(concurrency = 16): Promise<number> {
    const nodes = [...this.nodes.values()].filter((n) => n.uid && !n.gone);
    let removed = 0;
    let next = 0;
    const one = async (n: SimNode) => {
      const body = { apiVersion: "v1", kind: "DeleteOptions", preconditions: { uid: n.uid } };
      const r = await this.client.request("DELETE", `/api/v1/nodes/${n.name}`, body).catch(() => undefined);
      if (r && r.status < 300) removed++;
      await this.client.request("DELETE", leasePath(n.name)).catch(() => undefined);
    };
    const worker = async () => {
      while (next < nodes.length) await one(nodes[next++]);
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, nodes.length) }, worker));
    return removed;
  }

  stopLeases(name: string): void {
    const n = this.nodes.get(name);
    if (!n) throw new Error(`no simulated node ${name}`);
    n.leasesStopped = true;
  }

  resumeLeases(name: string): void {
    const n = this.nodes.get(name);
    if (!n) throw new Error(`no simulated node ${name}`);
    n.leasesStopped = false;
    n.since = rfc3339();
    n.leaseDue = Date.now();
    n.statusDue = Date.now();
  }

  private tick(): void {
    if (this.stopped) return;
    const now = Date.now();
    for (const n of this.nodes.values()) {
      if (n.leasesStopped || n.gone) continue;
      if (!n.busyLease && now >= n.leaseDue) {
        n.busyLease = true;
        void this.renew(n, false).finally(() => (n.busyLease = false));
      }
      // a pod CIDR just allocated gives the node its InternalIP: reported at once
      const newIP = n.podCIDR !== undefined && n.reportedIP === undefined;
      if (!n.busyStatus && (now >= n.statusDue || newIP)) {
        n.busyStatus = true;
        void this.postStatus(n, false).finally(() => (n.busyStatus = false));
      }
    }
  }

  /** The pod CIDR a Node object of ours holds: taken on, and reported in its status soon. */
  private notePodCIDR(n: SimNode, obj: ApiBody | undefined): void {
    const spec = isObject(obj?.spec) ? obj.spec : {};
    const first = Array.isArray(spec.podCIDRs) ? spec.podCIDRs[0] : undefined;
    const cidr =
      typeof first === "string" ? first : typeof spec.podCIDR === "string" ? spec.podCIDR : undefined;
    if (!cidr || cidr === n.podCIDR) return;
    n.podCIDR = cidr;
    this.opts.onPodCIDR?.(n.name, cidr);
  }

  /** The node lifecycle controller marked one of ours unhealthy: say otherwise soon. */
  private observe(obj: ApiBody): void {
    const n = this.nodes.get(String(obj.metadata?.name));
    if (n?.uid && obj.metadata?.uid === n.uid) this.notePodCIDR(n, obj);
    if (!n || obj.metadata?.uid !== n.uid || n.leasesStopped || n.busyStatus) return;
    if (notNewer(obj.metadata?.resourceVersion, n.statusRV)) return;
    if (!statusIsHealthy(obj.status)) {
      const conds = isObject(obj.status) ? obj.status.conditions : undefined;
      const ready = (Array.isArray(conds) ? conds : []).map(asApiBody).find((c) => c?.type === "Ready");
      this.opts.log(
        `node ${n.name}: the API says Ready=${ready?.status ?? "<none>"} (${ready?.reason ?? ""}); reporting status again`,
      );
      n.since = rfc3339();
      n.statusDue = Math.min(n.statusDue, Date.now() + 1000 + Math.random() * 1000);
    }
  }

  /** Heartbeats of joined nodes go first; registrations of new ones queue behind them. */
  private call(
    method: string,
    path: string,
    body?: unknown,
    type?: string,
    lane: Lane = "urgent",
  ): Promise<Reply> {
    return withRetry(() => this.client.request(method, path, body, type, lane), {
      stopped: () => this.stopped,
    });
  }

  private async postStatus(n: SimNode, initial: boolean): Promise<void> {
    const ip = n.podCIDR ? nodeIPFor(n.podCIDR) : undefined;
    const status = nodeStatus(n.name, n.index, this.opts.template, rfc3339(), n.since, ip);
    try {
      const lane = initial ? "normal" : "urgent";
      const r = await this.call(
        "PATCH",
        `/api/v1/nodes/${n.name}/status`,
        { status },
        "application/merge-patch+json",
        lane,
      );
      if (r.status === 200) {
        this.stats.statusUpdates++;
        n.reportedIP = ip;
        n.statusRV = r.json?.metadata?.resourceVersion;
      } else if (r.status === 404 && !initial) n.gone = true;
      else if (initial) throw new Error(`node ${n.name} status: ${r.status} ${r.json?.message ?? ""}`);
      else this.opts.log(`node ${n.name} status: ${r.status} ${r.json?.message ?? ""}`);
    } catch (e) {
      if (initial) throw e;
      if (!this.stopped) this.opts.log(`node ${n.name} status: ${(e as Error).message}`);
    }
    n.statusDue = Date.now() + this.opts.statusSeconds * 1000 * (0.9 + Math.random() * 0.2);
  }

  private leaseBody(n: SimNode): Lease {
    const spec = {
      holderIdentity: n.name,
      leaseDurationSeconds: LEASE_DURATION_SECONDS,
      renewTime: microTime(),
    };
    if (n.lease) return { ...n.lease, spec: { ...n.lease.spec, ...spec } };
    return {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        name: n.name,
        namespace: LEASE_NAMESPACE,
        ...(n.uid ? { ownerReferences: [{ apiVersion: "v1", kind: "Node", name: n.name, uid: n.uid }] } : {}),
      },
      spec,
    };
  }

  /** Updates the Lease (creating it when missing), as the kubelet's lease controller does. */
  private async renew(n: SimNode, initial: boolean): Promise<void> {
    let ok = false;
    try {
      for (let attempt = 0; attempt < 3 && !ok; attempt++) {
        const lane = initial ? "normal" : "urgent";
        const r = n.lease
          ? await this.call("PUT", leasePath(n.name), this.leaseBody(n), undefined, lane)
          : await this.call("POST", leasePath(), this.leaseBody(n), undefined, lane);
        // the answers are the Lease itself (a create, update or GET of it)
        if (r.status === 200 || r.status === 201) {
          n.lease = r.json as Lease | undefined;
          ok = true;
        } else if (r.status === 409) {
          const g = await this.call("GET", leasePath(n.name), undefined, undefined, lane);
          n.lease = g.status === 200 ? (g.json as Lease | undefined) : undefined;
        } else if (r.status === 404) {
          n.lease = undefined;
        } else {
          this.opts.log(`lease ${n.name}: ${r.status} ${r.json?.message ?? ""}`);
          break;
        }
      }
    } catch (e) {
      if (initial) throw e;
      if (!this.stopped) this.opts.log(`lease ${n.name}: ${(e as Error).message}`);
    }
    if (ok) {
      if (!initial) this.stats.renewals++;
    } else {
      this.stats.renewFailures++;
      if (initial) throw new Error(`lease ${n.name}: could not create`);
    }
    // renew every leaseSeconds with a little jitter, counted from when it was due (not from
    // when the answer came) so each node keeps its phase and the load stays even; when the
    // API stalled past a whole period, spread the late ones out again. After a failure, ~1 s.
    const now = Date.now();
    if (!ok) n.leaseDue = now + 800 + Math.random() * 400;
    else if (initial) n.leaseDue = now + this.leaseMs;
    else {
      const next = n.leaseDue + this.leaseMs * (0.98 + Math.random() * 0.04);
      n.leaseDue = next > now + 500 ? next : now + 500 + Math.random() * this.leaseMs * 0.5;
    }
  }
}

/** a <= b for numeric resourceVersions (this apiserver's); unknown when either is not a number. */
function notNewer(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) <= BigInt(b);
}

/** What onNode is shown of a Node: its name and annotations, when they are what they should be. */
function nodeView(obj: ApiBody): { metadata?: { name?: string; annotations?: Record<string, string> } } {
  const m = obj.metadata as { name?: unknown; annotations?: unknown } | undefined;
  return {
    metadata: {
      name: typeof m?.name === "string" ? m.name : undefined,
      annotations: stringData(m?.annotations),
    },
  };
}
