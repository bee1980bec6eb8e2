// Deleting a cluster (docs/clusters.md): every Durable Object it used is emptied and reset,
// its alarms cancelled: the controller manager and scheduler first (nothing of it writes any
// more; its usage reports are forgotten too), then each node's tunnel (which tells the node's
// agent to leave: it exits), then every resource's store shard, built-in and custom.
import { type Crd, customDefsOf } from "../../api/custom/definition";
import { shardName } from "../../api/custom/key";
import { lookupGVR } from "../../api/registry";
import type { ResourceDef } from "../../api/resource";
import { RESOURCES } from "../../api/strategies/index";
import { childEnv, forgetChildEnv, forgetClusterUsage } from "../../durable-objects/clusters";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import { forgetClusterCA } from "./client-certs";
import type { ClusterRef } from "./lookup";

/** destroy() resets the object it empties: the call then fails, as planned */
const reset = () => {};

async function names(env: Env, group: string, version: string, resource: string): Promise<unknown[]> {
  const def = lookupGVR(group, version, resource)!;
  const list = JSON.parse(await new Store(env, def).listText({}));
  return Array.isArray(list.items) ? list.items : [];
}

export async function teardown(root: Env, ref: ClusterRef): Promise<void> {
  const env = childEnv(root, ref.key);
  await Promise.all([
    env.CONTROLLERS.get(env.CONTROLLERS.idFromName(ref.key)).destroy().catch(reset),
    env.SCHEDULER.get(env.SCHEDULER.idFromName(ref.key)).destroy().catch(reset),
    env.METRICS.get(env.METRICS.idFromName(ref.key)).destroy().catch(reset),
  ]);
  const [nodes, crds] = await Promise.all([
    names(env, "", "v1", "nodes"),
    names(env, "apiextensions.k8s.io", "v1", "customresourcedefinitions"),
  ]);
  await Promise.all(
    nodes.map((n) => {
      const node = String((n as { metadata?: { name?: string } }).metadata?.name ?? "");
      return env.NODE_TUNNEL.get(env.NODE_TUNNEL.idFromName(`${ref.key}/${node}`))
        .destroy()
        .catch(reset);
    }),
  );
  const defs: ResourceDef[] = [...RESOURCES, ...(crds as Crd[]).flatMap((c) => customDefsOf(c))];
  const shards = new Map<string, Store>();
  for (const def of defs) {
    const store = new Store(env, def);
    shards.set(shardName(store.key), store);
  }
  await Promise.all([...shards.values()].map((s) => s.destroyShard().catch(reset)));
  forgetChildEnv(root, ref.key);
  forgetClusterUsage(ref.key);
  forgetClusterCA(ref.key);
}
