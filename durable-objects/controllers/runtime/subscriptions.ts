// Which store shards wake which control-plane objects on commit. A shard pokes its
// subscribers after every commit (coalesced: at most one poke in flight per subscriber);
// the subscriber then pulls the changes it has not seen.

export type Subscriber = "controllers" | "scheduler";

export const SUBSCRIPTIONS: Record<string, Subscriber[]> = {
  "/pods": ["controllers", "scheduler"],
  "/nodes": ["controllers", "scheduler"],
  "/namespaces": ["controllers"],
  "/serviceaccounts": ["controllers"],
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
};

/** Resources each subscriber caches (the keys of SUBSCRIPTIONS it appears in). */
export function resourcesOf(s: Subscriber): string[] {
  return Object.entries(SUBSCRIPTIONS)
    .filter(([, subs]) => subs.includes(s))
    .map(([k]) => k);
}
