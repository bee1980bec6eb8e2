// Who managedFields say wrote what: the built-in controllers and the scheduler send
// user agents shaped as upstream's components do, and the apiserver takes the manager from
// the part before the first "/", so kubectl --show-managed-fields names kube-controller-manager
// and kube-scheduler, as against upstream. Real workerd, real kubectl.
import { describe, expect, it } from "vitest";
import { freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();

/** A Deployment whose pods no node can take (the scheduler writes PodScheduled=False). */
const deployment = (ns: string) => `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${ns}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {example.com/nowhere: "true"}
      containers: [{name: c, image: registry.example/web:1}]
`;

interface Entry {
  manager: string;
  operation: string;
  subresource?: string;
}

/** kind -> "manager operation[ subresource]" for every object kubectl lists. */
async function managers(ns: string): Promise<Record<string, string[]>> {
  const r = await kubectl(t, ["get", "deploy,rs,pods", "-n", ns, "-o", "json", "--show-managed-fields"]);
  if (r.code !== 0) throw new Error(r.stderr);
  const out: Record<string, string[]> = {};
  for (const o of JSON.parse(r.stdout).items) {
    const entries: Entry[] = o.metadata.managedFields ?? [];
    out[o.kind] = [
      ...(out[o.kind] ?? []),
      ...entries.map((e) => [e.manager, e.operation, e.subresource].filter(Boolean).join(" ")),
    ];
  }
  return out;
}

describe.skipIf(!hasKubectl)("managedFields managers of the built-in components", () => {
  it("records the controllers' writes as kube-controller-manager, the scheduler's as kube-scheduler", async () => {
    const ns = await freshNamespace(t, "fm");
    const created = await kubectl(t, ["create", "-f", "-"], { input: deployment(ns) });
    expect(created.stderr).toBe("");
    const got = await until(
      "the replica set, its pod, and the scheduler's verdict on it",
      async () => {
        const m = await managers(ns);
        return m.Pod?.includes("kube-scheduler Update status") && m.Deployment?.length > 1 ? m : undefined;
      },
      30_000,
      250,
    );
    expect(got.ReplicaSet).toContain("kube-controller-manager Update");
    expect(got.Pod).toContain("kube-controller-manager Update");
    expect(got.Deployment).toContain("kubectl-create Update");
    expect(got.Deployment).toContain("kube-controller-manager Update status");
    const all = Object.values(got).flat();
    expect(all.filter((m) => m.startsWith("system:"))).toEqual([]);
  }, 40_000);
});
