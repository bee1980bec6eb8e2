// VolumeBinding (upstream's plugin of that name): a pod's claims decide where it may run. A
// missing, deleting or lost claim, or one unbound in an immediate-binding class, keeps the pod
// pending; a bound claim's volume must allow the node (node affinity); a claim of a
// WaitForFirstConsumer class needs, on the node, either an Available volume that matches it or
// a class that can provision one. Reserve records what the chosen node needs (volumes to bind,
// claims to provision there); the scheduler object writes that before the Binding and waits
// until every claim is bound (PreBind).
import { storageClassOf } from "../../../api/strategies/persistentvolumes";
import type { KubeObject } from "../../../api/types";
import { findMatchingVolume, requestedStorage, volumeFitsNode } from "../../controllers/volume/match";
import { ANN, isDelayBinding } from "../../controllers/volume/persistentvolume-binder";
import { type CycleState, type Plugin, SKIP, unresolvable } from "../framework";
import type { NodeInfo } from "../nodeinfo";
import type { PodInfo } from "../podinfo";

export const NAME = "VolumeBinding";
export const ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims";
export const ERR_NODE_CONFLICT = "node(s) had volume node affinity conflict";
export const ERR_NO_VOLUMES = "node(s) didn't find available persistent volumes to bind";
export const ERR_MISSING_PV = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
const NO_PROVISIONER = "kubernetes.io/no-provisioner";

/** What the plugin reads of the cluster's storage (the scheduler object's caches). */
export interface VolumeLister {
  claim(namespace: string, name: string): KubeObject | undefined;
  volume(name: string): KubeObject | undefined;
  volumes(): KubeObject[];
  storageClass(name: string): KubeObject | undefined;
}

/** What binding a pod to a node needs done first. */
export interface VolumeDecision {
  node: string;
  /** Available volumes to bind to claims (the volume's claimRef is written) */
  bind: { volume: KubeObject; claim: KubeObject }[];
  /** claims to provision on the node (their selected-node annotation is written) */
  provision: KubeObject[];
  /** every claim of the pod, to wait for until bound */
  claims: { namespace: string; name: string }[];
}

interface PodClaims {
  bound: KubeObject[];
  delayed: KubeObject[];
  all: { namespace: string; name: string }[];
}

const isBound = (c: KubeObject) => !!c.spec?.volumeName && !!c.metadata.annotations?.[ANN.bindCompleted];

/** The claim names a pod's volumes use, with the reason the pod cannot run yet when one is not usable. */
function podClaims(pod: PodInfo, lister: VolumeLister): PodClaims | string {
  const ns = pod.pod.metadata.namespace ?? "";
  const out: PodClaims = { bound: [], delayed: [], all: [] };
  let immediate = false;
  for (const v of (pod.pod.spec?.volumes ?? []) as any[]) {
    const ephemeral = !!v?.ephemeral;
    const name =
      v?.persistentVolumeClaim?.claimName ?? (ephemeral ? `${pod.pod.metadata.name}-${v.name}` : undefined);
    if (!name) continue;
    const claim = lister.claim(ns, name);
    if (!claim)
      return ephemeral
        ? `waiting for ephemeral volume controller to create the persistentvolumeclaim "${name}"`
        : `persistentvolumeclaim "${name}" not found`;
    if (claim.status?.phase === "Lost")
      return `persistentvolumeclaim "${name}" bound to non-existent persistentvolume "${claim.spec?.volumeName ?? ""}"`;
    if (claim.metadata.deletionTimestamp) return `persistentvolumeclaim "${name}" is being deleted`;
    if (
      ephemeral &&
      !claim.metadata.ownerReferences?.some((r) => r.controller && r.uid === pod.pod.metadata.uid)
    )
      return `PVC ${ns}/${name} was not created for pod ${ns}/${pod.pod.metadata.name} (pod is not owner)`;
    out.all.push({ namespace: ns, name });
    if (isBound(claim)) out.bound.push(claim);
    else if (!claim.spec?.volumeName && isDelayBinding(claim, (n) => lister.storageClass(n)))
      out.delayed.push(claim);
    else immediate = true;
  }
  return immediate ? ERR_UNBOUND_IMMEDIATE : out;
}

