// pods/ephemeralcontainers (what `kubectl debug` patches) through real workerd: only the
// ephemeral containers change, new ones are checked as upstream checks them, existing ones
// stay as they were; a pod cannot be created with them. And a patch that names a
// resourceVersion is a precondition (`kubectl annotate --resource-version`).
import { describe, expect, it } from "vitest";
import { api, freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();
const SMP = { "content-type": "application/strategic-merge-patch+json" };

function pod(name: string, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name },
    spec: { containers: [{ name: "app", image: "busybox" }], ...extra },
  };
}

const debugger1 = { name: "dbg", image: "busybox", command: ["sh"], stdin: true, targetContainerName: "app" };

describe("pods/ephemeralcontainers", () => {
  it("adds an ephemeral container, defaulted, and changes nothing else", async () => {
    const ns = await freshNamespace(t);
    const base = `/api/v1/namespaces/${ns}/pods`;
    expect((await api(t, "POST", base, pod("p"))).status).toBe(201);
    const r = await api(
      t,
      "PATCH",
      `${base}/p/ephemeralcontainers`,
      // the rest of the body is ignored: only spec.ephemeralContainers goes through
      {
        metadata: { labels: { sneaky: "yes" } },
        spec: { ephemeralContainers: [debugger1], activeDeadlineSeconds: 5 },
      },
      SMP,
    );
    expect(r.status, r.text).toBe(200);
    expect(r.json.spec.ephemeralContainers).toEqual([
      {
        ...debugger1,
        imagePullPolicy: "Always",
        resources: {},
        terminationMessagePath: "/dev/termination-log",
        terminationMessagePolicy: "File",
      },
    ]);
    expect(r.json.metadata.labels?.sneaky).toBeUndefined();
    expect(r.json.spec.activeDeadlineSeconds).toBeUndefined();
    // the subresource reads as the pod
    const got = await api(t, "GET", `${base}/p/ephemeralcontainers`);
    expect([got.status, got.json.kind, got.json.spec.ephemeralContainers.length]).toEqual([200, "Pod", 1]);
    // a second one joins the first (merged by name)
    const two = await api(
      t,
      "PATCH",
      `${base}/p/ephemeralcontainers`,
      // as kubectl debug sends it: the order of the whole list, and the new container
      {
        spec: {
          "$setElementOrder/ephemeralContainers": [{ name: "dbg" }, { name: "dbg2" }],
          ephemeralContainers: [{ name: "dbg2", image: "busybox" }],
        },
      },
      SMP,
    );
    expect(two.json.spec.ephemeralContainers.map((c: { name: string }) => c.name)).toEqual(["dbg", "dbg2"]);
  });

  it("refuses what upstream refuses, in its words, and writes nothing", async () => {
    const ns = await freshNamespace(t);
    const base = `/api/v1/namespaces/${ns}/pods`;
    const created = await api(t, "POST", base, pod("c", { ephemeralContainers: [debugger1] }));
    expect([created.status, created.json.details?.causes]).toEqual([
      422,
      [
        {
          reason: "FieldValueForbidden",
          message: "Forbidden: cannot be set on create",
          field: "spec.ephemeralContainers",
        },
      ],
    ]);
    expect((await api(t, "POST", base, pod("p"))).status).toBe(201);
    const bad = await api(
      t,
      "PATCH",
      `${base}/p/ephemeralcontainers`,
      {
        spec: {
          ephemeralContainers: [
            {
              name: "app",
              image: "busybox",
              ports: [{ containerPort: 80 }],
              readinessProbe: { exec: { command: ["true"] } },
              targetContainerName: "nope",
            },
          ],
        },
      },
      SMP,
    );
    expect(bad.status).toBe(422);
    expect(
      bad.json.details.causes.map((c: { field: string; message: string }) => `${c.field}: ${c.message}`),
    ).toEqual([
      'spec.ephemeralContainers[0].name: Duplicate value: "app"',
      'spec.ephemeralContainers[0].targetContainerName: Not found: "nope"',
      "spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container",
      "spec.ephemeralContainers[0].readinessProbe: Forbidden: cannot be set for an Ephemeral Container",
    ]);
    const added = await api(
      t,
      "PATCH",
      `${base}/p/ephemeralcontainers`,
      { spec: { ephemeralContainers: [debugger1] } },
      SMP,
    );
    expect(added.status).toBe(200);
    const changed = await api(
      t,
      "PATCH",
      `${base}/p/ephemeralcontainers`,
      { spec: { ephemeralContainers: [{ name: "dbg", image: "alpine" }] } },
      SMP,
    );
    expect(changed.status).toBe(422);
    expect(changed.json.details.causes[0]).toMatchObject({
      reason: "FieldValueForbidden",
      field: "spec.ephemeralContainers[dbg]",
    });
    expect(changed.json.details.causes[0].message).toMatch(
      /^Forbidden: existing ephemeral containers "dbg" may not be changed\n/,
    );
    const removed = await api(t, "PUT", `${base}/p/ephemeralcontainers`, {
      ...added.json,
      spec: { ...added.json.spec, ephemeralContainers: [] },
    });
    expect([removed.status, removed.json.details?.causes?.[0]?.message]).toEqual([
      422,
      'Forbidden: existing ephemeral containers "dbg" may not be removed\n',
    ]);
    // nor through the pod itself
    const viaPod = await api(
      t,
      "PATCH",
      `${base}/p`,
      { spec: { ephemeralContainers: [{ name: "dbg3", image: "busybox" }] } },
      SMP,
    );
    expect(viaPod.status).toBe(422);
    const now = await api(t, "GET", `${base}/p`);
    expect(now.json.spec.ephemeralContainers.map((c: { name: string }) => c.name)).toEqual(["dbg"]);
  });

  it("a patch naming a stale resourceVersion is a 409, one naming the current one applies", async () => {
    const ns = await freshNamespace(t);
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const cm = await api(t, "POST", path, { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "c" } });
    const stalerv = cm.json.metadata.resourceVersion;
    const later = await api(t, "PUT", `${path}/c`, { ...cm.json, data: { k: "v" } });
    const rv = later.json.metadata.resourceVersion;
    const merge = { "content-type": "application/merge-patch+json" };
    const stale = await api(
      t,
      "PATCH",
      `${path}/c`,
      { metadata: { resourceVersion: stalerv, labels: { a: "b" } } },
      merge,
    );
    expect([stale.status, stale.json.reason, stale.json.message]).toEqual([
      409,
      "Conflict",
      'Operation cannot be fulfilled on configmaps "c": the object has been modified; please apply your changes to the latest version and try again',
    ]);
    const json = await api(
      t,
      "PATCH",
      `${path}/c`,
      [{ op: "replace", path: "/metadata/resourceVersion", value: stalerv }],
      { "content-type": "application/json-patch+json" },
    );
    expect(json.status).toBe(409);
    const current = await api(
      t,
      "PATCH",
      `${path}/c`,
      { metadata: { resourceVersion: rv, labels: { a: "b" } } },
      merge,
    );
    expect([current.status, current.json.metadata.labels]).toEqual([200, { a: "b" }]);
  });

  it.skipIf(!hasKubectl)(
    "kubectl debug adds a debugging container; annotate --resource-version is checked",
    async () => {
      const ns = await freshNamespace(t);
      expect((await kubectl(t, ["-n", ns, "run", "p", "--image=busybox", "--", "sleep", "1d"])).code).toBe(0);
      const field = (path: string) => kubectl(t, ["-n", ns, "get", "pod", "p", "-o", `jsonpath={${path}}`]);
      const before = await field(".metadata.resourceVersion");
      const debug = await kubectl(t, [
        "-n",
        ns,
        "debug",
        "p",
        "--image=busybox",
        "--container=dbg",
        "--",
        "sh",
      ]);
      expect(debug.code, debug.stderr).toBe(0);
      const names = await field(".spec.ephemeralContainers[*].name");
      expect(names.stdout).toBe("dbg");
      const stale = await kubectl(t, [
        "-n",
        ns,
        "annotate",
        "pod",
        "p",
        "note=x",
        `--resource-version=${before.stdout}`,
      ]);
      expect(stale.code).not.toBe(0);
      expect(stale.stderr).toContain(
        'Error from server (Conflict): Operation cannot be fulfilled on pods "p": the object has been modified',
      );
    },
  );
});
