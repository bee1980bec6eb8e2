// Writing the default RBAC policy at cluster start (create what is missing, leave what is
// there), and the clusterrole-aggregation reconcile: the stored rules of every ClusterRole
// with an aggregationRule are rewritten to the union its selectors pick.
import { StatusError } from "../../api/errors";
import {
  type ClusterRoleLike,
  effectiveClusterRoleRules,
  isAggregated,
  sameRules,
} from "../../api/rbac/aggregation";
import { bootstrapClusterRoleBindings, bootstrapClusterRoles, RBAC_GROUP } from "../../api/rbac/bootstrap";
import { lookupGVR } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import { invalidateRbacCache, markBootstrapPolicyEnsured } from "./rbac";

async function createMissing(env: Env, resource: string, objects: KubeObject[]): Promise<number> {
  const def = lookupGVR(RBAC_GROUP, "v1", resource);
  if (!def) return 0;
  const store = new Store(env, def);
  const list = JSON.parse(await store.listText({}));
  const have = new Set<string>(
    (Array.isArray(list.items) ? list.items : []).map((o: KubeObject) => o.metadata?.name),
  );
  let created = 0;
  await Promise.all(
    objects
      .filter((o) => !have.has(o.metadata.name!))
      .map(async (o) => {
        def.strategy.defaults?.(o);
        def.strategy.prepareForCreate?.(o);
        try {
          await store.create(o);
          created++;
        } catch (e) {
          if (!(e instanceof StatusError && e.reason === "AlreadyExists")) throw e;
        }
      }),
  );
  return created;
}

/**
 * Creates the bootstrap ClusterRoles and ClusterRoleBindings the store lacks (AlreadyExists
 * is fine: another isolate got there first), then aggregates. Returns how many it created.
 */
export async function ensureBootstrapPolicy(env: Env): Promise<number> {
  const roles = await createMissing(env, "clusterroles", bootstrapClusterRoles());
  const bindings = await createMissing(env, "clusterrolebindings", bootstrapClusterRoleBindings());
  await reconcileAggregatedClusterRoles(env);
  markBootstrapPolicyEnsured(env.EDGEPLANE_CLUSTER);
  return roles + bindings;
}

/**
 * Writes aggregated rules into every ClusterRole with an aggregationRule whose stored rules
 * differ (what upstream's clusterrole-aggregation controller does). The authorizer already
 * computes aggregation itself, so this only makes `kubectl get clusterrole admin -o yaml`
 * show the rules; the controller manager may call it on every ClusterRole change.
 * Returns the names it updated.
 */
export async function reconcileAggregatedClusterRoles(env: Env): Promise<string[]> {
  const def = lookupGVR(RBAC_GROUP, "v1", "clusterroles");
  if (!def) return [];
  const store = new Store(env, def);
  const list = JSON.parse(await store.listText({}));
  const roles: KubeObject[] = Array.isArray(list.items) ? list.items : [];
  const effective = effectiveClusterRoleRules(roles as ClusterRoleLike[]);
  const updated: string[] = [];
  for (const role of roles) {
    if (!isAggregated(role as ClusterRoleLike)) continue;
    const want = effective.get(role.metadata.name!) ?? [];
    if (sameRules(Array.isArray(role.rules) ? role.rules : [], want)) continue;
    const next = { ...role, rules: want };
    try {
      await store.update(next, { expectRV: role.metadata.resourceVersion });
      updated.push(role.metadata.name!);
    } catch (e) {
      if (!(e instanceof StatusError && (e.reason === "Conflict" || e.reason === "NotFound"))) throw e;
    }
  }
  if (updated.length) invalidateRbacCache();
  return updated;
}
