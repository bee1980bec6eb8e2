// Which PersistentVolume a claim may bind to (upstream's FindMatchingVolume and the PV
// controller's access-mode index), shared by the PV controller and the scheduler's
// VolumeBinding plugin: a volume pre-bound to the claim wins; otherwise the smallest Available,
// unclaimed volume of the claim's class whose capacity, volume mode, access modes, labels (the
// claim's selector) and node affinity (when a node is given) fit.

import { parseQuantity } from "../../../api/quantity";
import { fromLabelSelector, matches } from "../../../api/selectors";
import { storageClassOf } from "../../../api/strategies/persistentvolumes";
import type { KubeObject } from "../../../api/types";
import { compileNodeSelector, nodeSelectorMatches } from "../../scheduler/labels";

/** spec.resources.requests.storage of a claim, in bytes. */
export function requestedStorage(pvc: KubeObject): number {
  return parseQuantity(pvc.spec?.resources?.requests?.storage) ?? 0;
}

/** Whether the volume's claimRef names this claim (and, when it has a uid, this very claim). */
export function isBoundToClaim(pv: KubeObject, pvc: KubeObject): boolean {
  const ref = pv.spec?.claimRef;
  if (!ref || ref.name !== pvc.metadata.name || ref.namespace !== pvc.metadata.namespace) return false;
  return !ref.uid || ref.uid === pvc.metadata.uid;
}

export function accessModesContain(have: string[] | undefined, want: string[] | undefined): boolean {
  const set = new Set(have ?? []);
  return (want ?? []).every((m) => set.has(m));
}

/** Whether the volume may be used on a node with these labels (spec.nodeAffinity.required). */
export function volumeFitsNode(
  pv: KubeObject,
  node: { name: string; labels: Record<string, string> },
): boolean {
  const terms = pv.spec?.nodeAffinity?.required?.nodeSelectorTerms;
  if (!Array.isArray(terms)) return true;
  return nodeSelectorMatches(compileNodeSelector(terms), node.labels, node.name);
}

const modeOf = (spec: any) => spec?.volumeMode ?? "Filesystem";

export interface MatchOptions {
  /** the scheduler's candidate node: node affinity and access modes are checked against it */
  node?: { name: string; labels: Record<string, string> };
  /** the claim's class binds on first consumer: without a node, only a pre-bound volume matches */
  delayBinding?: boolean;
  /** volumes already promised to other claims in this pass */
  excluded?: Set<string>;
}

/** The volume the claim binds to, if one matches. */
export function findMatchingVolume(
  pvc: KubeObject,
  volumes: Iterable<KubeObject>,
  opts: MatchOptions = {},
): KubeObject | undefined {
  const wanted = requestedStorage(pvc);
  const cls = storageClassOf(pvc);
  const modes: string[] = pvc.spec?.accessModes ?? [];
  let selector: ReturnType<typeof fromLabelSelector> = null;
  try {
    selector = pvc.spec?.selector ? fromLabelSelector(pvc.spec.selector) : null;
  } catch {
    return undefined;
  }
  let best: { pv: KubeObject; size: number; modes: number } | undefined;
  for (const pv of volumes) {
    if (opts.excluded?.has(pv.metadata.name!)) continue;
    const size = parseQuantity(pv.spec?.capacity?.storage) ?? 0;
    if (size < wanted || modeOf(pv.spec) !== modeOf(pvc.spec) || pv.metadata.deletionTimestamp) continue;
    const fits = !opts.node || volumeFitsNode(pv, opts.node);
    if (isBoundToClaim(pv, pvc)) {
      if (storageClassOf(pv) !== cls || !fits) continue;
      return pv;
    }
    if (!opts.node && opts.delayBinding) continue;
    if (pv.status?.phase !== "Available" || pv.spec?.claimRef) continue;
    if (selector && !matches(selector, pv.metadata.labels)) continue;
    if (storageClassOf(pv) !== cls || !fits) continue;
    if (!accessModesContain(pv.spec?.accessModes, modes)) continue;
    // the fewest access modes first (as upstream's index tries them), then the smallest
    const n = (pv.spec?.accessModes ?? []).length;
    if (!best || n < best.modes || (n === best.modes && size < best.size)) best = { pv, size, modes: n };
  }
  return best?.pv;
}
