// What the control plane publishes for cluster networking, kept in place like the `kubernetes`
// Service (bootstrap and the cron's reconcile):
//  - the kube-dns Service in kube-system, on the tenth address of the service range (as
//    kubeadm's CoreDNS gets it), 53/UDP and 53/TCP; without a selector: every node answers it
//    itself (agent/network/dns), so it has no endpoints to list;
//  - the settings nodes read at join, in the ConfigMap kube-system/edgeplane-network
//    (clusterDNS, clusterDomain, serviceCIDR; the pod network adds its own keys beside them);
//  - the `kubernetes` Service's Endpoints and EndpointSlice: the apiserver address nodes dial
//    (EDGEPLANE_APISERVER_ADDRESS), as kube-apiserver's endpoint reconciler publishes its own.
import { StatusError } from "../api/errors";
import { lookupGVR } from "../api/registry";
import { serviceRanges } from "../api/strategies/service-allocator";
import type { KubeObject } from "../api/types";
import { isIPv4 } from "../api/validation/names";
import type { Env } from "../durable-objects/env";
import { Store } from "../durable-objects/store/client";
import { ensureNetworkConfigMap as ensurePodNetworkConfigMap } from "./network-config";

export const NETWORK_CONFIGMAP = "edgeplane-network";
export const DEFAULT_CLUSTER_DOMAIN = "cluster.local";

const intToIp = (n: number): string => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");

/** The kube-dns Service's address: the tenth of the service range (10.96.0.10 by default). */
export function clusterDnsIP(env: Env): string {
  const { ips } = serviceRanges(env);
  return intToIp(ips.first + 9);
}

export function clusterDomain(env: Env): string {
  return env.EDGEPLANE_CLUSTER_DOMAIN || DEFAULT_CLUSTER_DOMAIN;
}

const ignoreExists = (e: unknown) => {
  if (!(e instanceof StatusError && e.reason === "AlreadyExists")) throw e;
};

async function ensureKubeDnsService(env: Env): Promise<void> {
  const def = lookupGVR("", "v1", "services")!;
  const store = new Store(env, def);
  if (await store.find("kube-system", "kube-dns")) return;
  const svc: KubeObject = {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "kube-dns",
      namespace: "kube-system",
      labels: {
        "k8s-app": "kube-dns",
        "kubernetes.io/cluster-service": "true",
        "kubernetes.io/name": "CoreDNS",
      },
    },
    spec: {
      type: "ClusterIP",
      clusterIP: clusterDnsIP(env),
      ports: [
        { name: "dns", port: 53, protocol: "UDP", targetPort: 53 },
        { name: "dns-tcp", port: 53, protocol: "TCP", targetPort: 53 },
      ],
      sessionAffinity: "None",
    },
  };
  def.strategy.defaults?.(svc);
  def.strategy.prepareForCreate?.(svc);
  try {
    await store.create(svc);
  } catch (e) {
    if (e instanceof StatusError && e.code === 422)
      console.error("the kube-dns Service could not be created:", e.message);
    else ignoreExists(e);
  }
}

/** The keys this part of the control plane owns in the network ConfigMap (others are left as they are). */
export function networkSettings(env: Env): Record<string, string> {
  return {
    clusterDNS: clusterDnsIP(env),
    clusterDomain: clusterDomain(env),
    serviceCIDR: serviceRanges(env).ips.cidr,
  };
}

async function ensureNetworkConfigMap(env: Env): Promise<void> {
  // the pod network's keys first (made when absent), then this part's merged in
  await ensurePodNetworkConfigMap(env);
  const def = lookupGVR("", "v1", "configmaps")!;
  const store = new Store(env, def);
  const want = networkSettings(env);
  const have = await store.find("kube-system", NETWORK_CONFIGMAP);
  if (!have) {
    try {
      await store.create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: NETWORK_CONFIGMAP, namespace: "kube-system" },
        data: want,
      });
    } catch (e) {
      ignoreExists(e);
    }
    return;
  }
  const data = (have.data ?? {}) as Record<string, string>;
  if (Object.entries(want).every(([k, v]) => data[k] === v)) return;
  try {
    await store.update({ ...have, data: { ...data, ...want } }, { expectRV: have.metadata.resourceVersion });
  } catch (e) {
    if (!(e instanceof StatusError && e.code === 409)) throw e; // another writer: the next reconcile looks again
  }
}

/** host:port of EDGEPLANE_APISERVER_ADDRESS; undefined when unset or unparsable. */
export function apiserverAddress(env: Env): { host: string; port: number } | undefined {
  const raw = env.EDGEPLANE_APISERVER_ADDRESS?.trim();
  if (!raw) return undefined;
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(raw);
  if (!m) return undefined;
  const port = Number(m[2]);
  return port > 0 && port < 65536 ? { host: m[1]!, port } : undefined;
}

async function publishApiserverEndpoints(env: Env): Promise<void> {
  const addr = apiserverAddress(env);
  if (!addr) return;
  const ip = isIPv4(addr.host);
  const ports = [{ name: "https", port: addr.port, protocol: "TCP" }];
  const slice: KubeObject = {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: "kubernetes",
      namespace: "default",
      labels: { "kubernetes.io/service-name": "kubernetes" },
    },
    addressType: ip ? "IPv4" : "FQDN",
    endpoints: [{ addresses: [addr.host], conditions: { ready: true } }],
    ports,
  };
  const endpoints: KubeObject = {
    apiVersion: "v1",
    kind: "Endpoints",
    metadata: {
      name: "kubernetes",
      namespace: "default",
      labels: { "endpointslice.kubernetes.io/skip-mirror": "true" },
    },
    subsets: [{ addresses: [{ ip: addr.host }], ports }],
  };
  const put = async (
    group: string,
    version: string,
    resource: string,
    obj: KubeObject,
    same: (o: KubeObject) => boolean,
  ) => {
    const store = new Store(env, lookupGVR(group, version, resource)!);
    const have = await store.find("default", "kubernetes");
    if (have && same(have)) return;
    try {
      if (!have) await store.create(obj);
      else
        await store.update(
          { ...obj, metadata: { ...have.metadata, labels: obj.metadata.labels } },
          { expectRV: have.metadata.resourceVersion },
        );
    } catch (e) {
      if (!(e instanceof StatusError && (e.code === 409 || e.reason === "AlreadyExists"))) throw e;
    }
  };
  const json = (v: unknown) => JSON.stringify(v);
  await put(
    "discovery.k8s.io",
    "v1",
    "endpointslices",
    slice,
    (o) =>
      json([o.addressType, o.endpoints, o.ports]) === json([slice.addressType, slice.endpoints, slice.ports]),
  );
  // Endpoints hold IPs only: a hostname is published in the slice alone
  if (ip) await put("", "v1", "endpoints", endpoints, (o) => json(o.subsets) === json(endpoints.subsets));
}

/** Everything above; each part on its own, so one failing does not stop the others. */
export async function reconcileClusterNetwork(env: Env): Promise<void> {
  const results = await Promise.allSettled([
    ensureKubeDnsService(env),
    ensureNetworkConfigMap(env),
    publishApiserverEndpoints(env),
  ]);
  for (const r of results) if (r.status === "rejected") console.error("cluster network bootstrap:", r.reason);
}
