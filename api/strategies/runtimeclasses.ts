// node.k8s.io/v1 runtimeclasses: which container runtime handler a pod's sandbox runs with
// (the node agent passes it to CRI), the overhead such pods carry, and where they may run.
// Upstream's validation (the handler a DNS label, immutable; overhead quantities; scheduling's
// node selector and tolerations, at upstream's paths) and NAME HANDLER AGE table. The
// RuntimeClass admission plugin is workers/admission/runtime-class.ts.
import { field, type StatusCause } from "../errors";
import { parseQuantity } from "../quantity";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { validateLabels, validateMeta } from "../validation/metadata";
import { isDNS1123Label, isQualifiedName } from "../validation/names";
import { ageColumn, column, isObject, nameColumn } from "./common";
import { validateTolerations } from "./pod-checks";

const CONTAINER_RESOURCES = ["cpu", "memory", "ephemeral-storage"];

/** An overhead (or a pod's spec.overhead): resource names containers may have, quantities not negative. */
export function validateOverhead(overhead: unknown, path: string): StatusCause[] {
  if (!isObject(overhead)) return [];
  const causes: StatusCause[] = [];
  for (const [name, q] of Object.entries(overhead)) {
    const p = `${path}[${name}]`;
    for (const m of isQualifiedName(name)) causes.push(field.invalid(p, name, m));
    if (!name.includes("/") && !CONTAINER_RESOURCES.includes(name) && !name.startsWith("hugepages-"))
      causes.push(field.invalid(p, name, "must be a standard resource for containers"));
    const v = parseQuantity(q);
    if (v === undefined || v < 0)
      causes.push(field.invalid(p, String(q), "must be greater than or equal to 0"));
  }
  return causes;
}

export function validateRuntimeClass(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false });
  const rc = obj as any;
  const handler = typeof rc.handler === "string" ? rc.handler : "";
  for (const m of isDNS1123Label(handler)) causes.push(field.invalid("handler", handler, m));
  causes.push(...validateOverhead(rc.overhead?.podFixed, "overhead.limits"));
  if (isObject(rc.scheduling)) {
    causes.push(...validateLabels(rc.scheduling.nodeSelector, "scheduling.nodeSelector"));
    // upstream reports a toleration's fields one "tolerations" deeper than the list
    causes.push(...validateTolerations(rc.scheduling.tolerations, "scheduling.tolerations.tolerations"));
  }
  if (old && rc.handler !== (old as any).handler)
    causes.push(field.invalid("handler", rc.handler ?? null, "field is immutable"));
  return causes;
}

export const runtimeclasses: ResourceDef = {
  group: "node.k8s.io",
  version: "v1",
  resource: "runtimeclasses",
  kind: "RuntimeClass",
  listKind: "RuntimeClassList",
  singular: "runtimeclass",
  namespaced: false,
  verbs: STANDARD_VERBS,
  strategy: {
    validate: validateRuntimeClass,
    columns: [nameColumn, column("Handler", "string", "", (o: any) => o.handler ?? ""), ageColumn],
  },
};
