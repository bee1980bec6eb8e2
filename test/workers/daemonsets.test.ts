// apps/v1 DaemonSets and ControllerRevisions through real workerd: upstream's defaults, its
// validation messages, the template generation the server keeps, and the table kubectl
// prints. The controller's work on nodes is in test/e2e/daemonsets.test.ts.
import { describe, expect, it } from "vitest";
import { api, causes, freshNamespace, hasKubectl, kubectl, shared, until } from "../helpers/cluster";

const t = shared();
const GENERATION = "deprecated.daemonset.template.generation";

function ds(name: string, spec: Record<string, unknown> = {}, podSpec: Record<string, unknown> = {}) {
  return {
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: "c", image: "busybox" }], ...podSpec },
      },
      ...spec,
    },
  };
}

const dsPath = (ns: string, name = "") =>
  `/apis/apps/v1/namespaces/${ns}/daemonsets${name ? `/${name}` : ""}`;
const crPath = (ns: string, name = "") =>
  `/apis/apps/v1/namespaces/${ns}/controllerrevisions${name ? `/${name}` : ""}`;

describe("apps/v1 daemonsets", () => {
  it("defaults a DaemonSet as upstream and starts its template generation at 1", async () => {
    const ns = await freshNamespace(t);
    const r = await api(t, "POST", dsPath(ns), ds("d"));
    expect(r.status, r.text).toBe(201);
    const d = r.json;
    expect(d.spec.updateStrategy).toEqual({
      type: "RollingUpdate",
      rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
    });
    expect(d.spec.revisionHistoryLimit).toBe(10);
    expect(d.spec.template.spec).toMatchObject({ restartPolicy: "Always", dnsPolicy: "ClusterFirst" });
    expect(d.metadata.annotations[GENERATION]).toBe("1");
    expect(d.metadata.generation).toBe(1);
    // the four counters upstream always shows
    expect(d.status).toEqual({
      currentNumberScheduled: 0,
      numberMisscheduled: 0,
      desiredNumberScheduled: 0,
      numberReady: 0,
    });
    // OnDelete gets no rollingUpdate
    const o = await api(t, "POST", dsPath(ns), ds("o", { updateStrategy: { type: "OnDelete" } }));
    expect(o.status, o.text).toBe(201);
    expect(o.json.spec.updateStrategy).toEqual({ type: "OnDelete" });
  });

  it("refuses what upstream refuses, in its words", async () => {
    const ns = await freshNamespace(t);
    const post = (body: unknown) => api(t, "POST", dsPath(ns), body);
    expect(await causes(await post(ds("a", {}, { restartPolicy: "Never" })))).toEqual([
      'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]);
    expect(await causes(await post(ds("b", {}, { activeDeadlineSeconds: 5 })))).toEqual([
      "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported",
    ]);
    const both = ds("c", {
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: "10%" } },
    });
    expect(await causes(await post(both))).toEqual([
      'spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "10%": may not be set when maxUnavailable is non-zero',
    ]);
    const none = ds("e", {
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: "0%" } },
    });
    expect(await causes(await post(none))).toEqual([
      "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
    ]);
    const over = ds("f", {
      updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "120%" } },
    });
    expect(await causes(await post(over))).toContain(
      'spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "120%": must not be greater than 100%',
    );
    const mismatch = ds("g");
    mismatch.spec.template.metadata.labels = { app: "other" };
    expect(await causes(await post(mismatch))).toContain(
      'spec.template.metadata.labels: Invalid value: {"app":"other"}: `selector` does not match template `labels`',
    );
    expect(await causes(await post(ds("h", { selector: {} })))).toContain(
      "spec.selector: Invalid value: {}: empty selector is invalid for daemonset",
    );
    expect(await causes(await post(ds("i", { revisionHistoryLimit: -1, minReadySeconds: -2 })))).toEqual([
      "spec.minReadySeconds: Invalid value: -2: must be greater than or equal to 0",
      "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
    ]);
    // nothing half-written
    const list = await api(t, "GET", dsPath(ns));
    expect(list.json.items).toEqual([]);
  });

  it("keeps the template generation itself: bumped by a template change only, never by the client", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", dsPath(ns), ds("g"))).status).toBe(201);
    const merge = { "content-type": "application/merge-patch+json" };
    // a spec change outside the template: generation moves, the template generation does not
    let r = await api(t, "PATCH", dsPath(ns, "g"), { spec: { minReadySeconds: 3 } }, merge);
    expect(r.status, r.text).toBe(200);
    expect(r.json.metadata.generation).toBe(2);
    expect(r.json.metadata.annotations[GENERATION]).toBe("1");
    // a template change moves both
    r = await api(
      t,
      "PATCH",
      dsPath(ns, "g"),
      { spec: { template: { metadata: { annotations: { x: "1" } } } } },
      merge,
    );
    expect(r.json.metadata.generation).toBe(3);
    expect(r.json.metadata.annotations[GENERATION]).toBe("2");
    // a client cannot set it
    r = await api(t, "PATCH", dsPath(ns, "g"), { metadata: { annotations: { [GENERATION]: "9" } } }, merge);
    expect(r.status, r.text).toBe(200);
    expect(r.json.metadata.annotations[GENERATION]).toBe("2");
    expect(r.json.metadata.generation).toBe(3);
    // the selector is immutable
    r = await api(
      t,
      "PATCH",
      dsPath(ns, "g"),
      { spec: { selector: { matchLabels: { app: "g", v: "2" } } } },
      merge,
    );
    expect(
      (await causes(r)).some(
        (c) => c.startsWith("spec.selector: Invalid value") && c.endsWith("field is immutable"),
      ),
    ).toBe(true);
  });

  it("serves ControllerRevisions: data required and immutable, revision not negative", async () => {
    const ns = await freshNamespace(t);
    const cr = (name: string, body: Record<string, unknown>) => ({
      apiVersion: "apps/v1",
      kind: "ControllerRevision",
      metadata: { name },
      ...body,
    });
    expect(await causes(await api(t, "POST", crPath(ns), cr("a", { revision: 1 })))).toContain(
      "data: Required value: data is mandatory",
    );
    expect(await causes(await api(t, "POST", crPath(ns), cr("b", { revision: -1, data: {} })))).toContain(
      "revision: Invalid value: -1: must be greater than or equal to 0",
    );
    const ok = await api(t, "POST", crPath(ns), cr("c", { revision: 1, data: { spec: { x: 1 } } }));
    expect(ok.status, ok.text).toBe(201);
    const merge = { "content-type": "application/merge-patch+json" };
    expect(
      await causes(await api(t, "PATCH", crPath(ns, "c"), { data: { spec: { x: 2 } } }, merge)),
    ).toContain('data: Invalid value: {"spec":{"x":2}}: field is immutable');
    // the revision number may change (the controller renumbers a template that is current again)
    const renumbered = await api(t, "PATCH", crPath(ns, "c"), { revision: 4 }, merge);
    expect(renumbered.status, renumbered.text).toBe(200);
    expect(renumbered.json.revision).toBe(4);
  });

  it.skipIf(!hasKubectl)(
    "kubectl get ds / -o wide / controllerrevisions print upstream's columns",
    async () => {
      const ns = await freshNamespace(t);
      const body = ds("w", {}, { nodeSelector: { pool: "gpu", zone: "a" } });
      expect((await api(t, "POST", dsPath(ns), body)).status).toBe(201);
      const get = await kubectl(t, ["get", "ds", "-n", ns]);
      expect(get.code, get.stderr).toBe(0);
      const [head, row] = get.stdout.trim().split("\n");
      expect(head!.split(/\s{2,}/)).toEqual([
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "NODE SELECTOR",
        "AGE",
      ]);
      expect(row).toMatch(/^w\s+0\s+0\s+0\s+0\s+0\s+pool=gpu,zone=a\s+\d+s$/);
      const wide = await kubectl(t, ["get", "ds", "-n", ns, "-o", "wide"]);
      expect(wide.stdout).toMatch(/CONTAINERS\s+IMAGES\s+SELECTOR/);
      expect(wide.stdout).toMatch(/\sc\s+busybox\s+app=w/);
      // the controller snapshots the template as revision 1
      const revs = await until("a revision", async () => {
        const r = await kubectl(t, ["get", "controllerrevisions", "-n", ns]);
        return r.stdout.includes("daemonset.apps/w") ? r : undefined;
      });
      expect(revs.stdout).toMatch(/NAME\s+CONTROLLER\s+REVISION\s+AGE/);
      expect(revs.stdout).toMatch(/w-[a-z0-9]+\s+daemonset\.apps\/w\s+1\s/);
    },
  );
});