const nodeOf = (n: NodeInfo) => ({ name: n.name, labels: n.labels });

export function volumeBinding(): Plugin & {
  decision(podKey: string): VolumeDecision | undefined;
  forget(podKey: string): void;
} {
  /** decisions of reserved pods, and the volumes they were promised */
  const decisions = new Map<string, VolumeDecision>();
  const promised = new Set<string>();

  /** What the node needs for the pod's claims, or why it cannot take them. */
  function decide(state: CycleState, node: NodeInfo): VolumeDecision | string {
    const claims = state.read<PodClaims>(NAME)!;
    const lister = state.snapshot.volumes!;
    const at = nodeOf(node);
    for (const c of claims.bound) {
      const pv = lister.volume(c.spec.volumeName);
      if (!pv) return ERR_MISSING_PV;
      if (!volumeFitsNode(pv, at)) return ERR_NODE_CONFLICT;
    }
    const decision: VolumeDecision = { node: node.name, bind: [], provision: [], claims: claims.all };
    const excluded = new Set(promised);
    // the smallest requests first, as upstream matches them
    const delayed = [...claims.delayed].sort((a, b) => requestedStorage(a) - requestedStorage(b));
    for (const claim of delayed) {
      const selected = claim.metadata.annotations?.[ANN.selectedNode];
      if (selected && selected !== node.name) return ERR_NO_VOLUMES;
      const pv = findMatchingVolume(claim, lister.volumes(), { node: at, delayBinding: true, excluded });
      if (pv) {
        excluded.add(pv.metadata.name!);
        decision.bind.push({ volume: pv, claim });
        continue;
      }
      const sc = lister.storageClass(storageClassOf(claim));
      const provisioner = String((sc as any)?.provisioner ?? "");
      if (!provisioner || provisioner === NO_PROVISIONER || !topologyAllows(sc!, at.labels))
        return ERR_NO_VOLUMES;
      decision.provision.push(claim);
    }
    return decision;
  }

  return {
    name: NAME,
    preFilter(state, pod) {
      const lister = state.snapshot.volumes;
      if (!lister) return SKIP;
      const claims = podClaims(pod, lister);
      if (typeof claims === "string") return unresolvable(claims);
      if (!claims.all.length) return SKIP;
      state.write(NAME, claims);
      return undefined;
    },
    filter(state, _pod, node) {
      if (!state.read<PodClaims>(NAME)) return undefined;
      const d = decide(state, node);
      return typeof d === "string" ? unresolvable(d) : undefined;
    },
    reserve(state, pod, nodeName) {
      if (!state.read<PodClaims>(NAME)) return undefined;
      const node = state.snapshot.get(nodeName);
      const d = node ? decide(state, node) : ERR_NO_VOLUMES;
      if (typeof d === "string") return unresolvable(d);
      decisions.set(pod.key, d);
      for (const b of d.bind) promised.add(b.volume.metadata.name!);
      return undefined;
    },
    unreserve(_state, pod) {
      this.forget(pod.key);
    },
    decision: (key) => decisions.get(key),
    forget(key) {
      const d = decisions.get(key);
      decisions.delete(key);
      for (const b of d?.bind ?? []) promised.delete(b.volume.metadata.name!);
    },
  };
}

/** A class's allowedTopologies admit the node (no terms: every node). */
function topologyAllows(sc: KubeObject, labels: Record<string, string>): boolean {
  const terms: any[] = (sc as any).allowedTopologies ?? [];
  if (!terms.length) return true;
  return terms.some((t) =>
    ((t?.matchLabelExpressions ?? []) as any[]).every((e) => (e?.values ?? []).includes(labels[e?.key])),
  );
}
