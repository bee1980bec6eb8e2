// Per-pod facts the plugins need, computed once per pod (not once per node):
// effective resource requests, host ports, affinity terms.

import { tryParseQuantity as tryParse } from "../../api/quantity";
import type { KubeObject } from "../../api/types";
import {
  compileLabelSelector,
  compileMapSelector,
  compileNodeSelector,
  type LabelSelectorSpec,
  type NodeSelector,
  type NodeSelectorTermSpec,
  nodeSelectorMatches,
  type Selector,
  selectorMatches,
} from "./labels";

export type Pod = KubeObject;
export type Node = KubeObject;

/** Default requests the scorers assume for containers that set none (upstream: 100m, 200MB). */
export const DEFAULT_MILLI_CPU_REQUEST = 100;
export const DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024;

export interface Resource {
  milliCPU: number;
  memory: number;
  ephemeralStorage: number;
  allowedPodNumber: number;
  scalar: Map<string, number> | null;
}

export function emptyResource(): Resource {
  return { milliCPU: 0, memory: 0, ephemeralStorage: 0, allowedPodNumber: 0, scalar: null };
}

export function cloneResource(r: Resource): Resource {
  return { ...r, scalar: r.scalar ? new Map(r.scalar) : null };
}

function addList(r: Resource, list: Record<string, unknown> | undefined, sign = 1): void {
  if (!list) return;
  for (const name in list) {
    const q = list[name];
    switch (name) {
      case "cpu":
        r.milliCPU += sign * tryParse(q, true);
        break;
      case "memory":
        r.memory += sign * tryParse(q, false);
        break;
      case "ephemeral-storage":
        r.ephemeralStorage += sign * tryParse(q, false);
        break;
      case "pods":
        r.allowedPodNumber += sign * tryParse(q, false);
        break;
      default:
        if (isScalarResource(name)) {
          if (!r.scalar) r.scalar = new Map();
          r.scalar.set(name, (r.scalar.get(name) ?? 0) + sign * tryParse(q, false));
        }
    }
  }
}

/** Extended (domain/name), hugepages-* and attachable-volumes-* resources. */
export function isScalarResource(name: string): boolean {
  return name.includes("/") || name.startsWith("hugepages-") || name.startsWith("attachable-volumes-");
}

export function resourceFromList(list: Record<string, unknown> | undefined): Resource {
  const r = emptyResource();
  addList(r, list);
  return r;
}

function maxInto(dst: Resource, src: Resource): void {
  dst.milliCPU = Math.max(dst.milliCPU, src.milliCPU);
  dst.memory = Math.max(dst.memory, src.memory);
  dst.ephemeralStorage = Math.max(dst.ephemeralStorage, src.ephemeralStorage);
  if (src.scalar) {
    if (!dst.scalar) dst.scalar = new Map();
    for (const [k, v] of src.scalar) dst.scalar.set(k, Math.max(dst.scalar.get(k) ?? 0, v));
  }
}

export function addInto(dst: Resource, src: Resource, sign = 1): void {
  dst.milliCPU += sign * src.milliCPU;
  dst.memory += sign * src.memory;
  dst.ephemeralStorage += sign * src.ephemeralStorage;
  if (src.scalar) {
    if (!dst.scalar) dst.scalar = new Map();
    for (const [k, v] of src.scalar) dst.scalar.set(k, (dst.scalar.get(k) ?? 0) + sign * v);
  }
}

function containerRequests(c: any, nonZero: boolean): Resource {
  const req = c?.resources?.requests as Record<string, unknown> | undefined;
  const r = resourceFromList(req);
  if (nonZero) {
    if (req?.cpu === undefined) r.milliCPU = DEFAULT_MILLI_CPU_REQUEST;
    if (req?.memory === undefined) r.memory = DEFAULT_MEMORY_REQUEST;
  }
  return r;
}

