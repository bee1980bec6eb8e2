// Jobs in tests: a Job body, its pods, and the kubelet's part (moving a pod's phase), for the
// suites that drive the Job controller through real workerd.
import { expect } from "vitest";
import { api, shared, until } from "./cluster";

const t = shared();

export function job(
  name: string,
  spec: Record<string, unknown> = {},
  template: Record<string, unknown> = {},
) {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name },
    spec: {
      template: {
        spec: {
          restartPolicy: "Never",
          containers: [{ name: "work", image: "busybox", command: ["true"] }],
          ...template,
        },
      },
      ...spec,
    },
  };
}

export const jobPath = (ns: string, name = "") =>
  `/apis/batch/v1/namespaces/${ns}/jobs${name ? `/${name}` : ""}`;

export async function getJob(ns: string, name: string): Promise<any> {
  const r = await api(t, "GET", jobPath(ns, name));
  expect(r.status, r.text).toBe(200);
  return r.json;
}

/** The Job's pods, oldest first. */
export async function podsOf(ns: string, j: any): Promise<any[]> {
  const sel = encodeURIComponent(`batch.kubernetes.io/controller-uid=${j.metadata.uid}`);
  const r = await api(t, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=${sel}`);
  return (r.json.items as any[]).sort((a, b) =>
    a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp),
  );
}

export async function waitPods(ns: string, j: any, n: number, what = `${n} pods`): Promise<any[]> {
  return until(what, async () => {
    const pods = (await podsOf(ns, j)).filter(
      (p) => !p.metadata.deletionTimestamp && !["Succeeded", "Failed"].includes(p.status?.phase),
    );
    return pods.length === n ? pods : undefined;
  });
}

/** What a kubelet reports when the pod's container exits (with more of its status, if given). */
export async function finishPod(
  ns: string,
  pod: any,
  phase: "Succeeded" | "Failed",
  more: Record<string, unknown> = {},
): Promise<void> {
  const r = await api(
    t,
    "PATCH",
    `/api/v1/namespaces/${ns}/pods/${pod.metadata.name}/status`,
    { status: { phase, ...more } },
    { "content-type": "application/merge-patch+json" },
  );
  expect(r.status, r.text).toBe(200);
}

export async function waitJob(
  ns: string,
  name: string,
  what: string,
  pred: (j: any) => boolean,
): Promise<any> {
  let last: any;
  try {
    return await until(what, async () => {
      last = await getJob(ns, name);
      return pred(last) ? last : undefined;
    });
  } catch (e) {
    throw new Error(`${(e as Error).message}; last status: ${JSON.stringify(last?.status)}`);
  }
}

export const conditionOf = (j: any, type: string) =>
  (j.status?.conditions ?? []).find((c: any) => c.type === type);

/**
 * A pod status whose container "work" exited with `code`; `agoSeconds` says when (the kubelet's
 * finishedAt), or leaves the times unset.
 */
export function exited(code: number, agoSeconds?: number) {
  const at =
    agoSeconds === undefined
      ? null
      : new Date(Date.now() - agoSeconds * 1000).toISOString().replace(/\.\d+Z$/, "Z");
  return {
    containerStatuses: [
      {
        name: "work",
        image: "busybox",
        imageID: "",
        ready: false,
        restartCount: 0,
        state: { terminated: { exitCode: code, reason: "Error", startedAt: at, finishedAt: at } },
      },
    ],
  };
}
