// What the Node authorizer's graph knows: which objects the pods bound to a node reference
// (secrets, configmaps, the service account, persistent volume claims). Upstream keeps a
// graph fed by informers; here the node's pods are read from the pods shard (field selector
// spec.nodeName) and their references kept for a moment per (cluster, node, namespace).
import { lookupGVR } from "../../api/registry";
import { podClaimNames } from "../../api/strategies/persistentvolumes";
import type { KubeObject } from "../../api/types";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";

export interface PodRefs {
  secrets: Set<string>;
  configmaps: Set<string>;
  serviceaccounts: Set<string>;
  persistentvolumeclaims: Set<string>;
  pods: Set<string>;
}

export type RefKind = keyof PodRefs;

const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);

function containers(pod: KubeObject): any[] {
  const s = pod.spec ?? {};
  return [...arr(s.initContainers), ...arr(s.containers), ...arr(s.ephemeralContainers)];
}

/** Secret names a pod references (upstream's VisitPodSecretNames, all containers). */
export function podSecretNames(pod: KubeObject): string[] {
  const out: string[] = [];
  const add = (n: unknown) => typeof n === "string" && n && out.push(n);
  for (const p of arr(pod.spec?.imagePullSecrets)) add(p?.name);
  for (const c of containers(pod)) {
    for (const e of arr(c?.envFrom)) add(e?.secretRef?.name);
    for (const e of arr(c?.env)) add(e?.valueFrom?.secretKeyRef?.name);
  }
  for (const v of arr(pod.spec?.volumes)) {
    add(v?.secret?.secretName);
    add(v?.azureFile?.secretName);
    for (const k of ["cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"])
      add(v?.[k]?.secretRef?.name);
    add(v?.csi?.nodePublishSecretRef?.name);
    for (const s of arr(v?.projected?.sources)) add(s?.secret?.name);
  }
  return out;
}

/** ConfigMap names a pod references (upstream's VisitPodConfigmapNames, all containers). */
export function podConfigMapNames(pod: KubeObject): string[] {
  const out: string[] = [];
  const add = (n: unknown) => typeof n === "string" && n && out.push(n);
  for (const c of containers(pod)) {
    for (const e of arr(c?.envFrom)) add(e?.configMapRef?.name);
    for (const e of arr(c?.env)) add(e?.valueFrom?.configMapKeyRef?.name);
  }
  for (const v of arr(pod.spec?.volumes)) {
    add(v?.configMap?.name);
    for (const s of arr(v?.projected?.sources)) add(s?.configMap?.name);
  }
  return out;
}

/** The references of pods bound to `nodeName` (pods bound elsewhere are skipped). */
export function refsOf(pods: readonly KubeObject[], nodeName: string): PodRefs {
  const refs: PodRefs = {
    secrets: new Set(),
    configmaps: new Set(),
    serviceaccounts: new Set(),
    persistentvolumeclaims: new Set(),
    pods: new Set(),
  };
  for (const pod of pods) {
    if (!nodeName || pod.spec?.nodeName !== nodeName) continue;
    refs.pods.add(pod.metadata.name ?? "");
    for (const n of podSecretNames(pod)) refs.secrets.add(n);
    for (const n of podConfigMapNames(pod)) refs.configmaps.add(n);
    for (const n of podClaimNames(pod)) refs.persistentvolumeclaims.add(n);
    const sa = pod.spec?.serviceAccountName || pod.spec?.serviceAccount;
    if (sa) refs.serviceaccounts.add(sa);
  }
  return refs;
}

/** Where the pods of a node in a namespace come from; replaceable in tests. */
export type PodSource = (env: Env, namespace: string, nodeName: string) => Promise<KubeObject[]>;

export const storePodSource: PodSource = async (env, namespace, nodeName) => {
  const def = lookupGVR("", "v1", "pods");
  if (!def) return [];
  const text = await new Store(env, def).listText({ namespace, fieldSelector: `spec.nodeName=${nodeName}` });
  const list = JSON.parse(text);
  return Array.isArray(list.items) ? list.items : [];
};

interface Entry {
  refs: PodRefs;
  at: number;
}

/** Positive answers are reused for `ttlMs`; a miss re-reads when the entry is older than `recheckMs`. */
export class NodeGraph {
  private readonly cache = new Map<string, Entry>();

  constructor(
    private readonly source: PodSource = storePodSource,
    private readonly ttlMs = 2000,
    private readonly recheckMs = 200,
  ) {}

  private async load(env: Env, namespace: string, nodeName: string, key: string): Promise<Entry> {
    const at = Date.now();
    const entry = { refs: refsOf(await this.source(env, namespace, nodeName), nodeName), at };
    this.cache.set(key, entry);
    if (this.cache.size > 2048) this.cache.delete(this.cache.keys().next().value!);
    return entry;
  }

  /** Whether a pod bound to the node (in that namespace) references kind/name. */
  async related(
    env: Env,
    nodeName: string,
    kind: RefKind,
    namespace: string,
    name: string,
  ): Promise<boolean> {
    const key = `${env.EDGEPLANE_CLUSTER ?? ""}\u0000${nodeName}\u0000${namespace}`;
    let e = this.cache.get(key);
    const now = Date.now();
    if (!e || now - e.at >= this.ttlMs) e = await this.load(env, namespace, nodeName, key);
    if (e.refs[kind].has(name)) return true;
    if (now - e.at >= this.recheckMs) {
      e = await this.load(env, namespace, nodeName, key);
      return e.refs[kind].has(name);
    }
    return false;
  }

  /** Drops what is known about a namespace (e.g. after a pod write in this isolate). */
  invalidate(): void {
    this.cache.clear();
  }
}