/**
 * Effective pod requests: the sum of app containers plus restartable (sidecar)
 * init containers, or the largest init container step if that is higher,
 * plus spec.overhead. With nonZero, containers without cpu/memory requests
 * count the scheduler's defaults (used by the scorers only).
 */
export function computePodRequests(pod: Pod, nonZero: boolean): Resource {
  const spec = pod.spec ?? {};
  const total = emptyResource();
  for (const c of spec.containers ?? []) addInto(total, containerRequests(c, nonZero));
  const sidecars = emptyResource();
  const initMax = emptyResource();
  for (const c of spec.initContainers ?? []) {
    const r = containerRequests(c, nonZero);
    if (c?.restartPolicy === "Always") {
      addInto(sidecars, r);
      // A sidecar runs alongside the remaining init steps and the app containers.
      const step = cloneResource(sidecars);
      maxInto(initMax, step);
    } else {
      const step = cloneResource(r);
      addInto(step, sidecars);
      maxInto(initMax, step);
    }
  }
  addInto(total, sidecars);
  maxInto(total, initMax);
  if (spec.overhead) addInto(total, resourceFromList(spec.overhead));
  return total;
}

export interface HostPort {
  ip: string;
  protocol: string;
  port: number;
}

export function podHostPorts(pod: Pod): HostPort[] {
  const out: HostPort[] = [];
  const spec = pod.spec ?? {};
  const add = (c: any) => {
    for (const p of c?.ports ?? []) {
      if (p?.hostPort > 0)
        out.push({ ip: p.hostIP || "0.0.0.0", protocol: p.protocol || "TCP", port: p.hostPort });
    }
  };
  for (const c of spec.containers ?? []) add(c);
  for (const c of spec.initContainers ?? []) if (c?.restartPolicy === "Always") add(c);
  return out;
}

export interface AffinityTerm {
  selector: Selector;
  namespaces: Set<string>;
  /** null: only the listed namespaces; otherwise namespaces whose labels match. */
  namespaceSelector: Selector | null;
  topologyKey: string;
  weight: number;
}

function compileAffinityTerm(pod: Pod, term: any, weight: number): AffinityTerm {
  const selector = compileLabelSelectorWithKeys(
    pod,
    term?.labelSelector,
    term?.matchLabelKeys,
    term?.mismatchLabelKeys,
  );
  const namespaces = new Set<string>(term?.namespaces ?? []);
  const nsSel = term?.namespaceSelector ? compileLabelSelector(term.namespaceSelector) : null;
  if (namespaces.size === 0 && !nsSel) namespaces.add(pod.metadata.namespace ?? "default");
  return { selector, namespaces, namespaceSelector: nsSel, topologyKey: term?.topologyKey ?? "", weight };
}

function compileLabelSelectorWithKeys(
  pod: Pod,
  sel: LabelSelectorSpec | undefined,
  matchKeys: string[] | undefined,
  mismatchKeys: string[] | undefined,
): Selector {
  const base = compileLabelSelector(sel);
  if (!sel || ((!matchKeys || matchKeys.length === 0) && (!mismatchKeys || mismatchKeys.length === 0)))
    return base;
  const labels = pod.metadata.labels ?? {};
  const exprs = [...(sel.matchExpressions ?? [])];
  for (const k of matchKeys ?? [])
    if (k in labels) exprs.push({ key: k, operator: "In", values: [labels[k]] });
  for (const k of mismatchKeys ?? [])
    if (k in labels) exprs.push({ key: k, operator: "NotIn", values: [labels[k]] });
  return compileLabelSelector({ matchLabels: sel.matchLabels, matchExpressions: exprs });
}

/** Whether `term` (declared by some pod) selects `pod`, given the namespace labels of `pod`. */
export function termMatchesPod(
  term: AffinityTerm,
  pod: PodInfo,
  nsLabels: Record<string, string> | undefined,
): boolean {
  const ns = pod.namespace;
  if (!term.namespaces.has(ns)) {
    if (!term.namespaceSelector || term.namespaceSelector.nothing) return false;
    if (term.namespaceSelector.reqs.length > 0 && !matchesLabelsOf(term.namespaceSelector, nsLabels))
      return false;
  }
  return matchesLabelsOf(term.selector, pod.labels);
}

