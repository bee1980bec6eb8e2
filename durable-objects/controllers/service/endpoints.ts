// The endpoints controller (upstream pkg/controller/endpoint): for every Service with a
// selector, an Endpoints object of the same name lists the IPs of the pods it selects, ready
// pods under addresses and the others under notReadyAddresses, with each Service port
// resolved against the pod (a named targetPort is looked up in the pod's container ports).
// Services without a selector are left to whoever manages their Endpoints.

import { isPodReady, isTerminal } from "../../../api/pod-state";
import { lookupGVR } from "../../../api/registry";
import { fromLabelSelector, matches, type Selector } from "../../../api/selectors";
import type { KubeObject } from "../../../api/types";
import { isAlreadyExists, isConflict, isNamespaceTerminating, isNotFound } from "../lib/api-errors";
import { jsonEqual } from "../lib/json-equal";
import { keyOf } from "../lib/objects";
import type { Controller, ControllerContext } from "../runtime/controller";

const ENDPOINTS = lookupGVR("", "v1", "endpoints")!;
export const HEADLESS_LABEL = "service.kubernetes.io/headless";

export interface EndpointPort {
  name?: string;
  port: number;
  protocol: string;
  appProtocol?: string;
}

export interface PodRef {
  kind: "Pod";
  namespace: string;
  name: string;
  uid: string;
}

interface EndpointAddress {
  ip: string;
  hostname?: string;
  nodeName?: string;
  targetRef: PodRef;
}

export interface EndpointSubset {
  addresses?: EndpointAddress[];
  notReadyAddresses?: EndpointAddress[];
  ports?: EndpointPort[];
}

export function serviceSelector(svc: KubeObject): Selector | null {
  const sel = svc.spec?.selector;
  if (!sel || typeof sel !== "object" || Object.keys(sel).length === 0) return null;
  if (svc.spec?.type === "ExternalName") return null;
  return fromLabelSelector({ matchLabels: sel });
}

/** The container port a Service port reaches on this pod; undefined when the pod has none. */
export function findPort(pod: KubeObject, svcPort: any): number | undefined {
  const target = svcPort.targetPort ?? svcPort.port;
  if (typeof target === "number") return target;
  if (/^\d+$/.test(String(target))) return Number(target);
  const protocol = svcPort.protocol ?? "TCP";
  for (const c of (pod.spec?.containers ?? []) as any[])
    for (const p of (c.ports ?? []) as any[])
      if (p.name === target && (p.protocol ?? "TCP") === protocol) return p.containerPort;
  return undefined;
}

/** Whether the pod belongs in a Service's endpoints at all (upstream ShouldPodBeInEndpoints). */
export function inEndpoints(pod: KubeObject, includeTerminating: boolean): boolean {
  if (isTerminal(pod)) return false;
  if (!pod.status?.podIP && !(pod.status?.podIPs ?? []).length) return false;
  return includeTerminating || !pod.metadata.deletionTimestamp;
}

/** The pod's address and reference, and its hostname when it names the Service as subdomain. */
export function podEndpoint(
  pod: KubeObject,
  svc: KubeObject,
): { ip: string; targetRef: PodRef; hostname?: string } {
  const ep: { ip: string; targetRef: PodRef; hostname?: string } = {
    ip: pod.status.podIP ?? pod.status.podIPs[0].ip,
    targetRef: {
      kind: "Pod",
      namespace: pod.metadata.namespace!,
      name: pod.metadata.name!,
      uid: pod.metadata.uid!,
    },
  };
  if (pod.spec?.hostname && pod.spec?.subdomain === svc.metadata.name) ep.hostname = pod.spec.hostname;
  return ep;
}

/** The Service's ports as this pod serves them, in the Service's order (name "" when unnamed). */
export function podPorts(svc: KubeObject, pod: KubeObject): (EndpointPort & { name: string })[] {
  const ports: (EndpointPort & { name: string })[] = [];
  for (const sp of (svc.spec?.ports ?? []) as any[]) {
    const port = findPort(pod, sp);
    if (port === undefined) continue;
    const p: EndpointPort & { name: string } = { name: sp.name ?? "", port, protocol: sp.protocol ?? "TCP" };
    if (sp.appProtocol) p.appProtocol = sp.appProtocol;
    ports.push(p);
  }
  return ports;
}

const portKey = (p: EndpointPort) => `${p.name ?? ""}/${p.port}/${p.protocol}/${p.appProtocol ?? ""}`;

/**
 * The subsets for a Service over the pods in its namespace: each address with the ports it
 * serves, then addresses grouped by identical port sets (upstream's RepackSubsets), sorted so
 * the same state always gives the same object.
 */
