// DaemonSets end to end: real kubectl, the DaemonSet controller and the scheduler in workerd,
// KWOK-style simulated nodes. One pod per matching node, placed through a node affinity that
// names the node; rolling updates within maxUnavailable; ControllerRevisions that
// `kubectl rollout history/undo` read and patch back; nodes coming and going from the set.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";
import { appPods, isReady, rolledOut as rolled, type SimPool, startSimPool } from "../helpers/sim-pool";
import { openWatch } from "../helpers/watch-stream";

const t = shared();
const k = (args: string[], input?: string) => kubectl(t, args, input === undefined ? {} : { input });
let pool: SimPool;

function manifest(name: string, image: string, extra = ""): string {
  return `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: ${name}
spec:
  selector:
    matchLabels: {app: ${name}}
  template:
    metadata:
      labels: {app: ${name}}
    spec:
      ${pool.placement}
      containers: [{name: c, image: "${image}"}]
${extra}`;
}

const livePods = async (ns: string, app: string) =>
  (await appPods(t, ns, app)).filter((p) => !p.metadata.deletionTimestamp);
const rolledOut = (ns: string, name: string) => rolled(t, ns, `ds/${name}`);

// pods take a moment to start, so an update that took down too many at once would be seen
beforeAll(async () => {
  pool = await startSimPool(t, "ds", 3, 400);
});
afterAll(() => pool?.stop());

