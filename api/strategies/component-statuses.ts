// core/v1 componentstatuses: the health of the control plane's parts, probed when asked,
// never stored (workers/handlers/component-statuses.ts). Deprecated upstream since 1.19 and
// still served there, so `kubectl get cs` keeps working; get and list only.

import type { ResourceDef } from "../resource";
import type { KubeObject } from "../types";
import { column, nameColumn } from "./common";

/** The Healthy condition's status as the Table says it (upstream's printer). */
function healthOf(o: KubeObject): { status: string; message: string; error: string } {
  const c = (o.conditions as { type: string; status: string; message?: string; error?: string }[]).find(
    (x) => x.type === "Healthy",
  );
  if (!c) return { status: "Unknown", message: "", error: "" };
  return {
    status: c.status === "True" ? "Healthy" : "Unhealthy",
    message: c.message ?? "",
    error: c.error ?? "",
  };
}

export const componentstatuses: ResourceDef = {
  group: "",
  version: "v1",
  resource: "componentstatuses",
  kind: "ComponentStatus",
  listKind: "ComponentStatusList",
  singular: "componentstatus",
  namespaced: false,
  shortNames: ["cs"],
  verbs: ["get", "list"],
  deprecation: "v1 ComponentStatus is deprecated in v1.19+",
  strategy: {
    columns: [
      nameColumn,
      column("Status", "string", "Status of the component conditions", (o) => healthOf(o).status),
      column("Message", "string", "Message of the component conditions", (o) => healthOf(o).message),
      column("Error", "string", "Error of the component conditions", (o) => healthOf(o).error),
    ],
  },
};
