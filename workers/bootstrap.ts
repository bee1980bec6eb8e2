// What every cluster has from its first request: the system namespaces. Done once per
// isolate; creating what already exists is harmless (AlreadyExists is ignored).
import { StatusError } from "../api/errors";
import { lookupGVR } from "../api/registry";
import type { KubeObject } from "../api/types";
import { ensureBootstrapPolicy } from "./authz/index";
import type { Env } from "./env";
import { Store } from "./store-client";

const SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

const ready = new Set<string>();

async function createNamespaces(env: Env): Promise<void> {
  const def = lookupGVR("", "v1", "namespaces")!;
  const store = new Store(env, def);
  for (const name of SYSTEM_NAMESPACES) {
    if (await store.find("", name)) continue;
    const ns: KubeObject = { apiVersion: "v1", kind: "Namespace", metadata: { name } };
    def.strategy.defaults?.(ns);
    def.strategy.prepareForCreate?.(ns);
    try {
      await store.create(ns);
    } catch (e) {
      if (!(e instanceof StatusError && e.reason === "AlreadyExists")) throw e;
    }
  }
}

/** Wakes the controller manager and the scheduler (they re-list and resync). */
export async function wakeControlLoops(env: Env): Promise<void> {
  const id = env.EDGEPLANE_CLUSTER;
  await Promise.all([
    env.CONTROLLERS.get(env.CONTROLLERS.idFromName(id)).resync(),
    env.SCHEDULER.get(env.SCHEDULER.idFromName(id)).resync(),
  ]);
}

/**
 * Runs the cluster bootstrap once per isolate. Requests that arrive while it is under way
 * run it themselves (it is idempotent) instead of awaiting another request's pending I/O,
 * which workerd cancels as hung when that other request goes away.
 */
export async function bootstrap(env: Env, waitUntil?: (p: Promise<unknown>) => void): Promise<void> {
  const key = env.EDGEPLANE_CLUSTER;
  if (ready.has(key)) return;
  await createNamespaces(env);
  await ensureBootstrapPolicy(env);
  if (ready.has(key)) return;
  ready.add(key);
  const woken = wakeControlLoops(env).catch((e) => console.error("waking control loops failed", e));
  waitUntil?.(woken);
}
