// apps/v1 controllerrevisions: the immutable snapshots of a DaemonSet's template that
// `kubectl rollout history` lists and `kubectl rollout undo` patches back.

import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { deepEqual, validateMeta } from "../validation/metadata";
import { ageColumn, column, isObject, nameColumn, nonNegative } from "./common";

export function validateControllerRevision(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: true });
  if (obj.data === undefined || obj.data === null) causes.push(field.required("data", "data is mandatory"));
  else if (!isObject(obj.data)) causes.push(field.required("data", "data must be a valid JSON object"));
  causes.push(...nonNegative(obj.revision, "revision"));
  if (old && !deepEqual(obj.data, old.data))
    causes.push(field.invalid("data", obj.data ?? null, "field is immutable"));
  return causes;
}

/** The controller an object names, as kubectl prints it: `daemonset.apps/name`, or `<none>`. */
export function controllerName(obj: KubeObject): string {
  const ref = obj.metadata.ownerReferences?.find((r) => r.controller === true);
  if (!ref) return "<none>";
  const slash = ref.apiVersion.indexOf("/");
  const group = slash < 0 ? "" : ref.apiVersion.slice(0, slash);
  return `${ref.kind.toLowerCase()}${group ? `.${group}` : ""}/${ref.name}`;
}

export const controllerrevisions: ResourceDef = {
  group: "apps",
  version: "v1",
  resource: "controllerrevisions",
  kind: "ControllerRevision",
  listKind: "ControllerRevisionList",
  singular: "controllerrevision",
  namespaced: true,
  verbs: STANDARD_VERBS,
  strategy: {
    validate: validateControllerRevision,
    columns: [
      nameColumn,
      column("Controller", "string", "Controller of the object", controllerName),
      column(
        "Revision",
        "string",
        "revision indicates the revision of the state represented by Data.",
        (o) => (typeof o.revision === "number" ? o.revision : 0),
      ),
      ageColumn,
    ],
  },
};
