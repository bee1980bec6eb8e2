// The pod garbage collector (upstream pkg/controller/podgc): removes finished pods beyond a
// threshold, pods bound to nodes that no longer exist, pods deleted before they were ever
// scheduled, and terminating pods stuck on nodes that are not ready past their deadline.

import { isTerminal } from "../../../api/pod-state";
import { lookupGVR } from "../../../api/registry";
import { rfc3339, timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { isConflict, isNotFound } from "../lib/api-errors";
import type { Condition } from "../lib/conditions";
import { findLive } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";

const POD = lookupGVR("", "v1", "pods")!;
const NODE = lookupGVR("", "v1", "nodes")!;
export const POD_GC_KEY = "podgc";

export interface PodGCOptions {
  /** terminated-pod-gc-threshold (upstream default 12500; <= 0 disables) */
  terminatedThreshold?: number;
  /** how long a node must be missing before its pods go (upstream quarantine 40 s) */
  quarantineMs?: number;
  /** gcCheckPeriod (20 s) */
  periodMs?: number;
}

function created(p: KubeObject): number {
  return timeOf(p.metadata.creationTimestamp) ?? 0;
}

/** The finished pods to delete: the oldest beyond the threshold (evicted ones first, as upstream). */
export function terminatedToDelete(pods: KubeObject[], threshold: number): KubeObject[] {
  if (threshold <= 0) return [];
  const done = pods.filter(isTerminal);
  if (done.length <= threshold) return [];
  const evicted = (p: KubeObject) => (p.status?.reason === "Evicted" ? 0 : 1);
  done.sort((a, b) => evicted(a) - evicted(b) || created(a) - created(b));
  return done.slice(0, done.length - threshold);
}

function nodeReady(node: KubeObject): boolean {
  return (
    (node.status?.conditions as Condition[] | undefined)?.find((c) => c.type === "Ready")?.status === "True"
  );
}

export function createPodGC(opts: PodGCOptions = {}): Controller {
  const threshold = opts.terminatedThreshold ?? 12500;
  const quarantine = opts.quarantineMs ?? 40_000;
  const period = opts.periodMs ?? 20_000;
  const missingSince = new Map<string, number>();

  async function forceDelete(ctx: ControllerContext, pod: KubeObject, markFailed: boolean): Promise<void> {
    const ns = pod.metadata.namespace!;
    const name = pod.metadata.name!;
    if (markFailed && !isTerminal(pod)) {
      const condition = {
        type: "DisruptionTarget",
        status: "True",
        reason: "DeletionByPodGC",
        message: "PodGC: node no longer exists",
        lastTransitionTime: rfc3339(ctx.now()),
      };
      try {
        await ctx.api.patch(
          POD,
          ns,
          name,
          { status: { phase: "Failed", conditions: [condition] } },
          "application/strategic-merge-patch+json",
          "status",
        );
      } catch {
        // best effort, as upstream
      }
    }
    try {
      await ctx.api.remove(POD, ns, name, {
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata.uid },
      });
    } catch (e) {
      if (!isNotFound(e) && !isConflict(e)) throw e;
    }
  }

  async function nodeGone(ctx: ControllerContext, name: string): Promise<boolean> {
    return (await findLive(ctx.api, NODE, undefined, name)) === undefined;
  }

  async function sync(_key: string, ctx: ControllerContext): Promise<void> {
    const now = ctx.now();
    const pods = ctx.informers.list("/pods");
    for (const p of terminatedToDelete(pods, threshold)) await forceDelete(ctx, p, false);

    let recheck = period;
    const absent = new Set<string>();
    for (const p of pods) {
      const n = p.spec?.nodeName;
      if (n && !ctx.informers.get("/nodes", n)) absent.add(n);
    }
    for (const n of [...missingSince.keys()]) if (!absent.has(n)) missingSince.delete(n);
    for (const n of absent) {
      const since = missingSince.get(n) ?? now;
      missingSince.set(n, since);
      if (now - since < quarantine) {
        recheck = Math.min(recheck, since + quarantine - now + 100);
        continue;
      }
      if (!(await nodeGone(ctx, n))) continue;
      for (const p of pods) if (p.spec?.nodeName === n) await forceDelete(ctx, p, true);
      missingSince.delete(n);
    }

    for (const p of pods) {
      if (!p.metadata.deletionTimestamp) continue;
      const n = p.spec?.nodeName;
      if (!n) {
        await forceDelete(ctx, p, false);
        continue;
      }
      const node = ctx.informers.get("/nodes", n);
      if (!node || nodeReady(node)) continue;
      const outOfService = node.spec?.taints?.some(
        (t: any) => t.key === "node.kubernetes.io/out-of-service" && t.effect === "NoExecute",
      );
      const deadline = timeOf(p.metadata.deletionTimestamp) ?? now;
      if (outOfService || deadline <= now) await forceDelete(ctx, p, false);
      else recheck = Math.min(recheck, deadline - now + 100);
    }
    ctx.enqueue(POD_GC_KEY, Math.max(recheck, 100));
  }

  return {
    name: "pod-garbage-collector",
    workers: 1,
    watches: {
      "/nodes": (node, _old, ctx) =>
        ctx.informers.get("/nodes", node.metadata.name!) && nodeReady(node) ? [] : [POD_GC_KEY],
      "/pods": (pod, _old, ctx) => {
        if (!ctx.informers.get("/pods", `${pod.metadata.namespace}/${pod.metadata.name}`)) return [];
        const n = pod.spec?.nodeName;
        if (pod.metadata.deletionTimestamp && !n) return [POD_GC_KEY];
        return n && !ctx.informers.get("/nodes", n) ? [POD_GC_KEY] : [];
      },
    },
    resync: () => [POD_GC_KEY],
    sync,
  };
}
