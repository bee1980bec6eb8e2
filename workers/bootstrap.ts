// What every cluster has from its first request: the system namespaces. Done once per
// isolate; creating what already exists is harmless (AlreadyExists is ignored).
import { StatusError } from "../api/errors";
import { lookupGVR } from "../api/registry";
import type { ResourceDef } from "../api/resource";
import { SYSTEM_PRIORITY_CLASSES } from "../api/strategies/priorityclasses";
import { apiserverServiceIP } from "../api/strategies/service-allocator";
import { LOCAL_PATH_CLASS, LOCAL_PATH_PROVISIONER } from "../api/strategies/storageclasses";
import type { KubeObject } from "../api/types";
import type { Env } from "../durable-objects/env";
import { Store } from "../durable-objects/store/client";
import { ensureBootstrapPolicy } from "./authz/index";
import { reconcileClusterNetwork } from "./cluster-network";

const SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];

const ready = new Set<string>();

/** Makes a cluster-scoped object of `def` unless one of that name exists (another isolate may race: fine). */
async function ensure(env: Env, def: ResourceDef, obj: KubeObject): Promise<void> {
  const store = new Store(env, def);
  if (await store.find("", obj.metadata.name!)) return;
  def.strategy.defaults?.(obj);
  def.strategy.prepareForCreate?.(obj);
  try {
    await store.create(obj);
  } catch (e) {
    if (!(e instanceof StatusError && e.reason === "AlreadyExists")) throw e;
  }
}

async function createNamespaces(env: Env): Promise<void> {
  const def = lookupGVR("", "v1", "namespaces")!;
  // at once: a new cluster's first request waits for them (docs/clusters.md)
  await Promise.all(
    SYSTEM_NAMESPACES.map((name) =>
      ensure(env, def, { apiVersion: "v1", kind: "Namespace", metadata: { name } }),
    ),
  );
}

/**
 * The "kubernetes" Service of the default namespace, on the first address of the service
 * range, as every cluster has it (in-cluster clients find the apiserver by it).
 */
async function createApiserverService(env: Env): Promise<void> {
  const def = lookupGVR("", "v1", "services")!;
  const store = new Store(env, def);
  if (await store.find("default", "kubernetes")) return;
  const svc: KubeObject = {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: "kubernetes",
      namespace: "default",
      labels: { component: "apiserver", provider: "kubernetes" },
    },
    spec: {
      type: "ClusterIP",
      clusterIP: apiserverServiceIP(env),
      ports: [{ name: "https", port: 443, protocol: "TCP", targetPort: 6443 }],
      sessionAffinity: "None",
    },
  };
  def.strategy.defaults?.(svc);
  def.strategy.prepareForCreate?.(svc);
  try {
    await store.create(svc);
  } catch (e) {
    if (!(e instanceof StatusError && (e.reason === "AlreadyExists" || e.code === 422))) throw e;
    if (e.code === 422) console.error("the kubernetes Service could not be created:", e.message);
  }
}

/**
 * The "local-path" StorageClass, the default one, provisioned by the controller manager's
 * local-path provisioner (as k3s installs Rancher's): made once, when absent at bootstrap;
 * EDGEPLANE_LOCAL_STORAGE=off leaves it out.
 */
async function createLocalStorageClass(env: Env): Promise<void> {
  if (env.EDGEPLANE_LOCAL_STORAGE === "off") return;
  await ensure(env, lookupGVR("storage.k8s.io", "v1", "storageclasses")!, {
    apiVersion: "storage.k8s.io/v1",
    kind: "StorageClass",
    metadata: {
      name: LOCAL_PATH_CLASS,
      annotations: { "storageclass.kubernetes.io/is-default-class": "true" },
    },
    provisioner: LOCAL_PATH_PROVISIONER,
    volumeBindingMode: "WaitForFirstConsumer",
    reclaimPolicy: "Delete",
  } as KubeObject);
}

/** The system PriorityClasses, made when absent (upstream's bootstrap-system-priority-classes). */
async function createSystemPriorityClasses(env: Env): Promise<void> {
  const def = lookupGVR("scheduling.k8s.io", "v1", "priorityclasses")!;
  for (const { name, value, description } of SYSTEM_PRIORITY_CLASSES)
    await ensure(env, def, {
      apiVersion: "scheduling.k8s.io/v1",
      kind: "PriorityClass",
      metadata: { name },
      value,
      description,
    } as KubeObject);
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
 * What the apiserver keeps in place (upstream's system-namespaces and kubernetes-service
 * reconcilers): the system namespaces and the "kubernetes" Service, recreated when deleted.
 * The cron trigger runs it every minute.
 */
export async function reconcileDefaults(env: Env): Promise<void> {
  await createNamespaces(env);
  await createApiserverService(env);
  await reconcileClusterNetwork(env);
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
  await Promise.all([
    ensureBootstrapPolicy(env),
    createApiserverService(env).then(() => reconcileClusterNetwork(env)),
    createLocalStorageClass(env),
    createSystemPriorityClasses(env),
  ]);
  if (ready.has(key)) return;
  ready.add(key);
  const woken = wakeControlLoops(env).catch((e) => console.error("waking control loops failed", e));
  waitUntil?.(woken);
}
