// core/v1 namespaces.

import { field } from "../errors";
import type { ResourceDef } from "../resource";
import { validateMeta } from "../validation/metadata";
import { isQualifiedName, nameIsDNSLabel } from "../validation/names";
import { ageColumn, column, ensureObject, nameColumn } from "./common";

const STANDARD_FINALIZERS = ["kubernetes", "orphan", "foregroundDeletion"];

export const namespaces: ResourceDef = {
  group: "",
  version: "v1",
  resource: "namespaces",
  kind: "Namespace",
  listKind: "NamespaceList",
  singular: "namespace",
  namespaced: false,
  shortNames: ["ns"],
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"],
  subresources: {
    finalize: { kind: "Namespace", verbs: ["update"] },
    status: { kind: "Namespace", verbs: ["get", "patch", "update"] },
  },
  strategy: {
    defaults: (obj) => {
      const name = obj.metadata?.name;
      if (name) {
        obj.metadata.labels = { ...(obj.metadata.labels ?? {}), "kubernetes.io/metadata.name": name };
      }
      const status = ensureObject(obj, "status");
      if (!status.phase) status.phase = "Active";
    },
    prepareForCreate: (obj) => {
      obj.status = { phase: "Active" };
      const spec = ensureObject(obj, "spec");
      const finalizers: string[] = Array.isArray(spec.finalizers) ? spec.finalizers : [];
      if (!finalizers.includes("kubernetes")) finalizers.push("kubernetes");
      spec.finalizers = finalizers;
    },
    validate: (obj, old) => {
      const causes = validateMeta(obj, old, { namespaced: false, name: nameIsDNSLabel });
      const finalizers = Array.isArray(obj.spec?.finalizers) ? obj.spec.finalizers : [];
      finalizers.forEach((f: string) => {
        for (const msg of isQualifiedName(f)) causes.push(field.invalid("spec.finalizers", f, msg));
        if (!f.includes("/") && !STANDARD_FINALIZERS.includes(f))
          causes.push(
            field.invalid(
              "spec.finalizers",
              f,
              "name is neither a standard finalizer name nor is it fully qualified",
            ),
          );
      });
      return causes;
    },
    columns: [
      nameColumn,
      column("Status", "string", "The status of the namespace", (o) => o.status?.phase ?? ""),
      ageColumn,
    ],
    fields: (o) => ({ "status.phase": o.status?.phase ?? "" }),
    generation: false,
  },
};
