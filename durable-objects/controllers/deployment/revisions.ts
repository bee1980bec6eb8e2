// A Deployment's ReplicaSets as revisions (upstream pkg/controller/deployment/util): the
// pod-template-hash, template equality, and revision numbers and order.
import { dropZeroTimestamp } from "../../../api/strategies/common";
import { timeOf } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import { jsonEqual, stableStringify } from "../lib/json-equal";

export const REVISION = "deployment.kubernetes.io/revision";
export const REVISION_HISTORY = "deployment.kubernetes.io/revision-history";
export const DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas";
export const MAX_REPLICAS = "deployment.kubernetes.io/max-replicas";
export const HASH_LABEL = "pod-template-hash";
export const NOT_COPIED = new Set([
  "kubectl.kubernetes.io/last-applied-configuration",
  REVISION,
  REVISION_HISTORY,
  DESIRED_REPLICAS,
  MAX_REPLICAS,
  "deprecated.deployment.rollback.to",
]);

// ---- hash ----

function fnv32a(s: string): number {
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(s)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

const SAFE = "bcdfghjklmnpqrstvwxz2456789";

/** Upstream's rand.SafeEncodeString: every character mapped into an alphabet without vowels. */
export function safeEncode(s: string): string {
  let out = "";
  for (let i = 0; i < s.length; i++) out += SAFE[s.charCodeAt(i) % SAFE.length];
  return out;
}

/** The pod-template-hash of a template (FNV-32a over its canonical JSON, plus the collision count). */
export function computeHash(template: unknown, collisionCount?: number): string {
  let s = stableStringify(withoutZeroTimestamp(template ?? {}));
  if (collisionCount) s += `#${collisionCount}`;
  return safeEncode(String(fnv32a(s)));
}

/**
 * A template as upstream's Go struct holds it: `creationTimestamp: null` is the zero time,
 * the same as none (ReplicaSets stored before the API dropped it carry it). A copy, unlike
 * the strategies' dropZeroTimestamp, for the hash of a template the caller still holds.
 */
function withoutZeroTimestamp(template: any): any {
  if (template?.metadata?.creationTimestamp !== null) return template;
  const { creationTimestamp: _zero, ...metadata } = template.metadata;
  return { ...template, metadata };
}

/** Template equality ignoring the pod-template-hash label and a zero creationTimestamp (upstream EqualIgnoreHash). */
export function equalIgnoreHash(a: any, b: any): boolean {
  const strip = (t: any) => {
    const c = structuredClone(t ?? {});
    dropZeroTimestamp(c);
    if (c.metadata?.labels) {
      delete c.metadata.labels[HASH_LABEL];
      if (Object.keys(c.metadata.labels).length === 0) delete c.metadata.labels;
    }
    if (c.metadata && Object.keys(c.metadata).length === 0) delete c.metadata;
    return c;
  };
  return jsonEqual(strip(a), strip(b));
}

function created(o: KubeObject): number {
  return timeOf(o.metadata.creationTimestamp) ?? 0;
}

/** Oldest first, ties by name (upstream ReplicaSetsByCreationTimestamp). */
export function byCreation(a: KubeObject, b: KubeObject): number {
  return (
    created(a) - created(b) ||
    (a.metadata.name! < b.metadata.name! ? -1 : a.metadata.name! > b.metadata.name! ? 1 : 0)
  );
}

export function revisionOf(o: KubeObject): number {
  const n = Number(o.metadata.annotations?.[REVISION] ?? 0);
  return Number.isFinite(n) ? n : 0;
}

export function maxRevision(rss: KubeObject[]): number {
  return rss.reduce((m, rs) => Math.max(m, revisionOf(rs)), 0);
}
