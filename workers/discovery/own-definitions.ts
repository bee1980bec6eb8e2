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
const METRICS = "io.k8s.metrics.pkg.apis.metrics.v1beta1";
const QUANTITY: Schema = { $ref: `${REF}io.k8s.apimachinery.pkg.api.resource.Quantity` };
const METRICS_GVK = (kind: string) => [{ group: "metrics.k8s.io", kind, version: "v1beta1" }];
const USAGE: Schema = {
  description: "The memory working set and the CPU used over the window.",
  type: "object",
  additionalProperties: QUANTITY,
};
const SAMPLED = {
  timestamp: {
    description: "The end of the window the usage was measured over.",
    type: "string",
    format: "date-time",
  },
  window: { description: "The window's length (a Go duration, e.g. 15s).", type: "string" },
};
const metricsList = (kind: string, what: string): Schema => ({
  description: `${kind}List is a list of ${kind}.`,
  type: "object",
  required: ["items"],
  properties: {
    apiVersion: API_VERSION,
    items: { description: what, type: "array", items: { $ref: `${REF}${METRICS}.${kind}` } },
    kind: KIND,
    metadata: { $ref: `${REF}io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta` },
  },
  "x-kubernetes-group-version-kind": METRICS_GVK(`${kind}List`),
});

export const OWN_DEFINITIONS: Record<string, Schema> = {
  // metrics.k8s.io/v1beta1, served from the nodes' usage reports (k8s.io/metrics' types)
  [`${METRICS}.NodeMetrics`]: {
    description: "NodeMetrics sets resource usage metrics of a node.",
    type: "object",
    properties: {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { $ref: `${REF}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta` },
      ...SAMPLED,
      usage: USAGE,
    },
    "x-kubernetes-group-version-kind": METRICS_GVK("NodeMetrics"),
  },
  [`${METRICS}.NodeMetricsList`]: metricsList("NodeMetrics", "The nodes' metrics."),
  [`${METRICS}.ContainerMetrics`]: {
    description: "ContainerMetrics sets resource usage metrics of a container.",
    type: "object",
    required: ["name", "usage"],
    properties: { name: { description: "The container's name.", type: "string" }, usage: USAGE },
  },
  [`${METRICS}.PodMetrics`]: {
    description: "PodMetrics sets resource usage metrics of a pod.",
    type: "object",
    required: ["containers"],
    properties: {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: { $ref: `${REF}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta` },
      ...SAMPLED,
      containers: {
        description: "The usage of each of the pod's running containers.",
        type: "array",
        items: { $ref: `${REF}${METRICS}.ContainerMetrics` },
      },
    },
    "x-kubernetes-group-version-kind": METRICS_GVK("PodMetrics"),
  },
  [`${METRICS}.PodMetricsList`]: metricsList("PodMetrics", "The pods' metrics."),
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
            // count/<resource>[.<group>], as ResourceQuota's object counts
            additionalProperties: {
              description:
                "count/<resource>.<group> (count/pods, count/deployments.apps): objects of that resource the cluster may hold; a create past it is 403 Forbidden (exceeded quota).",
              type: "integer",
              format: "int64",
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