describe.skipIf(!hasKubectl)("daemonsets", () => {
  it("runs one pod per node, rolls a new image within maxUnavailable, and undoes it from its revisions", async () => {
    const ns = await freshNamespace(t);
    const applied = await k(["apply", "-n", ns, "-f", "-"], manifest("agent", "busybox:1"));
    expect(applied.code, applied.stderr).toBe(0);
    expect(await rolledOut(ns, "agent")).toContain('daemon set "agent" successfully rolled out');
    const first = await livePods(ns, "agent");
    expect(first.map((p) => p.spec.nodeName).sort()).toEqual([...pool.nodes].sort());
    for (const p of first) {
      // placed by the scheduler through an affinity that names only its node
      expect(
        p.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms,
      ).toEqual([{ matchFields: [{ key: "metadata.name", operator: "In", values: [p.spec.nodeName] }] }]);
      expect(p.spec.tolerations).toContainEqual({
        key: "node.kubernetes.io/not-ready",
        operator: "Exists",
        effect: "NoExecute",
      });
      expect(p.metadata.labels["pod-template-generation"]).toBe("1");
      expect(p.metadata.labels["controller-revision-hash"]).toMatch(/^[a-z0-9]+$/);
      expect(p.metadata.ownerReferences[0]).toMatchObject({
        kind: "DaemonSet",
        name: "agent",
        controller: true,
      });
    }
    const get = await k(["get", "ds", "agent", "-n", ns]);
    expect(get.stdout).toMatch(
      new RegExp(`agent\\s+3\\s+3\\s+3\\s+3\\s+3\\s+${pool.label}=${pool.value}\\s`),
    );

    // a new image rolls node by node: never more than maxUnavailable (1) of the 3 without a ready pod
    const list = await api(t, "GET", `/api/v1/namespaces/${ns}/pods`);
    const watch = await openWatch(
      t,
      `/api/v1/namespaces/${ns}/pods?watch=1&resourceVersion=${list.json.metadata.resourceVersion}`,
    );
    const set = await k(["set", "image", "ds/agent", "-n", ns, "c=busybox:2"]);
    expect(set.code, set.stderr).toBe(0);
    await rolledOut(ns, "agent");
    watch.close();
    const state = new Map<string, any>(list.json.items.map((p: any) => [p.metadata.name, p]));
    let minReady = 3;
    for (const ev of watch.events) {
      if (ev.type === "DELETED") state.delete(ev.object.metadata.name);
      else state.set(ev.object.metadata.name, ev.object);
      minReady = Math.min(
        minReady,
        [...state.values()].filter((p) => !p.metadata.deletionTimestamp && isReady(p)).length,
      );
    }
    expect(watch.events.length).toBeGreaterThan(6);
    expect(minReady).toBe(2);
    const second = await livePods(ns, "agent");
    expect(second.map((p) => p.spec.containers[0].image)).toEqual(["busybox:2", "busybox:2", "busybox:2"]);
    expect(second.every((p) => p.metadata.labels["pod-template-generation"] === "2")).toBe(true);

    const history = await k(["rollout", "history", "ds/agent", "-n", ns]);
    expect(history.stdout).toMatch(/^1\s+<none>$/m);
    expect(history.stdout).toMatch(/^2\s+<none>$/m);
    const undo = await k(["rollout", "undo", "ds/agent", "-n", ns]);
    expect(undo.stdout.trim()).toBe("daemonset.apps/agent rolled back");
    await until("busybox:1 again", async () => {
      const pods = await livePods(ns, "agent");
      return pods.length === 3 && pods.every((p) => p.spec.containers[0].image === "busybox:1" && isReady(p));
    });
    // the first template is current again: its revision is renumbered after the second
    const after = await until("revision 3", async () => {
      const h = await k(["rollout", "history", "ds/agent", "-n", ns]);
      return /^3\s/m.test(h.stdout) && h.stdout;
    });
    expect(after).not.toMatch(/^1\s/m);
    // kubectl compares the revision's bytes with the DaemonSet's own template: nothing to undo
    const again = await k(["rollout", "undo", "ds/agent", "-n", ns, "--to-revision=3"]);
    expect(again.stdout.trim()).toBe(
      "daemonset.apps/agent skipped rollback (current template already matches revision 3)",
    );
  });

  it("follows the nodes: one leaving the selector loses its pod, a failed pod is replaced, delete cleans up", async () => {
    const ns = await freshNamespace(t);
    expect((await k(["apply", "-n", ns, "-f", "-"], manifest("mon", "busybox:1"))).code).toBe(0);
    await rolledOut(ns, "mon");
    const [n0, n1] = pool.nodes as [string, string];
    try {
      expect((await k(["label", "node", n1, `${pool.label}=elsewhere`, "--overwrite"])).code).toBe(0);
      await until("no pod on the relabelled node", async () => {
        const pods = await livePods(ns, "mon");
        return pods.length === 2 && pods.every((p) => p.spec.nodeName !== n1);
      });
      // counted as misscheduled while its pod is still going, then not at all
      const status = await until("desired 2, none misscheduled", async () => {
        const s = (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/daemonsets/mon`)).json.status;
        return s.desiredNumberScheduled === 2 && s.numberMisscheduled === 0 && s;
      });
      expect(status).toMatchObject({ currentNumberScheduled: 2, numberReady: 2, numberAvailable: 2 });
    } finally {
      await k(["label", "node", n1, `${pool.label}=${pool.value}`, "--overwrite"]);
    }
    await until("back on 3 nodes", async () => (await livePods(ns, "mon")).length === 3);

    // a pod that fails is deleted (FailedDaemonPod) and its node gets a new one
    const failing = (await livePods(ns, "mon")).find((p) => p.spec.nodeName === n0);
    const patched = await api(
      t,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/${failing.metadata.name}/status`,
      { status: { phase: "Failed" } },
      { "content-type": "application/merge-patch+json" },
    );
    expect(patched.status, patched.text).toBe(200);
    const replacement = await until("a new pod on the node", async () => {
      const pods = await livePods(ns, "mon");
      return pods.find((p) => p.spec.nodeName === n0 && p.metadata.name !== failing.metadata.name);
    });
    expect(replacement.metadata.labels["controller-revision-hash"]).toBe(
      failing.metadata.labels["controller-revision-hash"],
    );
    const events = await k(["get", "events", "-n", ns, "--field-selector", "involvedObject.kind=DaemonSet"]);
    expect(events.stdout).toContain(
      `Found failed daemon pod ${ns}/${failing.metadata.name} on node ${n0}, will try to kill it`,
    );

    expect((await k(["delete", "ds", "mon", "-n", ns])).code).toBe(0);
    await until("pods and revisions gone", async () => {
      const pods = await api(t, "GET", `/api/v1/namespaces/${ns}/pods`);
      const revs = await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/controllerrevisions`);
      return pods.json.items.length === 0 && revs.json.items.length === 0;
    });
  });
});
