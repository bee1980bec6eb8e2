// The EndpointSlice controller (upstream pkg/controller/endpointslice): for every Service with
// a selector, EndpointSlices labelled kubernetes.io/service-name and owned by the Service hold
// its pods' addresses, at most 100 to a slice, grouped by the ports they resolve to. Unlike
// Endpoints, terminating pods stay listed, with their ready/serving/terminating conditions.
// A Service with no endpoints keeps one empty slice, as upstream's placeholder.

import { isPodReady } from "../../../api/pod-state";
import { lookupGVR } from "../../../api/registry";
import { matches } from "../../../api/selectors";
import type { KubeObject } from "../../../api/types";
import { isConflict, isNamespaceTerminating, isNotFound } from "../lib/api-errors";
import { jsonEqual } from "../lib/json-equal";
import type { Controller, ControllerContext } from "../runtime/controller";
import {
  endpointLabels,
  inEndpoints,
  type PodRef,
  podEndpoint,
  podPorts,
  serviceKeyedWatches,
  serviceSelector,
} from "./endpoints";

const SLICES = lookupGVR("discovery.k8s.io", "v1", "endpointslices")!;
const RES = "discovery.k8s.io/endpointslices";
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
export const MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by";
export const MANAGED_BY = "endpointslice-controller.k8s.io";
const ZONE_LABEL = "topology.kubernetes.io/zone";
/** upstream's --max-endpoints-per-slice default */
export const MAX_PER_SLICE = 100;

interface SlicePort {
  name: string;
  port: number;
  protocol: string;
  appProtocol?: string;
}

interface SliceEndpoint {
  addresses: string[];
  conditions: { ready: boolean; serving: boolean; terminating: boolean };
  hostname?: string;
  nodeName?: string;
  zone?: string;
  targetRef: PodRef;
}

export interface SliceContent {
  ports?: SlicePort[];
  endpoints: SliceEndpoint[];
}

const portsKey = (ports: SlicePort[]) => JSON.stringify(ports);

/** The slices a Service should have over these pods (node zones looked up by `zoneOf`). */
export function desiredSlices(
  svc: KubeObject,
  pods: KubeObject[],
  zoneOf: (node: string) => string | undefined = () => undefined,
): SliceContent[] {
  const sel = serviceSelector(svc);
  if (!sel) return [];
  const spec = svc.spec ?? {};
  const publishNotReady = spec.publishNotReadyAddresses === true;
  const groups = new Map<string, { ports: SlicePort[]; endpoints: SliceEndpoint[] }>();
  for (const pod of pods) {
    if (pod.metadata.namespace !== svc.metadata.namespace) continue;
    if (!inEndpoints(pod, true)) continue;
    if (!matches(sel, pod.metadata.labels ?? {})) continue;
    const serving = isPodReady(pod);
    const terminating = !!pod.metadata.deletionTimestamp;
    const { ip, targetRef, hostname } = podEndpoint(pod, svc);
    const ep: SliceEndpoint = {
      addresses: [ip],
      conditions: { ready: publishNotReady || (serving && !terminating), serving, terminating },
      targetRef,
    };
    if (hostname) ep.hostname = hostname;
    if (pod.spec?.nodeName) {
      ep.nodeName = pod.spec.nodeName;
      const zone = zoneOf(pod.spec.nodeName);
      if (zone) ep.zone = zone;
    }
    const ports: SlicePort[] = podPorts(svc, pod);
    const key = portsKey(ports);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { ports, endpoints: [] }));
    g.endpoints.push(ep);
  }
  const out: SliceContent[] = [];
  for (const g of [...groups.values()].sort((a, b) => portsKey(a.ports).localeCompare(portsKey(b.ports)))) {
    g.endpoints.sort((a, b) => a.addresses[0]!.localeCompare(b.addresses[0]!));
    for (let i = 0; i < g.endpoints.length; i += MAX_PER_SLICE)
      out.push({ ports: g.ports, endpoints: g.endpoints.slice(i, i + MAX_PER_SLICE) });
  }
  // no endpoints: one placeholder slice, so that clients see the Service is handled
  return out.length ? out : [{ endpoints: [] }];
}

