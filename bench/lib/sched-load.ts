// Shared pieces of the scheduling benchmarks: request bodies for small pods and
// Deployments, the server's URL and token, load average, and node readiness.
import { loadavg } from "node:os";
import type { ApiServer } from "./apiserver";
import { expectStatus, keepAliveAgent, oneShot, request, type Target } from "./http";

/** URL and bearer token for clients that take them (simulated nodes, edgelet). */
export function serverCreds(t: Target): { url: string; token: string } {
  const auth = t.headers?.authorization ?? "";
  return { url: `http://${t.host}:${t.port}`, token: auth.replace(/^Bearer /, "") };
}

export const load1 = (): number => loadavg()[0] as number;
export const loadText = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** A pod for the default scheduler with small requests (fits 1,000s per simulated node). */
export function smallPod(
  name: string,
  image = "127.0.0.1:5000/edgeplane/busybox:1",
  extra: any = {},
): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, labels: { app: "sched-bench" } },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: "main",
          image,
          command: ["sleep", "3600"],
          resources: { requests: { cpu: "10m", memory: "16Mi" } },
        },
      ],
      ...extra,
    },
  });
}

export function deploymentBody(name: string, replicas: number): string {
  const labels = { app: name };
  return JSON.stringify({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: "main",
              image: "127.0.0.1:5000/edgeplane/busybox:1",
              command: ["sleep", "3600"],
              resources: { requests: { cpu: "10m", memory: "16Mi" } },
            },
          ],
        },
      },
    },
  });
}

export async function ensureNamespace(t: Target, name: string): Promise<void> {
  const body = JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
  await expectStatus([201, 409], request(t, oneShot, "POST", "/api/v1/namespaces", body), "namespace");
}

/** Nodes whose Ready condition is True, by a full list. */
export async function readyNodes(t: Target, prefix: string): Promise<number> {
  const agent = keepAliveAgent(1);
  try {
    const r = await expectStatus(200, request(t, agent, "GET", "/api/v1/nodes"), "list nodes");
    const items = (JSON.parse(r.body) as { items: any[] }).items;
    return items.filter(
      (n) =>
        String(n.metadata?.name).startsWith(prefix) &&
        (n.status?.conditions ?? []).some((c: any) => c.type === "Ready" && c.status === "True"),
    ).length;
  } finally {
    agent.destroy();
  }
}

/** Names of the pods of one namespace that are bound (spec.nodeName set), by a full list. */
export async function boundByList(t: Target, ns: string): Promise<{ total: number; bound: number }> {
  const r = await expectStatus(200, request(t, oneShot, "GET", `/api/v1/namespaces/${ns}/pods`), "list pods");
  const items = (JSON.parse(r.body) as { items: any[] }).items;
  return { total: items.length, bound: items.filter((p) => p.spec?.nodeName).length };
}

/** CPU cores used by the server group over a window: CPU ms / wall ms. */
export function cores(cpuMs: number, wallMs: number): number {
  return wallMs > 0 ? cpuMs / wallMs : Number.NaN;
}

export type { ApiServer };
