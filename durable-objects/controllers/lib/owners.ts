import { fromLabelSelector, matches, type Selector } from "../../../api/selectors";
import type { KubeObject, OwnerReference } from "../../../api/types";

export function controllerRefOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true);
}

export function newControllerRef(owner: KubeObject, apiVersion: string, kind: string): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.metadata.name!,
    uid: owner.metadata.uid!,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * The parsed spec.selector of a workload; null selects nothing. A ReplicationController's
 * selector is a plain map of labels (every value a string), read as matchLabels.
 */
export function selectorOf(obj: KubeObject): Selector | null {
  const sel = obj.spec?.selector;
  const map =
    sel &&
    typeof sel === "object" &&
    !Array.isArray(sel) &&
    Object.values(sel).every((v) => typeof v === "string");
  try {
    return fromLabelSelector(map ? { matchLabels: sel } : sel);
  } catch {
    return null;
  }
}

export function selects(obj: KubeObject, target: KubeObject): boolean {
  const sel = selectorOf(obj);
  return !!sel && sel.length > 0 && matches(sel, target.metadata.labels);
}
