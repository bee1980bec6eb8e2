// Pod start runs for the pod-startup benchmark: pods created through the API and timed
// from the create to Running (and to bound) as a pod watch sees them; and the clean-up
// between runs (delete, then wait for the pods and their sandboxes to go).
import type { CriClient } from "../../agent/cri/client";
import { expectStatus, keepAliveAgent, oneShot, request, type Target } from "./http";
import { smallPod } from "./sched-load";
import { type PodTracker, waitUntil } from "./sched-watch";
import { type Summary, summarize } from "./stats";

export interface StartRun {
  running: Summary;
  bound: Summary;
  failed: number;
  names: string[];
}

const NODE_LABEL = "edgeplane.io/node";

async function startOne(
  t: Target,
  agent: ReturnType<typeof keepAliveAgent>,
  tracker: PodTracker,
  ns: string,
  name: string,
  nodeName: string | undefined,
  timeoutMs: number,
): Promise<{ running?: number; bound?: number }> {
  const key = `${ns}/${name}`;
  const body = smallPod(name, undefined, nodeName ? { nodeName } : {});
  const start = performance.now();
  await expectStatus(201, request(t, agent, "POST", `/api/v1/namespaces/${ns}/pods`, body), "create pod");
  await waitUntil(() => tracker.pods.get(key)?.running !== undefined, timeoutMs, 2);
  const seen = tracker.pods.get(key);
  return {
    running: seen?.running !== undefined ? seen.running - start : undefined,
    bound: seen?.bound !== undefined ? seen.bound - start : undefined,
  };
}

/** n pods one after another (each waits for the last to be Running), or n at once. */
export async function podStarts(
  t: Target,
  tracker: PodTracker,
  ns: string,
  prefix: string,
  n: number,
  mode: "sequential" | "parallel",
  nodeName?: string,
  timeoutMs = 30_000,
): Promise<StartRun> {
  const agent = keepAliveAgent(mode === "parallel" ? n : 1);
  const names = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const results: { running?: number; bound?: number }[] = [];
  try {
    if (mode === "sequential")
      for (const name of names)
        results.push(await startOne(t, agent, tracker, ns, name, nodeName, timeoutMs));
    else
      results.push(
        ...(await Promise.all(
          names.map((name) => startOne(t, agent, tracker, ns, name, nodeName, timeoutMs)),
        )),
      );
  } finally {
    agent.destroy();
  }
  const running = results.map((r) => r.running).filter((x): x is number => x !== undefined);
  const bound = results.map((r) => r.bound).filter((x): x is number => x !== undefined);
  return { running: summarize(running), bound: summarize(bound), failed: n - running.length, names };
}

/** Deletes the pods and waits until the API has none left and the node no running sandbox. */
export async function deleteAndDrain(
  t: Target,
  cri: CriClient,
  ns: string,
  names: string[],
  nodeName: string,
  timeoutMs = 90_000,
): Promise<boolean> {
  const agent = keepAliveAgent(10);
  try {
    let next = 0;
    const worker = async () => {
      while (next < names.length) {
        const name = names[next++] as string;
        await expectStatus(
          [200, 202, 404],
          request(t, agent, "DELETE", `/api/v1/namespaces/${ns}/pods/${name}`),
          "delete pod",
        );
      }
    };
    await Promise.all(Array.from({ length: 10 }, worker));
  } finally {
    agent.destroy();
  }
  const end = performance.now() + timeoutMs;
  while (performance.now() < end) {
    const r = await request(t, oneShot, "GET", `/api/v1/namespaces/${ns}/pods`);
    const left = r.status === 200 ? (JSON.parse(r.body) as { items: unknown[] }).items.length : -1;
    const sandboxes = await cri
      .listPodSandbox({ label_selector: { [NODE_LABEL]: nodeName } })
      .catch(() => [{ state: "unknown" }]);
    const ready = sandboxes.filter(
      (s) => String(s.state) === "SANDBOX_READY" || String(s.state) === "0",
    ).length;
    if (left === 0 && ready === 0) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

/** Stops and removes every container and sandbox the node left in containerd. */
export async function removeNodeSandboxes(cri: CriClient, nodeName: string): Promise<number> {
  const selector = { [NODE_LABEL]: nodeName };
  for (const c of await cri.listContainers({ label_selector: selector }).catch(() => [])) {
    await cri.stopContainer(c.id, 0).catch(() => undefined);
    await cri.removeContainer(c.id).catch(() => undefined);
  }
  const sandboxes = await cri.listPodSandbox({ label_selector: selector }).catch(() => []);
  for (const s of sandboxes) {
    await cri.stopPodSandbox(s.id).catch(() => undefined);
    await cri.removePodSandbox(s.id).catch(() => undefined);
  }
  return sandboxes.length;
}
