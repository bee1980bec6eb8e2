// The RBAC authorizer: allows what some Role or ClusterRole bound to the user allows, and
// has no opinion otherwise (as upstream: RBAC never denies). Roles and bindings come from
// the store shards, cached per isolate and cluster, reloaded when older than a second or
// after invalidateRbacCache() (called after RBAC writes in the same isolate).

import { bootstrapClusterRoleBindings, bootstrapClusterRoles, RBAC_GROUP } from "../../api/rbac/bootstrap";
import { ruleAllows } from "../../api/rbac/rules";
import { lookupGVR } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import type { Env } from "../../durable-objects/env";
import { onStoreWrite, Store } from "../../durable-objects/store/client";
import { type RbacObjects, RbacSnapshot } from "./rbac-snapshot";
import type { Attributes, AuthorizerResult, RulesResult } from "./types";

export const RBAC_CACHE_TTL_MS = 1000;

let epoch = 0;
/** Forget every cached snapshot (all clusters): the next decision reloads. */
export function invalidateRbacCache(): void {
  epoch++;
}

const ensured = new Set<string>();
/**
 * Records that the bootstrap policy is in the store for this cluster. Until then the
 * authorizer supplies the bootstrap ClusterRoles and bindings the store does not hold yet,
 * so the very first requests (readyz, discovery, the admin) are judged as upstream would.
 */
export function markBootstrapPolicyEnsured(cluster: string): void {
  ensured.add(cluster);
  invalidateRbacCache();
}

export type RbacSource = (env: Env) => Promise<RbacObjects>;
/** A cheap stamp that changes whenever any RBAC object does (compared before a full reload). */
export type RbacVersion = (env: Env) => Promise<string>;

const KINDS = ["roles", "clusterroles", "rolebindings", "clusterrolebindings"] as const;

async function listAll(env: Env, resource: string): Promise<KubeObject[]> {
  const def = lookupGVR(RBAC_GROUP, "v1", resource);
  if (!def) return [];
  const list = JSON.parse(await new Store(env, def).listText({}));
  return Array.isArray(list.items) ? list.items : [];
}

function withDefaults(stored: KubeObject[], defaults: KubeObject[]): KubeObject[] {
  const have = new Set(stored.map((o) => o.metadata?.name));
  return [...stored, ...defaults.filter((d) => !have.has(d.metadata.name))];
}

/** Reads the four RBAC kinds from their store shards. */
export const storeSource: RbacSource = async (env) => {
  const [roles, clusterRoles, roleBindings, clusterRoleBindings] = await Promise.all(
    KINDS.map((k) => listAll(env, k)),
  );
  if (ensured.has(env.EDGEPLANE_CLUSTER)) return { roles, clusterRoles, roleBindings, clusterRoleBindings };
  return {
    roles,
    roleBindings,
    clusterRoles: withDefaults(clusterRoles, bootstrapClusterRoles()),
    clusterRoleBindings: withDefaults(clusterRoleBindings, bootstrapClusterRoleBindings()),
  };
};

/** The four shards' head revisions (a one-item list each). */
export const storeVersion: RbacVersion = async (env) => {
  const rvs = await Promise.all(
    KINDS.map(async (k) => {
      const def = lookupGVR(RBAC_GROUP, "v1", k);
      if (!def) return "";
      return String(
        JSON.parse(await new Store(env, def).listText({ limit: 1 })).metadata?.resourceVersion ?? "",
      );
    }),
  );
  return `${ensured.has(env.EDGEPLANE_CLUSTER)}/${rvs.join("/")}`;
};

interface Cached {
  snapshot: RbacSnapshot;
  at: number;
  epoch: number;
  version?: string;
}

export class RBACAuthorizer {
  private readonly cache = new Map<string, Cached>();
  /** when a refresh started, per cluster (promises are not shared across requests) */
  private readonly refreshingSince = new Map<string, number>();

  constructor(
    private readonly source: RbacSource = storeSource,
    private readonly ttlMs = RBAC_CACHE_TTL_MS,
    private readonly version: RbacVersion | undefined = source === storeSource ? storeVersion : undefined,
  ) {}

