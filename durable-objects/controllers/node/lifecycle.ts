// The node lifecycle controller (upstream nodelifecycle + taint eviction): a node whose
// Lease and status heartbeats stop for the grace period gets Ready=Unknown and the
// unreachable taints; pods on a node with NoExecute taints are evicted when their
// tolerations run out. A node that comes back (kubelet posts Ready) loses the taints.
import { lookupGVR } from "../../../api/registry";
import { rfc3339 } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { isConflict, isNotFound } from "../lib/api-errors";
import { byNode, INDEX_NODE } from "../lib/claim";
import type { Condition } from "../lib/conditions";
import type { Controller, ControllerContext } from "../runtime/controller";
import { desiredTaints, evictionTime, silentNodeConditions, type Taint } from "./taints";

const NODE = lookupGVR("", "v1", "nodes")!;
const POD = lookupGVR("", "v1", "pods")!;
export const LEASE_NAMESPACE = "kube-node-lease";

export interface NodeLifecycleOptions {
  /** node-monitor-grace-period (upstream 40 s); EDGEPLANE_NODE_MONITOR_GRACE_SECONDS once wired */
  gracePeriodMs?: number;
  /** what DefaultTolerationSeconds admission would give pods (300 s) */
  defaultTolerationSeconds?: number;
  /** node-startup-grace-period (upstream 60 s): how long a node that never posted has, from its creation */
  startupGracePeriodMs?: number;
}

interface Probe {
  renew?: string;
  heartbeat?: string;
  at: number;
}

export function createNodeLifecycleController(opts: NodeLifecycleOptions = {}): Controller {
  const monitorGrace = opts.gracePeriodMs ?? 40_000;
  const startupGrace = opts.startupGracePeriodMs ?? 60_000;
  const tolerationSeconds = opts.defaultTolerationSeconds ?? 300;
  const probes = new Map<string, Probe>();

  async function sync(name: string, ctx: ControllerContext): Promise<void> {
    let node = ctx.informers.get("/nodes", name);
    if (!node) {
      probes.delete(name);
      return;
    }
    const now = ctx.now();
    const nowIso = rfc3339(now);
    const lease = ctx.informers.get("coordination.k8s.io/leases", `${LEASE_NAMESPACE}/${name}`);
    const renew: string | undefined = lease?.spec?.renewTime;
    const heartbeat = (node.status?.conditions as Condition[] | undefined)?.find(
      (c) => c.type === "Ready",
    )?.lastHeartbeatTime;
    let probe = probes.get(name);
    // a node that never posted is judged from its creation, with the startup grace period;
    // one that did, by when this controller saw a heartbeat change (no clock skew): as upstream
    const neverPosted = heartbeat === undefined && renew === undefined;
    const grace = neverPosted ? startupGrace : monitorGrace;
    if (!probe || probe.renew !== renew || probe.heartbeat !== heartbeat) {
      const created = Date.parse(node.metadata.creationTimestamp ?? "");
      probe = {
        renew,
        heartbeat,
        at: neverPosted && Number.isFinite(created) ? Math.min(created, now) : now,
      };
      probes.set(name, probe);
    }
    const silent = now - probe.at > grace;
    try {
      if (silent) {
        const created = node.metadata.creationTimestamp ?? nowIso;
        const conditions = silentNodeConditions(node.status?.conditions, nowIso, created);
        if (conditions)
          node = await ctx.api.update(
            NODE,
            { ...node, status: { ...(node.status ?? {}), conditions } },
            "status",
          );
      }
      const taints = desiredTaints(node, nowIso);
      if (taints)
        node = await ctx.api.update(NODE, {
          ...node,
          spec: { ...(node.spec ?? {}), taints: taints.length ? taints : undefined },
        });
    } catch (e) {
      if (isNotFound(e)) return;
      throw e;
    }
    const next = await evictPods(ctx, node, now);
    const recheck = silent ? Infinity : probe.at + grace + 100 - now;
    const after = Math.min(recheck, next - now + 50);
    if (Number.isFinite(after)) ctx.enqueue(name, Math.max(after, 100));
  }

  /** Evicts the pods whose tolerations ran out; returns the next eviction time (ms). */
  async function evictPods(ctx: ControllerContext, node: KubeObject, now: number): Promise<number> {
    const taints: Taint[] = (node.spec?.taints ?? []).filter((t: Taint) => t.effect === "NoExecute");
    if (!taints.length) return Infinity;
    let next = Infinity;
    for (const pod of ctx.informers.byIndex("/pods", INDEX_NODE, node.metadata.name!)) {
      if (pod.metadata.deletionTimestamp) continue;
      const at = evictionTime(pod, taints, tolerationSeconds, now);
      if (at > now) {
        next = Math.min(next, at);
        continue;
      }
      await evict(ctx, pod, now);
    }
    return next;
  }

  return {
    name: "node-lifecycle-controller",
    setup(ctx) {
      ctx.informers.addIndex("/pods", INDEX_NODE, byNode);
    },
    watches: {
      "/nodes": (node) => [node.metadata.name!],
      "coordination.k8s.io/leases": (lease) =>
        lease.metadata.namespace === LEASE_NAMESPACE ? [lease.metadata.name!] : [],
      "/pods": (pod, _old, ctx) => {
        const n = pod.spec?.nodeName;
        if (!n || pod.metadata.deletionTimestamp) return [];
        const node = ctx.informers.get("/nodes", n);
        return node?.spec?.taints?.some((t: Taint) => t.effect === "NoExecute") ? [n] : [];
      },
    },
    resync: (ctx) => ctx.informers.keys("/nodes"),
    sync,
  };
}

async function evict(ctx: ControllerContext, pod: KubeObject, now: number): Promise<void> {
  const ns = pod.metadata.namespace!;
  const name = pod.metadata.name!;
  void ctx.recorder.event(pod, "Normal", "TaintManagerEviction", `Marking for deletion Pod ${ns}/${name}`);
  const condition = {
    type: "DisruptionTarget",
    status: "True",
    reason: "DeletionByTaintManager",
    message: "Taint manager: deleting due to NoExecute taint",
    lastTransitionTime: rfc3339(now),
  };
  try {
    await ctx.api.patch(
      POD,
      ns,
      name,
      { status: { conditions: [condition] } },
      "application/strategic-merge-patch+json",
      "status",
    );
  } catch {
    // the condition is informative only
  }
  try {
    await ctx.api.remove(POD, ns, name, { preconditions: { uid: pod.metadata.uid } });
  } catch (e) {
    if (!isNotFound(e) && !isConflict(e)) throw e;
  }
}
