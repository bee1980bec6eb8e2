// metrics.k8s.io/v1beta1: NodeMetrics (cluster-scoped `nodes`) and PodMetrics (namespaced
// `pods`), the resource metrics API kubectl top and the HPA read. Never stored: each answer is
// drawn from the nodes' latest reports (workers/handlers/metrics.ts). Get and list only, as
// metrics-server serves them; the table has metrics-server's columns.
import { METRICS_GROUP, podUsageTotal } from "../metrics";
import type { ResourceDef, TableColumn } from "../resource";
import type { KubeObject } from "../types";
import { nameColumn } from "./common";

const usage = (o: KubeObject): Record<string, string> =>
  ((o as { usage?: Record<string, string> }).usage ?? {}) as Record<string, string>;

const quantityColumn = (name: string, cell: TableColumn["cell"]): TableColumn => ({
  name,
  type: "string",
  format: "quantity",
  description: "",
  priority: 0,
  cell,
});

const windowColumn: TableColumn = {
  name: "Window",
  type: "string",
  format: "duration",
  description: "",
  priority: 0,
  cell: (o) => (o as { window?: string }).window ?? "",
};

export const nodemetrics: ResourceDef = {
  group: METRICS_GROUP,
  version: "v1beta1",
  resource: "nodes",
  kind: "NodeMetrics",
  listKind: "NodeMetricsList",
  singular: "",
  namespaced: false,
  verbs: ["get", "list"],
  strategy: {
    columns: [
      nameColumn,
      quantityColumn("cpu", (o) => usage(o).cpu ?? ""),
      quantityColumn("memory", (o) => usage(o).memory ?? ""),
      windowColumn,
    ],
  },
};

export const podmetrics: ResourceDef = {
  group: METRICS_GROUP,
  version: "v1beta1",
  resource: "pods",
  kind: "PodMetrics",
  listKind: "PodMetricsList",
  singular: "",
  namespaced: true,
  verbs: ["get", "list"],
  strategy: {
    columns: [
      nameColumn,
      quantityColumn("cpu", (o) => podUsageTotal(o).cpu),
      quantityColumn("memory", (o) => podUsageTotal(o).memory),
      windowColumn,
    ],
  },
};
