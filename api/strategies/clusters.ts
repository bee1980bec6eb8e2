// tenancy.edgeplane.dev/v1alpha1 clusters: the other clusters this deployment serves, each
// at /clusters/<name>/ (docs/clusters.md). Kept in the root cluster only. A cluster is ready
// as soon as its object is stored: its own objects come up on its first request. The name
// is a DNS-1123 label (it is a URL path segment); "root" is the root cluster's and reserved.
// Deleting one empties every Durable Object it used (workers/clusters/teardown.ts); its
// admin credential is its `token` subresource (a TokenRequest, workers/clusters/handlers.ts),
// or a client certificate of its own CA, its `certificate` subresource (a
// CertificateSigningRequest whose status carries the certificate).
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateMeta } from "../validation/metadata";
import { isDNS1123Label } from "../validation/names";
import { ageColumn, column, isObject, nameColumn } from "./common";

export const ROOT_CLUSTER_NAME = "root";
export const CLUSTERS_GROUP = "tenancy.edgeplane.dev";
/** spec.limits' keys for one resource's objects: count/<resource>[.<group>] */
export const COUNT_PREFIX = "count/";
const LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const COUNT_RESOURCE = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

/** The path a cluster is served under. */
export function clusterPath(name: string): string {
  return `/clusters/${name}`;
}

function validateCluster(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false });
  const name = obj.metadata?.name ?? "";
  if (!old && name && !obj.metadata?.generateName) {
    // a path segment: a label, not a subdomain (validateMeta allowed dots)
    for (const m of isDNS1123Label(name)) causes.push(field.invalid("metadata.name", name, m));
    if (name === ROOT_CLUSTER_NAME)
      causes.push(field.invalid("metadata.name", name, "is reserved for the root cluster"));
  }
  const spec = (obj as { spec?: unknown }).spec;
  if (spec !== undefined && spec !== null && !isObject(spec))
    causes.push(field.invalid("spec", spec as string, "must be an object"));
  const limits = isObject(spec) ? spec.limits : undefined;
  if (limits !== undefined && limits !== null) {
    if (!isObject(limits)) causes.push(field.invalid("spec.limits", limits as string, "must be an object"));
    else {
      for (const key of ["requestsPerSecond", "objects"]) {
        const v = limits[key];
        if (v !== undefined && v !== null && (typeof v !== "number" || !Number.isInteger(v) || v < 1))
          causes.push(field.invalid(`spec.limits.${key}`, v as number, "must be a positive integer"));
      }
      // per resource, as ResourceQuota's object counts: count/pods, count/deployments.apps
      for (const [key, v] of Object.entries(limits)) {
        if (!key.startsWith(COUNT_PREFIX)) continue;
        const path = `spec.limits[${key}]`;
        if (!COUNT_RESOURCE.test(key.slice(COUNT_PREFIX.length)))
          causes.push(
            field.invalid(path, key, "must be count/<resource> or count/<resource>.<group>, in lower case"),
          );
        else if (typeof v !== "number" || !Number.isInteger(v) || v < 0)
          causes.push(field.invalid(path, v as number, "must be a non-negative integer"));
      }
    }
  }
  return causes;
}

interface ClusterStatus {
  phase?: string;
  url?: string;
  /** objects stored in the cluster, all resources (published by its controller manager) */
  objects?: number;
  nodes?: number;
  /** objects per resource: "pods", "deployments.apps" */
  counts?: Record<string, number>;
}

const statusOf = (o: KubeObject): ClusterStatus => (o as { status?: ClusterStatus }).status ?? {};

export const clusters: ResourceDef = {
  group: CLUSTERS_GROUP,
  version: "v1alpha1",
  resource: "clusters",
  kind: "Cluster",
  listKind: "ClusterList",
  singular: "cluster",
  namespaced: false,
  // no deletecollection: each cluster's delete tears it down (workers/clusters/handlers.ts)
  verbs: STANDARD_VERBS.filter((v) => v !== "deletecollection"),
  subresources: {
    status: { kind: "Cluster", verbs: ["get", "patch", "update"] },
    // an admin credential of the cluster (system:masters in it, nobody anywhere else)
    token: { kind: "TokenRequest", group: "authentication.k8s.io", version: "v1", verbs: ["create"] },
    // a client certificate of the cluster, issued by its own client CA for the request posted
    certificate: {
      kind: "CertificateSigningRequest",
      group: "certificates.k8s.io",
      version: "v1",
      verbs: ["create"],
    },
  },
  strategy: {
    defaults: (obj) => {
      const o = obj as KubeObject & { spec?: Record<string, unknown> };
      if (!isObject(o.spec)) o.spec = {};
    },
    validate: validateCluster,
    prepareForCreate: (obj) => {
      const name = obj.metadata?.name ?? "";
      (obj as { status?: unknown }).status = { phase: "Ready", url: `${clusterPath(name)}/` };
    },
    prepareForUpdate: (obj, old) => {
      (obj as { status?: unknown }).status = (old as { status?: unknown }).status;
    },
    columns: [
      nameColumn,
      column("Phase", "string", "The cluster's phase", (o) => statusOf(o).phase ?? ""),
      column("URL", "string", "The path the cluster is served under", (o) => statusOf(o).url ?? ""),
      column("Objects", "integer", "Objects stored in the cluster", (o) => statusOf(o).objects ?? 0),
      column("Nodes", "integer", "Nodes of the cluster", (o) => statusOf(o).nodes ?? 0),
      ageColumn,
    ],
  },
};
