// The ConfigMap kube-system/edgeplane-network: the cluster's network as node agents need it
// (cluster CIDR, node block size, Service range, routing backend), published when the cluster
// starts, as kubeadm publishes kube-proxy's and kubelet's configuration. Made when absent; then
// only keys it lacks are added (a newer version publishing more): an admin's edits (e.g. the
// backend) stay, and agents read it when they join.
import { StatusError } from "../api/errors";
import { NETWORK_CONFIGMAP, NETWORK_CONFIGMAP_NAMESPACE, networkConfigData, networkOf } from "../api/network";
import { lookupGVR } from "../api/registry";
import type { KubeObject } from "../api/types";
import type { Env } from "../durable-objects/env";
import { Store } from "../durable-objects/store/client";

export async function ensureNetworkConfigMap(env: Env): Promise<void> {
  const def = lookupGVR("", "v1", "configmaps")!;
  const store = new Store(env, def);
  const data = networkConfigData(networkOf(env).settings);
  const have = await store.find(NETWORK_CONFIGMAP_NAMESPACE, NETWORK_CONFIGMAP);
  if (have) {
    const missing = Object.keys(data).filter((k) => have.data?.[k] === undefined);
    if (!missing.length) return;
    const next = {
      ...have,
      data: { ...Object.fromEntries(missing.map((k) => [k, data[k]])), ...(have.data ?? {}) },
    };
    try {
      await store.update(next, { expectRV: have.metadata.resourceVersion });
    } catch (e) {
      // changed meanwhile: the next reconcile (every minute) looks again
      if (!(e instanceof StatusError && (e.reason === "Conflict" || e.reason === "NotFound"))) throw e;
    }
    return;
  }
  const cm: KubeObject = {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: {
      name: NETWORK_CONFIGMAP,
      namespace: NETWORK_CONFIGMAP_NAMESPACE,
      annotations: {
        "kubernetes.io/description":
          "How node agents lay out the pod network: read by every edgelet when it joins (docs/networking.md).",
      },
    },
    data,
  };
  def.strategy.defaults?.(cm);
  def.strategy.prepareForCreate?.(cm);
  try {
    await store.create(cm);
  } catch (e) {
    if (!(e instanceof StatusError && e.reason === "AlreadyExists")) throw e;
  }
}
