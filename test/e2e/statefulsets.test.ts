// StatefulSets end to end: real kubectl, the StatefulSet controller and the scheduler in
// workerd, KWOK-style simulated nodes. Stable names and hostnames; OrderedReady creation, one
// pod at a time in ordinal order, each after the one before is Ready; rolling updates from the
// highest ordinal down to the partition; scale down from the highest ordinal; revisions that
// `kubectl rollout history/undo` read; Parallel creation; finished pods made again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";
import {
  isReady,
  appPods as pods,
  rolledOut as rolled,
  type SimPool,
  startSimPool,
} from "../helpers/sim-pool";
import { openWatch, type WatchEvent } from "../helpers/watch-stream";

const t = shared();
let pool: SimPool;

function manifest(name: string, image: string, spec = ""): string {
  return `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: ${name}
spec:
  serviceName: ${name}
  replicas: 3
  selector:
    matchLabels: {app: ${name}}
${spec}  template:
    metadata:
      labels: {app: ${name}}
    spec:
      ${pool.placement}
      containers: [{name: c, image: "${image}"}]
`;
}

const k = (args: string[], input?: string) => kubectl(t, args, input === undefined ? {} : { input });
/** A watch on the namespace's pods from now, and the story of its events (story below). */
async function watchPods(ns: string) {
  const list = await api(t, "GET", `/api/v1/namespaces/${ns}/pods`);
  const watch = await openWatch(
    t,
    `/api/v1/namespaces/${ns}/pods?watch=1&resourceVersion=${list.json.metadata.resourceVersion}`,
  );
  const ready = (list.json.items as any[]).filter(isReady).map((p) => p.metadata.name as string);
  return { watch, story: () => story(watch.events, ready) };
}

/**
 * The order of events as "<TYPE> <pod>" and "READY <pod>" (the first event that shows it
 * Ready; pods Ready when the watch began are not told again).
 */
function story(events: WatchEvent[], readyBefore: string[]): string[] {
  const out: string[] = [];
  const ready = new Set(readyBefore);
  for (const e of events) {
    const name = e.object.metadata.name;
    if (e.type === "ADDED") out.push(`ADDED ${name}`);
    if (e.type === "DELETED") {
      out.push(`DELETED ${name}`);
      ready.delete(name);
    } else if (isReady(e.object) && !ready.has(name)) {
      ready.add(name);
      out.push(`READY ${name}`);
    }
  }
  return out;
}

const rolledOut = (ns: string, name: string) => rolled(t, ns, `sts/${name}`);

// a pod takes a moment to start, so an order that did not wait for it would show
beforeAll(async () => {
  pool = await startSimPool(t, "sts", 2, 300);
});
afterAll(() => pool?.stop());

