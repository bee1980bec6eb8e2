// OpenAPI definitions of edgeplane's own kinds, which no upstream schema (nor
// kubernetes-models) has: written here in the generated definitions' shape and merged
// with them (definitions.ts).
import type { Schema } from "./definitions";

const REF = "#/definitions/";
const API_VERSION: Schema = {
  type: "string",
  description: "The versioned schema of this representation of an object.",
};
const KIND: Schema = {
  type: "string",
  description: "The REST resource this object represents, in CamelCase.",
};

const CLUSTER = "dev.edgeplane.tenancy.v1alpha1.Cluster";

export const OWN_DEFINITIONS: Record<string, Schema> = {
  [CLUSTER]: {
    description: "Cluster is another cluster served by this deployment, at /clusters/<name>/.",
    type: "object",
    properties: {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { $ref: `${REF}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta` },
      spec: {
        description: "What the cluster is asked to be.",
        type: "object",
        properties: {
          limits: {
            description: "Limits on the cluster's use.",
            type: "object",
            properties: {
              requestsPerSecond: {
                description:
                  "Requests per second the cluster takes (per isolate); past it, 429 TooManyRequests.",
                type: "integer",
                format: "int32",
              },
              objects: {
                description:
                  "Objects the cluster may hold, of all resources together; a create past it is 403 Forbidden (exceeded quota).",
                type: "integer",
                format: "int64",
              },
            },
          },
        },
      },
      status: {
        description: "What the cluster is.",
        type: "object",
        properties: {
          phase: { description: "Ready, or Terminating while it is deleted.", type: "string" },
          url: { description: "The path the cluster is served under.", type: "string" },
          objects: {
            description: "Objects the cluster holds, all resources together (kept by its stores).",
            type: "integer",
            format: "int64",
          },
          nodes: { description: "Nodes of the cluster.", type: "integer", format: "int64" },
          counts: {
            description: 'Objects the cluster holds per resource ("pods", "deployments.apps").',
            type: "object",
            additionalProperties: { type: "integer", format: "int64" },
          },
        },
      },
    },
    "x-kubernetes-group-version-kind": [
      { group: "tenancy.edgeplane.dev", kind: "Cluster", version: "v1alpha1" },
    ],
  },
  [`${CLUSTER}List`]: {
    description: "ClusterList is a list of Clusters.",
    type: "object",
    required: ["items"],
    properties: {
      apiVersion: API_VERSION,
      items: { description: "The clusters.", type: "array", items: { $ref: `${REF}${CLUSTER}` } },
      kind: KIND,
      metadata: { $ref: `${REF}io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta` },
    },
    "x-kubernetes-group-version-kind": [
      { group: "tenancy.edgeplane.dev", kind: "ClusterList", version: "v1alpha1" },
    ],
  },
};