export function endpointSubsets(svc: KubeObject, pods: KubeObject[]): EndpointSubset[] {
  const sel = serviceSelector(svc);
  if (!sel) return [];
  const spec = svc.spec ?? {};
  const tolerateUnready = spec.publishNotReadyAddresses === true;
  const svcPorts = (spec.ports ?? []) as any[];
  const headless = spec.clusterIP === "None";
  const groups = new Map<
    string,
    { ports: EndpointPort[]; ready: EndpointAddress[]; notReady: EndpointAddress[] }
  >();
  for (const pod of pods) {
    if (!matches(sel, pod.metadata.labels ?? {}) || !inEndpoints(pod, tolerateUnready)) continue;
    const { ip, targetRef, hostname } = podEndpoint(pod, svc);
    const addr: EndpointAddress = { ip, targetRef };
    if (hostname) addr.hostname = hostname;
    if (pod.spec?.nodeName) addr.nodeName = pod.spec.nodeName;
    // Endpoints leave an unnamed port's name out
    const ports: EndpointPort[] = podPorts(svc, pod).map(({ name, ...p }) => (name ? { name, ...p } : p));
    // a pod that serves none of the ports is left out, unless the Service has no ports at all
    if (ports.length === 0 && !(svcPorts.length === 0 && headless)) continue;
    ports.sort((a, b) => portKey(a).localeCompare(portKey(b)));
    const key = ports.map(portKey).join(",");
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { ports, ready: [], notReady: [] }));
    (tolerateUnready || isPodReady(pod) ? g.ready : g.notReady).push(addr);
  }
  const byIP = (a: EndpointAddress, b: EndpointAddress) =>
    a.ip.localeCompare(b.ip) || a.targetRef.name.localeCompare(b.targetRef.name);
  return [...groups.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([, g]) => {
      const s: EndpointSubset = {};
      if (g.ready.length) s.addresses = g.ready.sort(byIP);
      if (g.notReady.length) s.notReadyAddresses = g.notReady.sort(byIP);
      if (g.ports.length) s.ports = g.ports;
      return s;
    });
}

/** The Service's labels, marked headless or not, as both endpoint controllers label their objects. */
export function endpointLabels(svc: KubeObject): Record<string, string> {
  const labels = { ...(svc.metadata.labels ?? {}) };
  if (svc.spec?.clusterIP === "None") labels[HEADLESS_LABEL] = "";
  else delete labels[HEADLESS_LABEL];
  return labels;
}

export async function syncEndpoints(key: string, ctx: ControllerContext): Promise<void> {
  const [namespace, name] = key.split("/") as [string, string];
  const svc = ctx.informers.get("/services", key);
  const current = ctx.informers.get("/endpoints", key);
  if (!svc) {
    // the Service is gone: so are the Endpoints the controller kept for it
    if (current)
      await ctx.api.remove(ENDPOINTS, namespace, name).catch((e) => {
        if (!isNotFound(e)) throw e;
      });
    return;
  }
  if (!serviceSelector(svc)) return;
  // nothing new is written into a namespace on its way out (the namespace controller empties it)
  if (ctx.informers.get("/namespaces", namespace)?.metadata.deletionTimestamp) return;
  const subsets = endpointSubsets(svc, ctx.informers.list("/pods", namespace));
  const labels = endpointLabels(svc);
  if (
    current &&
    jsonEqual(current.subsets ?? [], subsets) &&
    jsonEqual(current.metadata.labels ?? {}, labels)
  )
    return;
  const body: KubeObject = {
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: { name, namespace, labels },
    subsets,
  };
  try {
    if (current) {
      body.metadata.resourceVersion = current.metadata.resourceVersion;
      body.metadata.annotations = current.metadata.annotations;
      await ctx.api.update(ENDPOINTS, body);
    } else await ctx.api.create(ENDPOINTS, body);
  } catch (e) {
    // a write raced ours or the namespace is going away: the informers bring the key back
    if (isConflict(e) || isAlreadyExists(e) || isNotFound(e) || isNamespaceTerminating(e)) {
      ctx.enqueue(key, 100);
      return;
    }
    throw e;
  }
}

/** The Services in the pod's namespace that select it now or selected it before. */
export function servicesOf(pod: KubeObject, old: KubeObject | undefined, ctx: ControllerContext): string[] {
  const keys: string[] = [];
  for (const svc of ctx.informers.list("/services", pod.metadata.namespace)) {
    const sel = serviceSelector(svc);
    if (!sel) continue;
    if (matches(sel, pod.metadata.labels ?? {}) || (old && matches(sel, old.metadata.labels ?? {})))
      keys.push(keyOf(svc));
  }
  return keys;
}

/** What wakes a controller keyed by Service: the Service itself and the pods it selects. */
export const serviceKeyedWatches: Controller["watches"] = {
  "/services": (svc) => [keyOf(svc)],
  "/pods": servicesOf,
};

export const endpointsController: Controller = {
  name: "endpoint-controller",
  workers: 2,
  watches: {
    ...serviceKeyedWatches,
    // Endpoints someone deleted come back; edits to them are put right on the next change
    "/endpoints": (ep, _old, ctx) =>
      !ctx.informers.get("/endpoints", keyOf(ep)) && ctx.informers.get("/services", keyOf(ep))
        ? [keyOf(ep)]
        : [],
  },
  resync: (ctx) => ctx.informers.keys("/services"),
  sync: syncEndpoints,
};
