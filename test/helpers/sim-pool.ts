// A pool of simulated nodes of a suite's own on the shared server: labelled so the suite's
// workloads can select them, and tainted so that other suites' pods are not placed there.
// Also the waits such suites share (a rollout, a workload's pods).
import { type SimulatedNodes, startSimulatedNodes } from "../../agent/simulated/simnodes";
import { api, kubectl, type Target, until } from "./cluster";

export interface SimPool {
  /** the node label and value the pool's nodes carry */
  label: string;
  value: string;
  nodes: string[];
  /** YAML lines for a pod template spec that selects the pool and tolerates its taint */
  placement: string;
  stop(): Promise<void>;
}

export async function startSimPool(
  t: Target,
  name: string,
  count: number,
  podStartDelayMs: number,
): Promise<SimPool> {
  const value = `p${Math.random().toString(36).slice(2, 7)}`;
  const label = `edgeplane.dev/${name}-pool`;
  const taint = { key: `edgeplane.dev/${name}-test`, value: "true", effect: "NoSchedule" };
  const sim: SimulatedNodes = await startSimulatedNodes({
    server: t.url,
    token: t.token,
    count,
    namePrefix: `${name}-${value}-`,
    labels: { [label]: value },
    taints: [taint],
    podStartDelayMs,
  });
  return {
    label,
    value,
    nodes: sim.nodes,
    placement: `nodeSelector: {"${label}": ${value}}
      tolerations: [{key: ${taint.key}, operator: Exists, effect: NoSchedule}]`,
    async stop() {
      await sim.stop();
      for (const n of sim.nodes) await api(t, "DELETE", `/api/v1/nodes/${n}`);
    },
  };
}

export const isReady = (p: any): boolean =>
  p.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True") ?? false;

/** The pods labelled app=<app>, by name. */
export async function appPods(t: Target, ns: string, app: string): Promise<any[]> {
  const r = await api(
    t,
    "GET",
    `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(`app=${app}`)}`,
  );
  return (r.json.items as any[]).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** Waits for `kubectl rollout status <what>` to succeed; returns what it printed. */
export function rolledOut(t: Target, ns: string, what: string): Promise<string> {
  return until(
    `${what} rolled out`,
    async () => {
      const r = await kubectl(t, ["rollout", "status", what, "-n", ns, "--timeout=10s"]);
      return r.code === 0 && r.stdout;
    },
    40_000,
  );
}
