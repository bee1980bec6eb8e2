// What ties a node credential to the agent that holds it: one record per node name, a Secret
// in kube-system (type edgeplane.io/node-credential) naming the agent instance the last
// exchange admitted and, once the node registered, its Node's uid. A credential whose agent
// is not the recorded one (another agent joined as the node since), or whose Node is gone or
// was replaced (a new uid), no longer authenticates. Deleting the record revokes the node's
// credentials as well. (No ownerReference to the Node: the garbage collector does not cache
// Secrets; a record outlives its Node, one small object per node name, replaced on the next join.)
import { StatusError } from "../../api/errors";
import {
  AGENT_ANNOTATION as AGENT,
  NODE_ANNOTATION as NODE,
  NODE_UID_ANNOTATION as NODE_UID,
  newRecord,
  RECORD_NAMESPACE,
  RECORD_TYPE,
  recordAnnotations,
  recordName,
} from "../../api/node-binding";
import { lookupGVR } from "../../api/registry";
import type { KubeObject } from "../../api/types";
import type { Env } from "../../durable-objects/env";
import { Store } from "../../durable-objects/store/client";
import type { ObjectSource } from "./types";

const LEASE_NAMESPACE = "kube-node-lease";

export interface NodeBinding {
  node: string;
  agent: string;
  /** the registered Node's uid; empty until the node has registered */
  nodeUID: string;
  record: KubeObject;
}

function store(env: Env, group: string, version: string, resource: string): Store {
  const def = lookupGVR(group, version, resource);
  if (!def) throw new Error(`no resource ${group}/${version}/${resource}`);
  return new Store(env, def);
}

const secrets = (env: Env) => store(env, "", "v1", "secrets");
const leases = (env: Env) => store(env, "coordination.k8s.io", "v1", "leases");

export async function readBinding(objects: ObjectSource, node: string): Promise<NodeBinding | undefined> {
  const record = await objects.get("secrets", RECORD_NAMESPACE, await recordName(node));
  const a = record?.metadata?.annotations ?? {};
  if (!record || record.type !== RECORD_TYPE || a[NODE] !== node || !a[AGENT]) return undefined;
  return { node, agent: a[AGENT], nodeUID: a[NODE_UID] ?? "", record };
}

/** The node's record and its registered Node, read together (either may be missing). */
export async function bindingAndNode(
  objects: ObjectSource,
  node: string,
): Promise<{ binding: NodeBinding | undefined; registered: KubeObject | undefined }> {
  const [binding, registered] = await Promise.all([
    readBinding(objects, node),
    objects.get("nodes", "", node),
  ]);
  return { binding, registered };
}

/**
 * Whether an agent holds the node now: its Node exists (not being deleted) and its Lease was
 * renewed within leaseDurationSeconds. Undefined when not; otherwise why, for the refusal.
 */
export async function liveAgent(
  env: Env,
  node: string,
  registered: KubeObject | undefined,
  now = Date.now(),
): Promise<string | undefined> {
  if (!registered || registered.metadata?.deletionTimestamp) return undefined;
  const lease = await leases(env).find(LEASE_NAMESPACE, node);
  if (!lease) return undefined;
  const renewed = Date.parse(lease.spec?.renewTime ?? lease.spec?.acquireTime ?? "");
  const duration = Number(lease.spec?.leaseDurationSeconds ?? 40);
  if (!Number.isFinite(renewed) || renewed + duration * 1000 <= now) return undefined;
  return `its Lease was renewed ${Math.max(0, Math.round((now - renewed) / 1000))}s ago (leaseDurationSeconds ${duration})`;
}

/**
 * Records `agent` as the one agent of `node` (bound to the Node's uid when it exists), replacing
 * the previous record: `prior` is the record read before deciding, so that of two exchanges
 * racing one wins and the other gets the store's 409.
 */
export async function recordAgent(
  env: Env,
  node: string,
  agent: string,
  nodeUID: string,
  prior: NodeBinding | undefined,
): Promise<void> {
  const name = await recordName(node);
  const annotations = recordAnnotations(node, agent, nodeUID);
  const s = secrets(env);
  if (!prior) {
    const existing = await s.find(RECORD_NAMESPACE, name);
    if (!existing) {
      await s.create(newRecord(name, node, agent, nodeUID));
      return;
    }
    // a record that is not a binding (another kind of Secret of that name): replaced as well
    prior = { node, agent: "", nodeUID: "", record: existing };
  }
  const old = prior.record;
  const metadata = { ...old.metadata, annotations };
  await s.update({ ...old, type: RECORD_TYPE, metadata }, { expectRV: old.metadata.resourceVersion });
}

/** Binds the record to the Node's uid once the node registered (best effort: a racing write wins). */
export async function bindNodeUID(env: Env, b: NodeBinding, nodeUID: string): Promise<void> {
  try {
    await recordAgent(env, b.node, b.agent, nodeUID, b);
  } catch (e) {
    if (!(e instanceof StatusError && (e.code === 409 || e.code === 404))) throw e;
  }
}
