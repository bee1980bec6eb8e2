import type { KubeObject } from "../../../api/types";

let uid = 0;

export interface NodeOpts {
  cpu?: string;
  memory?: string;
  pods?: string;
  labels?: Record<string, string>;
  taints?: { key: string; value?: string; effect: string }[];
  unschedulable?: boolean;
  images?: { names: string[]; sizeBytes: number }[];
  extra?: Record<string, string>;
}

export function makeNode(name: string, o: NodeOpts = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, uid: `node-${name}`, labels: { "kubernetes.io/hostname": name, ...(o.labels ?? {}) } },
    spec: { taints: o.taints, unschedulable: o.unschedulable },
    status: {
      allocatable: {
        cpu: o.cpu ?? "4",
        memory: o.memory ?? "8Gi",
        pods: o.pods ?? "110",
        ...(o.extra ?? {}),
      },
      images: o.images ?? [],
    },
  };
}

export interface PodOpts {
  ns?: string;
  cpu?: string;
  memory?: string;
  labels?: Record<string, string>;
  nodeName?: string;
  priority?: number;
  spec?: Record<string, unknown>;
  containers?: Record<string, unknown>[];
  image?: string;
  created?: string;
}

export function makePod(name: string, o: PodOpts = {}): KubeObject {
  const requests: Record<string, string> = {};
  if (o.cpu) requests.cpu = o.cpu;
  if (o.memory) requests.memory = o.memory;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: o.ns ?? "default",
      uid: `uid-${name}-${++uid}`,
      labels: o.labels ?? {},
      creationTimestamp: o.created ?? "2026-01-01T00:00:00Z",
    },
    spec: {
      containers: o.containers ?? [{ name: "c", image: o.image ?? "busybox", resources: { requests } }],
      nodeName: o.nodeName,
      priority: o.priority ?? 0,
      ...(o.spec ?? {}),
    },
    status: { phase: "Pending" },
  };
}

/** Deterministic PRNG for tie-breaks. */
export function seeded(seed = 42): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

import { Snapshot } from "../../../durable-objects/scheduler/cache";
import { CycleState, Framework, type Status } from "../../../durable-objects/scheduler/framework";
import { defaultRegistry } from "../../../durable-objects/scheduler/plugins/index";
import { newPodInfo } from "../../../durable-objects/scheduler/podinfo";

export function frameworkOf(...names: string[]): Framework {
  return new Framework(
    { schedulerName: "test", plugins: names.map((name) => ({ name, weight: 1 })) },
    defaultRegistry(),
  );
}

/** Runs PreFilter then Filter of one plugin over every node: node name -> status (undefined = fits). */
export function filterWith(plugin: string, pod: KubeObject, nodes: KubeObject[], bound: KubeObject[] = []) {
  const fwk = frameworkOf(plugin);
  const snap = Snapshot.from(nodes, bound);
  const state = new CycleState(snap, fwk);
  const info = newPodInfo(pod);
  const pre = fwk.runPreFilter(state, info);
  const out: Record<string, Status | undefined> = {};
  for (const n of snap.nodeInfoList) out[n.name] = pre.status ?? fwk.runFilter(state, info, n);
  return out;
}

/** Runs PreScore, Score and NormalizeScore of one plugin: node name -> score (null when skipped). */
export function scoreWith(plugin: string, pod: KubeObject, nodes: KubeObject[], bound: KubeObject[] = []) {
  const fwk = frameworkOf(plugin);
  const snap = Snapshot.from(nodes, bound);
  const state = new CycleState(snap, fwk);
  const info = newPodInfo(pod);
  fwk.runPreFilter(state, info);
  const p = fwk.plugins[0];
  const pre = p.preScore?.(state, info, snap.nodeInfoList);
  if (pre?.code === "Skip") return null;
  const scores = snap.nodeInfoList.map((n) => ({ name: n.name, score: p.score!(state, info, n) }));
  p.normalizeScore?.(state, info, scores);
  return Object.fromEntries(scores.map((s) => [s.name, s.score]));
}