function sliceLabels(svc: KubeObject): Record<string, string> {
  return { ...endpointLabels(svc), [SERVICE_NAME_LABEL]: svc.metadata.name!, [MANAGED_BY_LABEL]: MANAGED_BY };
}

const sameContent = (slice: KubeObject, want: SliceContent, labels: Record<string, string>) =>
  jsonEqual(slice.endpoints ?? [], want.endpoints) &&
  jsonEqual(slice.ports ?? [], want.ports ?? []) &&
  jsonEqual(slice.metadata.labels ?? {}, labels);

/** The slices this controller keeps for a Service (by label, as upstream finds them). */
function managedSlices(ctx: ControllerContext, namespace: string, name: string): KubeObject[] {
  return ctx.informers
    .list(RES, namespace)
    .filter(
      (s) =>
        s.metadata.labels?.[SERVICE_NAME_LABEL] === name &&
        s.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY,
    )
    .sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
}

export async function syncEndpointSlices(key: string, ctx: ControllerContext): Promise<void> {
  const [namespace, name] = key.split("/") as [string, string];
  const svc = ctx.informers.get("/services", key);
  // a deleted Service's slices go with it through their owner reference (garbage collector)
  if (!svc || svc.metadata.deletionTimestamp || !serviceSelector(svc)) return;
  if (ctx.informers.get("/namespaces", namespace)?.metadata.deletionTimestamp) return;
  const zoneOf = (node: string) => ctx.informers.get("/nodes", node)?.metadata.labels?.[ZONE_LABEL];
  const want = desiredSlices(svc, ctx.informers.list("/pods", namespace), zoneOf);
  const labels = sliceLabels(svc);
  const have = managedSlices(ctx, namespace, name);
  // first keep the slices that already hold a wanted content, then reuse the others for the rest
  const todo: SliceContent[] = [];
  const spare = new Set(have);
  for (const w of want) {
    const same = [...spare].find((s) => sameContent(s, w, labels));
    if (same) spare.delete(same);
    else todo.push(w);
  }
  const owner = {
    apiVersion: "v1",
    kind: "Service",
    name,
    uid: svc.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
  try {
    for (const w of todo) {
      const reuse = [...spare][0];
      const body: KubeObject = {
        apiVersion: "discovery.k8s.io/v1",
        kind: "EndpointSlice",
        metadata: reuse
          ? { ...reuse.metadata, labels }
          : { generateName: `${name}-`, namespace, labels, ownerReferences: [owner] },
        addressType: "IPv4",
        endpoints: w.endpoints,
      };
      if (w.ports) body.ports = w.ports;
      if (reuse) {
        spare.delete(reuse);
        await ctx.api.update(SLICES, body);
      } else await ctx.api.create(SLICES, body);
    }
    for (const extra of spare) await ctx.api.remove(SLICES, namespace, extra.metadata.name!);
  } catch (e) {
    if (isConflict(e) || isNotFound(e) || isNamespaceTerminating(e)) {
      ctx.enqueue(key, 100);
      return;
    }
    throw e;
  }
}

export const endpointSliceController: Controller = {
  name: "endpointslice-controller",
  workers: 2,
  watches: {
    ...serviceKeyedWatches,
    // a slice changed or deleted by anyone else is put right
    [RES]: (slice) => {
      const svc = slice.metadata.labels?.[SERVICE_NAME_LABEL];
      return svc && slice.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY
        ? [`${slice.metadata.namespace}/${svc}`]
        : [];
    },
  },
  resync: (ctx) => ctx.informers.keys("/services"),
  sync: syncEndpointSlices,
};
