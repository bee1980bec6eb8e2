// Binding pods to nodes both ways upstream serves: pods/<name>/binding (what kube-scheduler
// uses) and the namespace's core/v1 bindings (older custom schedulers), through real kubectl.
import { beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();
let ns = "";

const pod = (name: string) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { schedulerName: "nobody", containers: [{ name: "c", image: "busybox" }] },
});
const binding = (name: string | undefined, node: string) => ({
  apiVersion: "v1",
  kind: "Binding",
  metadata: name === undefined ? {} : { name },
  target: { kind: "Node", name: node },
});

beforeAll(async () => {
  ns = await freshNamespace(t, "bind");
  for (const name of ["a", "b", "c", "e"]) {
    const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod(name));
    if (r.status !== 201) throw new Error(`setup: ${r.status} ${r.text}`);
  }
});

describe("bindings", () => {
  it.skipIf(!hasKubectl)(
    "core/v1 bindings is served: kubectl lists it and creates a Binding that binds the pod",
    async () => {
      const res = await kubectl(t, ["api-resources", "--api-group=", "-o", "wide"]);
      expect(res.stdout).toMatch(/^bindings\s+v1\s+true\s+Binding\s+create\s*$/m);
      const made = await kubectl(t, ["create", "-n", ns, "-f", "-"], {
        input: JSON.stringify(binding("a", "n1")),
      });
      expect(made.code, made.stderr).toBe(0);
      // the answer is a Success Status, as upstream's: kubectl names what it got back
      expect(made.stdout).toContain("created");
      const a = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/a`)).json;
      expect(a.spec.nodeName).toBe("n1");
      expect(a.status.conditions).toContainEqual(
        expect.objectContaining({ type: "PodScheduled", status: "True" }),
      );
      // once bound, bound: the second is refused as pods/binding refuses it
      const again = await kubectl(t, ["create", "-n", ns, "-f", "-"], {
        input: JSON.stringify(binding("a", "n2")),
      });
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain('pod a is already assigned to node "n1"');
    },
  );

  it("a dry run binds nothing; a uid precondition and a pod being deleted are 409; annotations join the pod's", async () => {
    const dry = await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/pods/e/binding?dryRun=All`,
      binding("e", "n1"),
    );
    expect(dry.status, dry.text).toBe(201);
    expect((await api(t, "GET", `/api/v1/namespaces/${ns}/pods/e`)).json.spec.nodeName).toBeUndefined();
    const wrongUid = await api(t, "POST", `/api/v1/namespaces/${ns}/pods/e/binding`, {
      ...binding("e", "n1"),
      metadata: { name: "e", uid: "not-its-uid" },
    });
    expect(wrongUid.status, wrongUid.text).toBe(409);
    expect(wrongUid.json.message).toMatch(
      /^Operation cannot be fulfilled on pods\/binding "e": Precondition failed: UID in precondition: not-its-uid, UID in object meta: /,
    );
    // a pod kept by a finalizer while it is deleted
    const held = { ...pod("held"), metadata: { name: "held", finalizers: ["example.com/hold"] } };
    expect((await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, held)).status).toBe(201);
    expect((await api(t, "DELETE", `/api/v1/namespaces/${ns}/pods/held`)).status).toBeLessThan(300);
    const deleting = await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/pods/held/binding`,
      binding("held", "n1"),
    );
    expect(deleting.status, deleting.text).toBe(409);
    expect(deleting.json.message).toContain("pod held is being deleted, cannot be assigned to a host");
    await api(
      t,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/held`,
      { metadata: { finalizers: null } },
      {
        "content-type": "application/merge-patch+json",
      },
    );
    const b = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/e`);
    const ok = await api(t, "POST", `/api/v1/namespaces/${ns}/pods/e/binding`, {
      ...binding("e", "n3"),
      metadata: { name: "e", uid: b.json.metadata.uid, annotations: { "example.com/by": "test" } },
    });
    expect(ok.status, ok.text).toBe(201);
    const bound = (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/e`)).json;
    expect(bound.spec.nodeName).toBe("n3");
    expect(bound.metadata.annotations["example.com/by"]).toBe("test");
    expect(Number(bound.metadata.resourceVersion)).toBeGreaterThan(Number(b.json.metadata.resourceVersion));
  });

  it("a Binding that names no pod, or another pod than its URL's, is refused", async () => {
    const unnamed = await api(t, "POST", `/api/v1/namespaces/${ns}/bindings`, binding(undefined, "n1"));
    expect(unnamed.status, unnamed.text).toBe(422);
    expect(unnamed.json.details.causes).toContainEqual(
      expect.objectContaining({ reason: "FieldValueRequired", field: "metadata.name" }),
    );
    const other = await api(t, "POST", `/api/v1/namespaces/${ns}/pods/b/binding`, binding("c", "n1"));
    expect(other.status, other.text).toBe(400);
    expect(other.json.message).toBe("name in URL does not match name in Binding object");
    const noTarget = await api(t, "POST", `/api/v1/namespaces/${ns}/bindings`, {
      ...binding("b", "n1"),
      target: { kind: "Service", name: "" },
    });
    expect(noTarget.status, noTarget.text).toBe(422);
    expect(noTarget.json.details.causes.map((c: any) => c.field).sort()).toEqual([
      "target.kind",
      "target.name",
    ]);
    const missing = await api(t, "POST", `/api/v1/namespaces/${ns}/bindings`, binding("nope", "n1"));
    expect(missing.status, missing.text).toBe(404);
    for (const name of ["b", "c"])
      expect(
        (await api(t, "GET", `/api/v1/namespaces/${ns}/pods/${name}`)).json.spec.nodeName,
      ).toBeUndefined();
  });

  it.skipIf(!hasKubectl)(
    "kubectl exec into a pod bound to a node with no agent says so, after its SPDY fallback too",
    async () => {
      await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("d"));
      const bound = await api(t, "POST", `/api/v1/namespaces/${ns}/bindings`, binding("d", "ghost-node"));
      expect(bound.status, bound.text).toBe(201);
      // kubectl tries WebSocket, then SPDY, and prints the second answer
      const exec = await kubectl(t, ["exec", "-n", ns, "d", "--", "hostname"]);
      expect(exec.code).not.toBe(0);
      expect(exec.stderr).toContain('node "ghost-node" has no tunnel connected');
      expect(exec.stderr).not.toContain("Upgrade request required");
      const attach = await kubectl(t, ["attach", "-n", ns, "d"]);
      expect(attach.stderr).toContain('node "ghost-node" has no tunnel connected');
    },
  );
});
