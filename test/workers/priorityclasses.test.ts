// scheduling.k8s.io/v1 PriorityClasses and the Priority admission plugin through real workerd
// and kubectl: the two system classes every cluster has (and cannot delete), upstream's
// validation, a pod's priority and preemption policy resolved from its class (or the global
// default's), and the refusals in upstream's words. On a server of its own: a global default
// class would change every other suite's pods.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl } from "../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../helpers/own-server";

let t: OwnServer;
const PC = "/apis/scheduling.k8s.io/v1/priorityclasses";

beforeAll(async () => {
  t = await startOwnServer();
}, 60_000);
afterAll(async () => {
  await t?.stop();
  removeStateDir(t?.stateDir);
});

const pc = (name: string, more: Record<string, unknown> = {}) => ({
  apiVersion: "scheduling.k8s.io/v1",
  kind: "PriorityClass",
  metadata: { name },
  value: 1000,
  ...more,
});

const pod = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name },
  spec: { containers: [{ name: "c", image: "busybox" }], ...spec },
});

describe("scheduling.k8s.io/v1 priorityclasses", () => {
  it.skipIf(!hasKubectl)("has the system classes, which cannot be deleted", async () => {
    const out = await kubectl(t, ["get", "pc"]);
    expect(
      out.stdout
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split(/\s{2,}/).filter((_cell, i) => i !== 3)),
    ).toEqual([
      ["NAME", "VALUE", "GLOBAL-DEFAULT", "PREEMPTIONPOLICY"],
      ["system-cluster-critical", "2000000000", "false", "PreemptLowerPriority"],
      ["system-node-critical", "2000001000", "false", "PreemptLowerPriority"],
    ]);
    const del = await api(t, "DELETE", `${PC}/system-node-critical`);
    expect(del.status, del.text).toBe(403);
    expect(del.json.message).toBe(
      'priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted',
    );
  });

  it("validates classes as upstream", async () => {
    expect(await causes(await api(t, "POST", PC, pc("system-mine")))).toEqual([
      "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class",
    ]);
    expect(
      await causes(
        await api(t, "POST", PC, pc("huge", { value: 1000000001, preemptionPolicy: "Sometimes" })),
      ),
    ).toEqual([
      "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
      'preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
    ]);
    const made = await api(t, "POST", PC, pc("fixed", { preemptionPolicy: "Never" }));
    expect(made.status, made.text).toBe(201);
    const changed = await api(
      t,
      "PATCH",
      `${PC}/fixed`,
      { value: 5, preemptionPolicy: "PreemptLowerPriority", description: "ok" },
      { "content-type": "application/merge-patch+json" },
    );
    expect(await causes(changed)).toEqual([
      "value: Forbidden: may not be changed in an update.",
      'preemptionPolicy: Invalid value: "PreemptLowerPriority": field is immutable',
    ]);
  });

  it("gives a pod its class's priority and preemption policy, and refuses what upstream refuses", async () => {
    const ns = await freshNamespace(t);
    await api(t, "POST", PC, pc("batch-low", { value: 10, preemptionPolicy: "Never" }));
    const p = await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/pods`,
      pod("a", { priorityClassName: "batch-low" }),
    );
    expect(p.status, p.text).toBe(201);
    expect(p.json.spec).toMatchObject({
      priority: 10,
      preemptionPolicy: "Never",
      priorityClassName: "batch-low",
    });
    const critical = await api(
      t,
      "POST",
      `/api/v1/namespaces/${ns}/pods`,
      pod("c", { priorityClassName: "system-cluster-critical" }),
    );
    expect(critical.json.spec.priority).toBe(2000000000);
    const plain = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("p"));
    expect(plain.json.spec).toMatchObject({ priority: 0, preemptionPolicy: "PreemptLowerPriority" });
    expect(plain.json.spec.priorityClassName).toBeUndefined();
    const refused = async (body: unknown) => {
      const r = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, body);
      expect(r.status, r.text).toBe(403);
      return r.json.message;
    };
    expect(await refused(pod("u", { priorityClassName: "nope" }))).toBe(
      'pods "u" is forbidden: no PriorityClass with name nope was found',
    );
    expect(await refused(pod("v", { priorityClassName: "batch-low", priority: 99 }))).toBe(
      'pods "v" is forbidden: the integer value of priority (99) must not be provided in pod spec; priority admission controller computed 10 from the given PriorityClass name',
    );
    expect(
      await refused(pod("w", { priorityClassName: "batch-low", preemptionPolicy: "PreemptLowerPriority" })),
    ).toBe(
      'pods "w" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name',
    );
  });

  it("applies the one global default to pods that name no class", async () => {
    const ns = await freshNamespace(t);
    const def = await api(t, "POST", PC, pc("everyday", { value: 500, globalDefault: true }));
    expect(def.status, def.text).toBe(201);
    const second = await api(t, "POST", PC, pc("another", { globalDefault: true }));
    expect(second.status, second.text).toBe(403);
    expect(second.json.message).toBe(
      'priorityclasses.scheduling.k8s.io "another" is forbidden: PriorityClass everyday is already marked as default. Only one default can exist',
    );
    // the admission cache is dropped when this isolate writes classes; a moment covers another's
    await new Promise((r) => setTimeout(r, 1100));
    const p = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod("d"));
    expect(p.status, p.text).toBe(201);
    expect(p.json.spec).toMatchObject({ priority: 500, priorityClassName: "everyday" });
    expect((await api(t, "DELETE", `${PC}/everyday`)).status).toBe(200);
  });
});
