// storage.k8s.io/v1 storageclasses: how claims of a class are provisioned and bound. Upstream's
// defaults (reclaimPolicy Delete, volumeBindingMode Immediate), validation in its words (1.32:
// provisioner, parameters and reclaimPolicy are forbidden to change, volumeBindingMode is
// immutable), and the table with "(default)" after the default class's name.
import { field, type StatusCause } from "../errors";
import type { ResourceDef } from "../resource";
import { STANDARD_VERBS } from "../resource";
import type { KubeObject } from "../types";
import { deepEqual, validateMeta } from "../validation/metadata";
import { isQualifiedName } from "../validation/names";
import { ageColumn, column, isObject, NAME_DESCRIPTION } from "./common";

export const DEFAULT_CLASS_ANNOTATIONS = [
  "storageclass.kubernetes.io/is-default-class",
  "storageclass.beta.kubernetes.io/is-default-class",
];

/** A class is the default when either annotation is exactly "true". */
export const isDefaultClass = (sc: KubeObject) =>
  DEFAULT_CLASS_ANNOTATIONS.some((a) => sc.metadata.annotations?.[a] === "true");

/** The built-in class and its provisioner (the controller manager's, after k3s's local-path). */
export const LOCAL_PATH_CLASS = "local-path";
export const LOCAL_PATH_PROVISIONER = "edgeplane.dev/local-path";

const MAX_PARAMETERS = 512;
const MAX_PARAMETERS_BYTES = 256 * 1024;

function validateParameters(params: unknown): StatusCause[] {
  if (!isObject(params)) return [];
  const entries = Object.entries(params);
  if (entries.length > MAX_PARAMETERS) return [field.tooLong("parameters", MAX_PARAMETERS)];
  const causes: StatusCause[] = [];
  let bytes = 0;
  for (const [k, v] of entries) {
    if (!k) causes.push(field.invalid("parameters", "", "field can not be empty."));
    bytes += k.length + String(v).length;
  }
  if (bytes > MAX_PARAMETERS_BYTES) causes.push(field.tooLong("parameters", MAX_PARAMETERS_BYTES));
  return causes;
}

function validateTopologies(terms: unknown): StatusCause[] {
  if (!Array.isArray(terms)) return [];
  const causes: StatusCause[] = [];
  const seenTerms: unknown[] = [];
  terms.forEach((term: any, i: number) => {
    const exprs: any[] = Array.isArray(term?.matchLabelExpressions) ? term.matchLabelExpressions : [];
    const keys = new Set<string>();
    exprs.forEach((e, j) => {
      const p = `allowedTopologies[${i}].matchLabelExpressions[${j}]`;
      const values: string[] = Array.isArray(e?.values) ? e.values : [];
      if (!values.length) causes.push(field.required(`${p}.values`));
      const seen = new Set<string>();
      values.forEach((v, k) => {
        if (seen.has(v)) causes.push(field.duplicate(`${p}.values[${k}]`, v));
        seen.add(v);
      });
      for (const msg of isQualifiedName(String(e?.key ?? "")))
        causes.push(field.invalid(`${p}.key`, e?.key, msg));
      if (keys.has(e?.key)) causes.push(field.duplicate(`${p}.key`, e.key));
      keys.add(e?.key);
    });
    if (seenTerms.some((t) => deepEqual(t, exprs)))
      causes.push(field.duplicate(`allowedTopologies[${i}].matchLabelExpressions`, ""));
    seenTerms.push(exprs);
  });
  return causes;
}

export function validateStorageClass(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = validateMeta(obj, old, { namespaced: false });
  const sc = obj as any;
  if (!sc.provisioner) causes.push(field.required("provisioner"));
  else {
    const lower = String(sc.provisioner).toLowerCase();
    for (const msg of isQualifiedName(lower)) causes.push(field.invalid("provisioner", lower, msg));
  }
  causes.push(...validateParameters(sc.parameters));
  if (sc.reclaimPolicy && !["Delete", "Retain"].includes(sc.reclaimPolicy))
    causes.push(field.notSupported("reclaimPolicy", sc.reclaimPolicy, ["Delete", "Retain"]));
  const modes = ["Immediate", "WaitForFirstConsumer"];
  if (sc.volumeBindingMode == null) causes.push(field.required("volumeBindingMode"));
  else if (!modes.includes(sc.volumeBindingMode))
    causes.push(field.notSupported("volumeBindingMode", sc.volumeBindingMode, modes));
  causes.push(...validateTopologies(sc.allowedTopologies));
  if (old) {
    const was = old as any;
    for (const f of ["parameters", "provisioner", "reclaimPolicy"])
      if (!deepEqual(sc[f], was[f])) causes.push(field.forbidden(f, `updates to ${f} are forbidden.`));
    if (sc.volumeBindingMode !== was.volumeBindingMode)
      causes.push(field.invalid("volumeBindingMode", sc.volumeBindingMode ?? null, "field is immutable"));
  }
  return causes;
}

export const storageclasses: ResourceDef = {
  group: "storage.k8s.io",
  version: "v1",
  resource: "storageclasses",
  kind: "StorageClass",
  listKind: "StorageClassList",
  singular: "storageclass",
  namespaced: false,
  shortNames: ["sc"],
  verbs: STANDARD_VERBS,
  strategy: {
    defaults: (obj) => {
      const sc = obj as any;
      sc.reclaimPolicy ??= "Delete";
      sc.volumeBindingMode ??= "Immediate";
    },
    validate: validateStorageClass,
    columns: [
      {
        name: "Name",
        type: "string",
        format: "name",
        description: NAME_DESCRIPTION,
        priority: 0,
        cell: (o) => `${o.metadata.name}${isDefaultClass(o) ? " (default)" : ""}`,
      },
      column(
        "Provisioner",
        "string",
        "provisioner indicates the type of the provisioner.",
        (o: any) => o.provisioner ?? "",
      ),
      column(
        "ReclaimPolicy",
        "string",
        "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
        (o: any) => o.reclaimPolicy ?? "Delete",
      ),
      column(
        "VolumeBindingMode",
        "string",
        "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
        (o: any) => o.volumeBindingMode ?? "Immediate",
      ),
      column(
        "AllowVolumeExpansion",
        "string",
        "allowVolumeExpansion shows whether the storage class allow volume expand.",
        (o: any) => o.allowVolumeExpansion === true,
      ),
      ageColumn,
    ],
  },
};
