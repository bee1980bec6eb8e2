// The load balancer for LoadBalancer Services, as k3s's ServiceLB (klipper-lb) gives one on
// bare machines: a Service of type LoadBalancer without a loadBalancerClass gets the
// InternalIPs of the cluster's Ready nodes as status.loadBalancer.ingress, and every node's
// proxier answers the Service's ports on those addresses (agent/network/proxier). A Service
// that stops being a LoadBalancer (or names a class of another implementation) loses them.
import { lookupGVR } from "../../../api/registry";
import type { KubeObject } from "../../../api/types";
import { isConflict, isNotFound } from "../lib/api-errors";
import { jsonEqual } from "../lib/json-equal";
import { keyOf } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";

const SERVICES = lookupGVR("", "v1", "services")!;

const isReady = (node: KubeObject) =>
  (node.status?.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True");

/** The ingress points: each Ready, schedulable node's InternalIP, sorted. */
export function ingressFor(nodes: KubeObject[]): { ip: string; ipMode: "VIP" }[] {
  const ips = new Set<string>();
  for (const n of nodes) {
    if (!isReady(n) || n.spec?.unschedulable || n.metadata.deletionTimestamp) continue;
    const ip = (n.status?.addresses ?? []).find((a: any) => a.type === "InternalIP")?.address;
    if (ip) ips.add(ip);
  }
  return [...ips].sort().map((ip) => ({ ip, ipMode: "VIP" as const }));
}

const ours = (svc: KubeObject) => svc.spec?.type === "LoadBalancer" && !svc.spec?.loadBalancerClass;

export async function syncServiceLB(key: string, ctx: ControllerContext): Promise<void> {
  const svc = ctx.informers.get("/services", key);
  if (!svc || svc.metadata.deletionTimestamp) return;
  const have = svc.status?.loadBalancer?.ingress ?? [];
  const want = ours(svc) ? ingressFor(ctx.informers.list("/nodes")) : [];
  // a Service of another class is that implementation's to fill
  if (svc.spec?.type === "LoadBalancer" && svc.spec?.loadBalancerClass) return;
  if (jsonEqual(have, want)) return;
  try {
    await ctx.api.update(
      SERVICES,
      { ...svc, status: { ...(svc.status ?? {}), loadBalancer: want.length ? { ingress: want } : {} } },
      "status",
    );
  } catch (e) {
    if (isConflict(e)) ctx.enqueue(key, 100);
    else if (!isNotFound(e)) throw e;
  }
}

export const serviceLBController: Controller = {
  name: "service-lb-controller",
  workers: 1,
  watches: {
    "/services": (svc) => (ours(svc) || (svc.status?.loadBalancer?.ingress ?? []).length ? [keyOf(svc)] : []),
    // a node coming, going or changing readiness moves every LoadBalancer's addresses
    "/nodes": (node, old, ctx) => {
      const before = old ? ingressFor([old]) : [];
      const now = ingressFor([node]);
      if (old && jsonEqual(before, now) && ctx.informers.get("/nodes", node.metadata.name!)) return [];
      return ctx.informers
        .list("/services")
        .filter(ours)
        .map((s) => keyOf(s));
    },
  },
  resync: (ctx) =>
    ctx.informers
      .list("/services")
      .filter((s) => ours(s) || (s.status?.loadBalancer?.ingress ?? []).length)
      .map((s) => keyOf(s)),
  sync: syncServiceLB,
};