function matchesLabelsOf(sel: Selector, labels: Record<string, string> | undefined): boolean {
  return selectorMatches(sel, labels);
}

export interface PodInfo {
  pod: Pod;
  key: string;
  uid: string;
  name: string;
  namespace: string;
  labels: Record<string, string>;
  priority: number;
  requests: Resource;
  nonZeroMilliCPU: number;
  nonZeroMemory: number;
  hostPorts: HostPort[];
  nodeSelector: Selector | null;
  requiredNodeAffinity: NodeSelector | null;
  preferredNodeAffinity: { weight: number; term: NodeSelectorTermSpec }[];
  requiredAffinityTerms: AffinityTerm[];
  requiredAntiAffinityTerms: AffinityTerm[];
  preferredAffinityTerms: AffinityTerm[];
  preferredAntiAffinityTerms: AffinityTerm[];
  hasAffinity: boolean;
  terminating: boolean;
}

export function podKey(pod: Pod): string {
  return pod.metadata.uid || `${pod.metadata.namespace ?? "default"}/${pod.metadata.name}`;
}

export function newPodInfo(pod: Pod): PodInfo {
  const spec = pod.spec ?? {};
  const requests = computePodRequests(pod, false);
  const nonZero = computePodRequests(pod, true);
  const aff = spec.affinity ?? {};
  const na = aff.nodeAffinity;
  const pa = aff.podAffinity;
  const paa = aff.podAntiAffinity;
  const req = (terms: any[] | undefined) => (terms ?? []).map((t) => compileAffinityTerm(pod, t, 1));
  const pref = (terms: any[] | undefined) =>
    (terms ?? []).map((t) => compileAffinityTerm(pod, t?.podAffinityTerm, t?.weight ?? 0));
  return {
    pod,
    key: podKey(pod),
    uid: pod.metadata.uid ?? "",
    name: pod.metadata.name ?? "",
    namespace: pod.metadata.namespace ?? "default",
    labels: pod.metadata.labels ?? {},
    priority: typeof spec.priority === "number" ? spec.priority : 0,
    requests,
    nonZeroMilliCPU: nonZero.milliCPU,
    nonZeroMemory: nonZero.memory,
    hostPorts: podHostPorts(pod),
    nodeSelector:
      spec.nodeSelector && Object.keys(spec.nodeSelector).length > 0
        ? compileMapSelector(spec.nodeSelector)
        : null,
    requiredNodeAffinity: na?.requiredDuringSchedulingIgnoredDuringExecution
      ? compileNodeSelector(na.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms)
      : null,
    preferredNodeAffinity: (na?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map((p: any) => ({
      weight: p?.weight ?? 0,
      term: p?.preference ?? {},
    })),
    requiredAffinityTerms: req(pa?.requiredDuringSchedulingIgnoredDuringExecution),
    requiredAntiAffinityTerms: req(paa?.requiredDuringSchedulingIgnoredDuringExecution),
    preferredAffinityTerms: pref(pa?.preferredDuringSchedulingIgnoredDuringExecution),
    preferredAntiAffinityTerms: pref(paa?.preferredDuringSchedulingIgnoredDuringExecution),
    hasAffinity: !!(pa || paa),
    terminating: !!pod.metadata.deletionTimestamp,
  };
}

/** True when the pod's nodeSelector and required node affinity both accept the node. */
export function podMatchesNodeSelectorAndAffinity(
  p: PodInfo,
  nodeLabels: Record<string, string> | undefined,
  nodeName: string,
): boolean {
  if (p.nodeSelector && !selectorMatches(p.nodeSelector, nodeLabels)) return false;
  if (p.requiredNodeAffinity && !nodeSelectorMatches(p.requiredNodeAffinity, nodeLabels, nodeName))
    return false;
  return true;
}
