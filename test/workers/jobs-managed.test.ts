// batch/v1 Jobs, the parts that decide who runs a Job and what may change before it starts:
// spec.managedBy (another controller's Job is left alone), and the scheduling directives a
// suspended Job that never started may still change in its template.
import { describe, expect, it } from "vitest";
import { api, freshNamespace, shared } from "../helpers/cluster";
import { getJob, job, jobPath, podsOf } from "../helpers/jobs";

const t = shared();
const merge = { "content-type": "application/merge-patch+json" };

describe("batch/v1 jobs: managedBy and suspended templates", () => {
  it("leaves a Job that names another controller in spec.managedBy to it", async () => {
    const ns = await freshNamespace(t);
    const bad = await api(t, "POST", jobPath(ns), job("b", { managedBy: "kueue" }));
    expect(bad.status, bad.text).toBe(422);
    expect(bad.json.details.causes.map((c: any) => `${c.field}: ${c.message}`)).toEqual([
      'spec.managedBy: Invalid value: "kueue": must be a domain-prefixed path (such as "acme.io/foo")',
    ]);
    const other = await api(t, "POST", jobPath(ns), job("other", { managedBy: "example.com/batch" }));
    expect(other.status, other.text).toBe(201);
    const ours = await api(
      t,
      "POST",
      jobPath(ns),
      job("ours", { managedBy: "kubernetes.io/job-controller" }),
    );
    expect(ours.status, ours.text).toBe(201);
    // ours starts a pod; by the time it has, the other one would have too
    await expect.poll(async () => (await podsOf(ns, ours.json)).length, { timeout: 15_000 }).toBe(1);
    expect(await podsOf(ns, other.json)).toEqual([]);
    expect((await getJob(ns, "other")).status).toEqual({});
    const change = await api(
      t,
      "PATCH",
      jobPath(ns, "other"),
      { spec: { managedBy: "example.com/other" } },
      merge,
    );
    expect(change.status).toBe(422);
    expect(change.json.details.causes[0].message).toBe(
      'Invalid value: "example.com/other": field is immutable',
    );
  });

  it("lets a suspended Job that never started change where its pods run, and nothing else", async () => {
    const ns = await freshNamespace(t);
    expect((await api(t, "POST", jobPath(ns), job("s", { suspend: true }))).status).toBe(201);
    const moved = await api(
      t,
      "PATCH",
      jobPath(ns, "s"),
      {
        spec: {
          template: {
            metadata: { labels: { queue: "gpu" } },
            spec: { nodeSelector: { accelerator: "gpu" }, tolerations: [{ key: "gpu", operator: "Exists" }] },
          },
        },
      },
      merge,
    );
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json.spec.template.spec.nodeSelector).toEqual({ accelerator: "gpu" });
    const image = await api(
      t,
      "PATCH",
      jobPath(ns, "s"),
      { spec: { template: { spec: { containers: [{ name: "work", image: "busybox:2" }] } } } },
      merge,
    );
    expect(image.status).toBe(422);
    expect(image.json.details.causes.map((c: any) => c.field)).toEqual(["spec.template"]);
    // once it has run, the template is fixed
    expect((await api(t, "PATCH", jobPath(ns, "s"), { spec: { suspend: false } }, merge)).status).toBe(200);
    await expect
      .poll(async () => (await getJob(ns, "s")).status?.startTime, { timeout: 15_000 })
      .toBeTruthy();
    expect((await api(t, "PATCH", jobPath(ns, "s"), { spec: { suspend: true } }, merge)).status).toBe(200);
    const later = await api(
      t,
      "PATCH",
      jobPath(ns, "s"),
      { spec: { template: { spec: { nodeSelector: { accelerator: "tpu" } } } } },
      merge,
    );
    expect(later.status).toBe(422);
  });
});