  /**
   * A current snapshot. After an invalidation (or with none cached) the caller loads one.
   * When the cached one merely aged past the TTL it is used while one caller refreshes it in
   * the background (comparing the shards' revisions first, reloading only on change); past
   * 5 TTLs without a successful refresh the caller waits for a reload.
   */
  async snapshot(env: Env): Promise<RbacSnapshot> {
    const key = env.EDGEPLANE_CLUSTER ?? "";
    const now = Date.now();
    const c = this.cache.get(key);
    if (c && c.epoch === epoch) {
      const age = now - c.at;
      if (age < this.ttlMs) return c.snapshot;
      if (age < 5 * this.ttlMs) {
        const since = this.refreshingSince.get(key);
        if (since === undefined || now - since > 2 * this.ttlMs) {
          this.refreshingSince.set(key, now);
          this.refresh(env, key, c, now).catch((e) => console.error("RBAC cache refresh failed", e));
        }
        return c.snapshot;
      }
    }
    return (await this.load(env, key, now)).snapshot;
  }

  private async load(env: Env, key: string, now: number): Promise<Cached> {
    const startEpoch = epoch;
    // the stamp is read first: a write that lands during the lists shows as a changed stamp later
    const version = this.version ? await this.version(env) : undefined;
    const objs = await this.source(env);
    const fresh: Cached = { snapshot: new RbacSnapshot(objs), at: now, epoch: startEpoch, version };
    const cur = this.cache.get(key);
    if (!cur || cur.epoch < startEpoch || (cur.epoch === startEpoch && cur.at <= now))
      this.cache.set(key, fresh);
    return fresh;
  }

  private async refresh(env: Env, key: string, c: Cached, now: number): Promise<void> {
    try {
      if (this.version && c.version !== undefined) {
        const v = await this.version(env);
        if (v === c.version) {
          if (this.cache.get(key) === c && c.epoch === epoch) c.at = now;
          return;
        }
      }
      await this.load(env, key, now);
    } finally {
      this.refreshingSince.delete(key);
    }
  }

  async authorize(attrs: Attributes, env: Env): Promise<AuthorizerResult> {
    const snap = await this.snapshot(env);
    const { rules, errors } = snap.rulesFor(attrs.user, attrs.namespace);
    for (const r of rules)
      if (ruleAllows(attrs, r.rule)) return { decision: "allow", reason: `RBAC: allowed by ${r.source()}` };
    return { decision: "noOpinion", reason: errors.length ? `RBAC: ${aggregate(errors)}` : "" };
  }

  /** The rules the user holds in the namespace, for SelfSubjectRulesReview. */
  async rulesFor(user: Attributes["user"], namespace: string, env: Env): Promise<RulesResult> {
    const snap = await this.snapshot(env);
    const { rules, errors } = snap.rulesFor(user, namespace);
    const out: RulesResult = { resourceRules: [], nonResourceRules: [], incomplete: false, errors: [] };
    for (const { rule } of rules) {
      if (rule.resources?.length) {
        const rr: RulesResult["resourceRules"][number] = { verbs: rule.verbs ?? [] };
        if (rule.apiGroups?.length) rr.apiGroups = rule.apiGroups;
        rr.resources = rule.resources;
        if (rule.resourceNames?.length) rr.resourceNames = rule.resourceNames;
        out.resourceRules.push(rr);
      }
      if (rule.nonResourceURLs?.length)
        out.nonResourceRules.push({ verbs: rule.verbs ?? [], nonResourceURLs: rule.nonResourceURLs });
    }
    if (errors.length) out.errors.push(aggregate(errors));
    return out;
  }
}

/** utilerrors.NewAggregate(...).Error(): one message as is, several as [a, b] (duplicates dropped). */
export function aggregate(messages: string[]): string {
  const uniq = [...new Set(messages)];
  return uniq.length === 1 ? uniq[0] : `[${uniq.join(", ")}]`;
}

/** The authorizer the chain and the escalation checks use. */
export const rbacAuthorizer = new RBACAuthorizer();

// a write of an RBAC object in this isolate is seen by the next decision at once
onStoreWrite((def) => {
  if (def.group === "rbac.authorization.k8s.io") invalidateRbacCache();
});
