// The storage admission plugins upstream enables by default:
// - DefaultStorageClass: a new claim that names no class gets the default one (the newest of
//   several defaults, then by name);
// - StorageObjectInUseProtection: new claims and volumes carry the protection finalizers, which
//   the protection controllers take off once nothing uses them;
// - PersistentVolumeClaimResize: only a bound claim of a class that allows expansion may grow.

import { parseQuantity } from "../../api/quantity";
import { lookupGVR } from "../../api/registry";
import {
  BETA_CLASS,
  PV_PROTECTION,
  PVC_PROTECTION,
  storageClassOf,
} from "../../api/strategies/persistentvolumes";
import { isDefaultClass } from "../../api/strategies/storageclasses";
import type { KubeObject } from "../../api/types";
import type { AdmissionAttributes, AdmissionPlugin } from "./index";
import { admissionForbidden, cachedListIn, isCore, isObj } from "./util";

const classes = () => lookupGVR("storage.k8s.io", "v1", "storageclasses")!;

function listClasses(a: AdmissionAttributes): Promise<KubeObject[]> {
  return cachedListIn(a.w.c.env, classes());
}

/** The default class: the newest of those marked default, then the first by name. */
export function defaultClass(all: KubeObject[]): KubeObject | undefined {
  return all
    .filter(isDefaultClass)
    .sort(
      (a, b) =>
        Date.parse(b.metadata.creationTimestamp ?? "") - Date.parse(a.metadata.creationTimestamp ?? "") ||
        (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
    )[0];
}

const hasClass = (pvc: KubeObject) =>
  pvc.metadata.annotations?.[BETA_CLASS] !== undefined ||
  (isObj(pvc.spec) && pvc.spec.storageClassName != null);

export const defaultStorageClass: AdmissionPlugin = {
  name: "DefaultStorageClass",
  async mutate(a) {
    if (a.operation !== "CREATE" || !isCore(a, "persistentvolumeclaims") || !a.object) return;
    if (hasClass(a.object)) return;
    const def = defaultClass(await listClasses(a));
    if (!def) return;
    a.object.spec = { ...(a.object.spec ?? {}), storageClassName: def.metadata.name };
  },
};

export const storageObjectInUseProtection: AdmissionPlugin = {
  name: "StorageObjectInUseProtection",
  mutate(a) {
    if (a.operation !== "CREATE" || !a.object) return;
    const finalizer = isCore(a, "persistentvolumeclaims")
      ? PVC_PROTECTION
      : isCore(a, "persistentvolumes")
        ? PV_PROTECTION
        : undefined;
    if (!finalizer) return;
    const list = a.object.metadata.finalizers ?? [];
    if (!list.includes(finalizer)) a.object.metadata.finalizers = [...list, finalizer];
  },
};

export const persistentVolumeClaimResize: AdmissionPlugin = {
  name: "PersistentVolumeClaimResize",
  async validate(a) {
    if (a.operation !== "UPDATE" || !isCore(a, "persistentvolumeclaims") || !a.object || !a.old) return;
    const size = (o: KubeObject) => parseQuantity(o.spec?.resources?.requests?.storage) ?? 0;
    if (size(a.object) <= size(a.old)) return;
    if (a.old.status?.phase !== "Bound")
      throw admissionForbidden(a, "Only bound persistent volume claims can be expanded");
    const name = storageClassOf(a.object);
    const sc =
      name && name === storageClassOf(a.old)
        ? (await listClasses(a)).find((c) => c.metadata.name === name)
        : undefined;
    if ((sc as any)?.allowVolumeExpansion !== true)
      throw admissionForbidden(
        a,
        "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
      );
  },
};