describe.skipIf(!hasKubectl)("statefulsets", () => {
  it("starts pods in ordinal order, each once the one before is Ready, with stable names and hostnames", async () => {
    const ns = await freshNamespace(t);
    const { watch, story: told } = await watchPods(ns);
    const applied = await k(["apply", "-n", ns, "-f", "-"], manifest("web", "busybox:1"));
    expect(applied.code, applied.stderr).toBe(0);
    await rolledOut(ns, "web");
    watch.close();
    expect(told()).toEqual([
      "ADDED web-0",
      "READY web-0",
      "ADDED web-1",
      "READY web-1",
      "ADDED web-2",
      "READY web-2",
    ]);
    const [p0] = await pods(t, ns, "web");
    expect(p0.spec).toMatchObject({ hostname: "web-0", subdomain: "web" });
    expect(p0.metadata.labels).toMatchObject({
      "statefulset.kubernetes.io/pod-name": "web-0",
      "apps.kubernetes.io/pod-index": "0",
    });
    expect(p0.metadata.labels["controller-revision-hash"]).toMatch(/^web-[a-z0-9]+$/);
    const get = await k(["get", "sts", "web", "-n", ns]);
    expect(get.stdout).toMatch(/^NAME\s+READY\s+AGE\nweb\s+3\/3\s+\d+s\n$/);
    const sts = (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/statefulsets/web`)).json;
    expect(sts.status).toMatchObject({
      replicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
      currentReplicas: 3,
      updatedReplicas: 3,
      currentRevision: p0.metadata.labels["controller-revision-hash"],
      updateRevision: p0.metadata.labels["controller-revision-hash"],
      observedGeneration: 1,
    });

    // scale down: the highest ordinal goes first
    const down = await watchPods(ns);
    expect((await k(["scale", "sts/web", "-n", ns, "--replicas=1"])).code).toBe(0);
    await until("one pod left", async () => (await pods(t, ns, "web")).length === 1);
    down.watch.close();
    expect(down.story().filter((s) => s.startsWith("DELETED"))).toEqual(["DELETED web-2", "DELETED web-1"]);
    expect((await pods(t, ns, "web")).map((p) => p.metadata.name)).toEqual(["web-0"]);
  });

  it("rolls a new template from the highest ordinal down, honours the partition, and undoes it", async () => {
    const ns = await freshNamespace(t);
    expect((await k(["apply", "-n", ns, "-f", "-"], manifest("db", "busybox:1"))).code).toBe(0);
    await rolledOut(ns, "db");
    const first = (await pods(t, ns, "db"))[0].metadata.labels["controller-revision-hash"];

    // a partition of 2: only db-2 moves to the new template
    const part = await k([
      "patch",
      "sts/db",
      "-n",
      ns,
      "-p",
      '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}',
    ]);
    expect(part.code, part.stderr).toBe(0);
    expect((await k(["set", "image", "sts/db", "-n", ns, "c=busybox:2"])).code).toBe(0);
    const partitioned = await until("db-2 updated", async () => {
      const ps = await pods(t, ns, "db");
      return ps.length === 3 && ps.every(isReady) && ps[2].spec.containers[0].image === "busybox:2" && ps;
    });
    expect(partitioned.map((p) => p.spec.containers[0].image)).toEqual([
      "busybox:1",
      "busybox:1",
      "busybox:2",
    ]);
    const status = await k(["rollout", "status", "sts/db", "-n", ns, "--timeout=10s"]);
    expect(status.stdout).toContain("partitioned roll out complete: 1 new pods have been updated...");

    // partition 0: the rest, db-1 then db-0, each after the one before is Ready again
    const roll = await watchPods(ns);
    expect(
      (
        await k([
          "patch",
          "sts/db",
          "-n",
          ns,
          "-p",
          '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}',
        ])
      ).code,
    ).toBe(0);
    await until("all updated", async () => {
      const ps = await pods(t, ns, "db");
      return ps.length === 3 && ps.every((p) => isReady(p) && p.spec.containers[0].image === "busybox:2");
    });
    roll.watch.close();
    expect(roll.story()).toEqual([
      "DELETED db-1",
      "ADDED db-1",
      "READY db-1",
      "DELETED db-0",
      "ADDED db-0",
      "READY db-0",
    ]);
    const sts = await until("current revision moved", async () => {
      const s = (await api(t, "GET", `/apis/apps/v1/namespaces/${ns}/statefulsets/db`)).json;
      return s.status.currentRevision === s.status.updateRevision && s.status.currentRevision !== first && s;
    });
    expect(sts.status).toMatchObject({ currentReplicas: 3, updatedReplicas: 3 });

    const history = await k(["rollout", "history", "sts/db", "-n", ns]);
    expect(history.stdout).toMatch(/^1\s+<none>$/m);
    expect(history.stdout).toMatch(/^2\s+<none>$/m);
    const undo = await k(["rollout", "undo", "sts/db", "-n", ns]);
    expect(undo.stdout.trim()).toBe("statefulset.apps/db rolled back");
    await until("busybox:1 again", async () => {
      const ps = await pods(t, ns, "db");
      return ps.length === 3 && ps.every((p) => isReady(p) && p.spec.containers[0].image === "busybox:1");
    });
    // the first template is current again, as revision 3, under its old name
    const again = await k(["rollout", "undo", "sts/db", "-n", ns, "--to-revision=3"]);
    expect(again.stdout.trim()).toBe(
      "statefulset.apps/db skipped rollback (current template already matches revision 3)",
    );
    expect(
      (await pods(t, ns, "db")).every((p) => p.metadata.labels["controller-revision-hash"] === first),
    ).toBe(true);
  });

  it("Parallel starts every pod at once; a failed pod is deleted and made again under its name", async () => {
    const ns = await freshNamespace(t);
    const { watch, story: told } = await watchPods(ns);
    expect(
      (
        await k(
          ["apply", "-n", ns, "-f", "-"],
          manifest("par", "busybox:1", "  podManagementPolicy: Parallel\n"),
        )
      ).code,
    ).toBe(0);
    await rolledOut(ns, "par");
    watch.close();
    const s = told();
    // all three were made before the first was Ready
    expect(s.slice(0, 3).sort()).toEqual(["ADDED par-0", "ADDED par-1", "ADDED par-2"]);

    const [p0] = await pods(t, ns, "par");
    const failed = await api(
      t,
      "PATCH",
      `/api/v1/namespaces/${ns}/pods/par-0/status`,
      { status: { phase: "Failed" } },
      { "content-type": "application/merge-patch+json" },
    );
    expect(failed.status, failed.text).toBe(200);
    const again = await until("par-0 made again", async () => {
      const p = (await pods(t, ns, "par")).find((x) => x.metadata.name === "par-0");
      return p && p.metadata.uid !== p0.metadata.uid && isReady(p) && p;
    });
    expect(again.spec.hostname).toBe("par-0");
    const events = await k([
      "get",
      "events",
      "-n",
      ns,
      "--field-selector",
      "involvedObject.kind=StatefulSet",
    ]);
    expect(events.stdout).toContain("delete Pod par-0 in StatefulSet par successful");
  });
});
