// Which store shards wake which control-plane objects on commit. A shard pokes its
// subscribers after every commit (coalesced: at most one poke in flight per subscriber);
// the subscriber then pulls the changes it has not seen.

import { ROOT_CA_CONFIGMAP, SA_TOKEN_SECRET_TYPE } from "../../../api/strategies/config";
import type { KubeObject } from "../../../api/types";

export type Subscriber = "controllers" | "scheduler";

export const SUBSCRIPTIONS: Record<string, Subscriber[]> = {
  "/pods": ["controllers", "scheduler"],
  "/nodes": ["controllers", "scheduler"],
  "/namespaces": ["controllers"],
  "/serviceaccounts": ["controllers"],
  "/configmaps": ["controllers"],
  "/secrets": ["controllers"],
  "/services": ["controllers"],
  "/endpoints": ["controllers"],
  "discovery.k8s.io/endpointslices": ["controllers"],
  "apps/replicasets": ["controllers"],
  "/replicationcontrollers": ["controllers"],
  "apps/deployments": ["controllers"],
  "apps/daemonsets": ["controllers"],
  "apps/statefulsets": ["controllers"],
  "apps/controllerrevisions": ["controllers"],
  "batch/jobs": ["controllers"],
  "policy/poddisruptionbudgets": ["controllers"],
  "batch/cronjobs": ["controllers"],
  "coordination.k8s.io/leases": ["controllers"],
  "/persistentvolumeclaims": ["controllers", "scheduler"],
  "/persistentvolumes": ["controllers", "scheduler"],
  "storage.k8s.io/storageclasses": ["controllers", "scheduler"],
  "autoscaling/horizontalpodautoscalers": ["controllers"],
  "apiextensions.k8s.io/customresourcedefinitions": ["controllers"],
  "certificates.k8s.io/certificatesigningrequests": ["controllers"],
  "apiregistration.k8s.io/apiservices": ["controllers"],
};

/**
 * Of these resources the controllers cache only the objects a controller reads (upstream's
 * filtered informers): every ConfigMap and Secret of the cluster, data and all, would sit in
 * the one isolate that runs every controller, for the root CA publisher's one map per
 * namespace and the tokens controller's token Secrets.
 */
export const CACHE_FILTERS: Record<string, (obj: KubeObject) => boolean> = {
  "/configmaps": (cm) => cm.metadata.name === ROOT_CA_CONFIGMAP,
  "/secrets": (s) => (s as { type?: string }).type === SA_TOKEN_SECRET_TYPE,
};

/** Resources each subscriber caches (the keys of SUBSCRIPTIONS it appears in). */
export function resourcesOf(s: Subscriber): string[] {
  return Object.entries(SUBSCRIPTIONS)
    .filter(([, subs]) => subs.includes(s))
    .map(([k]) => k);
}
