// A stand-in for the Worker's bindings: STORE answers lists (as streams) and gets from in-memory objects, keyed
// by "group/resource" as the real shards are. Enough for the authorizers' store reads.
import type { KubeObject } from "../../../api/types";
import type { Env } from "../../../durable-objects/env";

export type Data = Record<string, KubeObject[]>;

let clusters = 0;

function fieldValue(o: KubeObject, field: string): string {
  if (field === "spec.nodeName") return o.spec?.nodeName ?? "";
  if (field === "metadata.name") return o.metadata.name ?? "";
  return "";
}

export function fakeEnv(data: Data, counters: { lists: number } = { lists: 0 }): Env {
  const stub = {
    async listStream(key: string, q: { namespace?: string; fieldSelector?: string }) {
      counters.lists++;
      let items = data[key] ?? [];
      if (q.namespace) items = items.filter((o) => o.metadata.namespace === q.namespace);
      for (const term of (q.fieldSelector ?? "").split(",").filter(Boolean)) {
        const [f, v] = term.split("=");
        items = items.filter((o) => fieldValue(o, f) === v);
      }
      return { ok: true, stream: new Response(JSON.stringify({ kind: "List", items })).body };
    },
    async get(key: string, namespace: string, name: string) {
      const o = (data[key] ?? []).find(
        (x) => (x.metadata.namespace ?? "") === namespace && x.metadata.name === name,
      );
      if (!o)
        return {
          ok: false,
          status: {
            kind: "Status",
            apiVersion: "v1",
            metadata: {},
            status: "Failure",
            code: 404,
            reason: "NotFound",
            message: `${name} not found`,
          },
        };
      return { ok: true, body: JSON.stringify(o) };
    },
  };
  const STORE = { idFromName: (n: string) => n, get: () => stub };
  return { STORE, EDGEPLANE_CLUSTER: `test-${++clusters}` } as unknown as Env;
}

const RBAC = "rbac.authorization.k8s.io";

export function role(ns: string, name: string, rules: any[]): KubeObject {
  return { apiVersion: `${RBAC}/v1`, kind: "Role", metadata: { namespace: ns, name }, rules };
}
export function clusterRole(
  name: string,
  rules: any[],
  labels?: Record<string, string>,
  aggregationRule?: any,
): KubeObject {
  const o: KubeObject = { apiVersion: `${RBAC}/v1`, kind: "ClusterRole", metadata: { name, labels }, rules };
  if (aggregationRule) o.aggregationRule = aggregationRule;
  return o;
}
export function roleBinding(
  ns: string,
  name: string,
  roleRef: { kind: string; name: string },
  subjects: any[],
): KubeObject {
  return {
    apiVersion: `${RBAC}/v1`,
    kind: "RoleBinding",
    metadata: { namespace: ns, name },
    roleRef: { apiGroup: RBAC, ...roleRef },
    subjects,
  };
}
export function clusterRoleBinding(name: string, roleName: string, subjects: any[]): KubeObject {
  return {
    apiVersion: `${RBAC}/v1`,
    kind: "ClusterRoleBinding",
    metadata: { name },
    roleRef: { apiGroup: RBAC, kind: "ClusterRole", name: roleName },
    subjects,
  };
}
export const user = (name: string, ...groups: string[]) => ({
  name,
  uid: "",
  groups: [...groups, "system:authenticated"],
});
export const U = (name: string) => ({ kind: "User", apiGroup: RBAC, name });
export const G = (name: string) => ({ kind: "Group", apiGroup: RBAC, name });
