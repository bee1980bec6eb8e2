// Every resource edgeplane serves, with lookups by GVR, by kind and by short name.

import type { ResourceDef } from "../resource";
import { apiVersionOf } from "../resource";
import {
  mutatingwebhookconfigurations,
  validatingadmissionpolicies,
  validatingadmissionpolicybindings,
  validatingwebhookconfigurations,
} from "./admissionregistration";
import { apiservices } from "./apiservices";
import { certificatesigningrequests } from "./certificatesigningrequests";
import { clusters } from "./clusters";
import { componentstatuses } from "./component-statuses";
import { configmaps, secrets } from "./config";
import { controllerrevisions } from "./controllerrevisions";
import { cronjobs } from "./cronjobs";
import { csidrivers, csinodes, csistoragecapacities, volumeattachments } from "./csi";
import { customresourcedefinitions } from "./customresourcedefinitions";
import { daemonsets } from "./daemonsets";
import { endpoints, podtemplates } from "./endpoints";
import { endpointslices } from "./endpointslices";
import { events, eventsV1 } from "./events";
import { horizontalpodautoscalers } from "./horizontalpodautoscalers";
import { horizontalpodautoscalersV1 } from "./hpa-v1";
import { jobs } from "./jobs";
import { leases } from "./leases";
import { nodemetrics, podmetrics } from "./metrics";
import { namespaces } from "./namespaces";
import { ingressclasses, ingresses, networkpolicies } from "./networking";
import { nodes } from "./nodes";
import { persistentvolumeclaims, persistentvolumes } from "./persistentvolumes";
import { poddisruptionbudgets } from "./poddisruptionbudgets";
import { bindings, pods } from "./pods";
import { priorityclasses } from "./priorityclasses";
import { limitranges, resourcequotas } from "./quotas";
import { clusterrolebindings, clusterroles, rolebindings, roles } from "./rbac";
import { replicationcontrollers } from "./replicationcontrollers";
import {
  localsubjectaccessreviews,
  selfsubjectaccessreviews,
  selfsubjectreviews,
  selfsubjectrulesreviews,
  subjectaccessreviews,
  tokenreviews,
} from "./reviews";
import { runtimeclasses } from "./runtimeclasses";
import { serviceaccounts } from "./serviceaccounts";
import { services } from "./services";
import { statefulsets } from "./statefulsets";
import { storageclasses } from "./storageclasses";
import { deployments, replicasets } from "./workloads";

export { humanDuration, translateAge } from "./common";
export { summarizePod } from "./pod-table";
export { podQOSClass, validatePodBinding } from "./pods";
export { scaleOf, validateScale } from "./workloads";

/** In the order upstream lists them in discovery (core group first, then by group). */
export const RESOURCES: ResourceDef[] = [
  componentstatuses,
  configmaps,
  endpoints,
  events,
  limitranges,
  namespaces,
  nodes,
  persistentvolumeclaims,
  persistentvolumes,
  pods,
  bindings,
  podtemplates,
  replicationcontrollers,
  resourcequotas,
  secrets,
  serviceaccounts,
  services,
  apiservices,
  controllerrevisions,
  daemonsets,
  deployments,
  replicasets,
  statefulsets,
  horizontalpodautoscalers,
  horizontalpodautoscalersV1,
  cronjobs,
  jobs,
  certificatesigningrequests,
  ingressclasses,
  ingresses,
  networkpolicies,
  tokenreviews,
  selfsubjectreviews,
  localsubjectaccessreviews,
  selfsubjectaccessreviews,
  selfsubjectrulesreviews,
  subjectaccessreviews,
  leases,
  eventsV1,
  endpointslices,
  poddisruptionbudgets,
  clusterrolebindings,
  clusterroles,
  rolebindings,
  roles,
  csidrivers,
  csinodes,
  csistoragecapacities,
  storageclasses,
  volumeattachments,
  priorityclasses,
  runtimeclasses,
  mutatingwebhookconfigurations,
  validatingadmissionpolicies,
  validatingadmissionpolicybindings,
  validatingwebhookconfigurations,
  customresourcedefinitions,
  // served from the nodes' usage reports (metrics-server's API, built in as k3s embeds it)
  nodemetrics,
  podmetrics,
  // edgeplane's own: the other clusters of this deployment (served in the root cluster only)
  clusters,
];

const byGVR = new Map(RESOURCES.map((r) => [`${r.group}/${r.version}/${r.resource}`, r]));
const byKind = new Map(RESOURCES.map((r) => [`${apiVersionOf(r)}/${r.kind}`, r]));

export function findResource(group: string, version: string, resource: string): ResourceDef | undefined {
  return byGVR.get(`${group}/${version}/${resource}`);
}

/** By apiVersion ("v1", "apps/v1") and kind ("Pod"). */
export function findByKind(apiVersion: string, kind: string): ResourceDef | undefined {
  return byKind.get(`${apiVersion}/${kind}`);
}

/**
 * Resolves what a user typed (plural, singular, short name, kind, optionally
 * "name.group") to resources; core group first, as kubectl prefers it.
 */
export function resolveShortName(name: string): ResourceDef[] {
  const lower = name.toLowerCase();
  const dot = lower.indexOf(".");
  const base = dot < 0 ? lower : lower.slice(0, dot);
  const group = dot < 0 ? undefined : lower.slice(dot + 1);
  return RESOURCES.filter(
    (r) =>
      (group === undefined || r.group === group) &&
      (r.resource === base ||
        r.singular === base ||
        r.kind.toLowerCase() === base ||
        (r.shortNames ?? []).includes(base)),
  );
}
