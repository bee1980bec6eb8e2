// A chaos run: a local control plane (`npm start`) under a steady workload (test/chaos/
// workload.ts), and faults at random moments, each a kill -9 of one of: workerd, the engine
// host, npm start, an edgelet (the real node's, or the simulated fleet's process), containerd
// (the real node's, a private one), or a node's tunnel (its connections cut). After each fault
// the run waits for recovery: npm start is started again by the run, as a supervisor would;
// workerd and the engine host come back by themselves (npm start's own supervision); an edgelet
// and containerd are started again by the run (as systemd would). At the end: no acknowledged
// write lost, no watch gap or duplicate, no ReplicaSet with extra pods, every Deployment
// converged, nothing left behind.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CriClient } from "../../agent/cri/client";
import { freePort } from "../../local-engine/devserver";
import {
  ControlPlane,
  kill9,
  leftovers,
  PrivateContainerd,
  processesWith,
  RealNode,
  removeLeftovers,
  removeNodeArtifacts,
  SimFleet,
  sleep,
  until,
} from "./processes";
import { call, type DeploymentSpec, PodChurn, Rollouts, Watches, Writes } from "./workload";

export type FaultKind = "workerd" | "engine-host" | "npm-start" | "edgelet" | "containerd" | "tunnel";
export const ALL_FAULTS: FaultKind[] = [
  "workerd",
  "engine-host",
  "npm-start",
  "edgelet",
  "containerd",
  "tunnel",
];

export interface ChaosOptions {
  faults: number;
  /** a fault every `minGapMs`..`maxGapMs` after the last recovery */
  minGapMs?: number;
  maxGapMs?: number;
  kinds?: FaultKind[];
  watches?: number;
  simNodes?: number;
  /** a real node (edgelet + private containerd); when false, edgelet faults hit the simulated fleet */
  realNode?: boolean;
  /** a whole run's bound: no new fault after it */
  deadlineMs?: number;
  log?: (line: string) => void;
}

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  recoveredMs: number;
  survived: boolean;
  error?: string;
}

export interface ChaosResult {
  faults: FaultRecord[];
  writes: { acked: number; unanswered: number; lost: string[] };
  watches: { count: number; reopened: number; violations: string[] };
  pods: { churned: number; duplicates: string[] };
  deployments: { count: number; rolled: number; scaled: number; unconverged: string[] };
  leftBehind: string[];
  /**
   * containerd's own leak, not edgeplane's: shims of sandboxes containerd lost when it was
   * killed in the middle of starting them (see PrivateContainerd.orphanShims); ended by the
   * run as containerd's supervisor, after the run, and counted here instead of in leftBehind
   */
  containerdOrphans: string[];
  seconds: number;
}

export async function runChaos(opts: ChaosOptions): Promise<ChaosResult> {
  const t0 = Date.now();
  const log = opts.log ?? (() => {});
  const minGap = opts.minGapMs ?? 3000;
  const maxGap = opts.maxGapMs ?? 8000;
  const realNode = opts.realNode ?? false;
  const kinds = (opts.kinds ?? ALL_FAULTS).filter((k) => realNode || (k !== "containerd" && k !== "tunnel"));
  const dir = mkdtempSync(join(tmpdir(), "edgeplane-chaos-"));
  const cp = new ControlPlane(join(dir, "state"), await freePort());
  const fleet = new SimFleet(cp, opts.simNodes ?? 3, `chaos-sim-${process.pid}-`);
  const ctd = realNode
    ? new PrivateContainerd(
        join(dir, "ctd"),
        `10.${200 + (process.pid % 50)}.${Math.floor(Math.random() * 256)}.0/24`,
      )
    : undefined;
  const node = ctd ? new RealNode(cp, ctd, `chaos-real-${process.pid}`, dir) : undefined;
  const result: ChaosResult = {
    faults: [],
    writes: { acked: 0, unanswered: 0, lost: [] },
    watches: { count: opts.watches ?? 100, reopened: 0, violations: [] },
    pods: { churned: 0, duplicates: [] },
    deployments: { count: 0, rolled: 0, scaled: 0, unconverged: [] },
    leftBehind: [],
    containerdOrphans: [],
    seconds: 0,
  };
  let writes: Writes | undefined;
  let watches: Watches | undefined;
  let churn: PodChurn | undefined;
  let rollouts: Rollouts | undefined;
  const api = () => ({ url: cp.url, token: cp.token });
  try {
    log(`control plane: npm start on ${cp.url}, state in ${cp.stateDir}`);
    await cp.start();
    fleet.start();
    if (ctd && node) {
      ctd.write();
      await ctd.start();
      await node.start();
    }
    const nodes = [...fleet.names(), ...(node ? [node.name] : [])];
    await until("every node Ready", async () => (await notReady(api(), nodes)).length === 0, 120_000, 500);
    log(`nodes Ready: ${nodes.join(", ")}`);

    const ns = "chaos";
    const made = await call(api(), "POST", "/api/v1/namespaces", {
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: ns },
    });
    if (made.status !== 201) throw new Error(`namespace: ${made.status}`);
    const listed = await call(api(), "GET", `/api/v1/namespaces/${ns}/configmaps`);
    const from = Number(listed.json.metadata.resourceVersion);
    const sims = { "node.kubernetes.io/instance-type": "edgeplane.sim-32x256" };
    const deployments: DeploymentSpec[] = [
      { name: "web", replicas: 3, nodeSelector: sims },
      { name: "api", replicas: 2, nodeSelector: sims },
      { name: "worker", replicas: 2, nodeSelector: sims },
      ...(node ? [{ name: "real", replicas: 2, nodeSelector: { "kubernetes.io/hostname": node.name } }] : []),
    ];
    writes = new Writes(api(), ns);
    watches = new Watches(api(), `/api/v1/namespaces/${ns}/configmaps`, from, result.watches.count);
    churn = new PodChurn(api(), ns, sims);
    rollouts = new Rollouts(api(), ns, deployments);
    result.deployments.count = deployments.length;
    await rollouts.create();
    watches.start();
    writes.start();
    churn.start();
    rollouts.start();
    log(
      `workload: ${deployments.length} deployments rolling, pods churning, ${result.watches.count} watches, writes`,
    );

    // every kind in turn, in a random order each round
    let round: FaultKind[] = [];
    for (let i = 0; i < opts.faults; i++) {
      if (opts.deadlineMs && Date.now() - t0 > opts.deadlineMs) {
        log(`deadline reached after ${i} faults`);
        break;
      }
      if (!round.length) round = [...kinds].sort(() => Math.random() - 0.5);
      const kind = round.pop()!;
      await sleep(minGap + Math.random() * (maxGap - minGap));
      const record = await inject(kind, { cp, fleet, ctd, node });
      result.faults.push(record);
      log(
        `fault ${i + 1}/${opts.faults}: kill -9 ${record.target}: ${record.survived ? `recovered in ${record.recoveredMs} ms` : `NOT recovered: ${record.error}`}`,
      );
    }

    log("faults done: stopping the workload, waiting for convergence");
    await Promise.all([writes.stop(), churn.stop(), rollouts.stop()]);
    await until(
      "the churned pods to go",
      async () =>
        (await call(api(), "DELETE", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dchurn`)).status ===
        200,
      60_000,
    ).catch(() => {});
    await until(
      "every Deployment to converge",
      async () => (await rollouts!.unconverged()).length === 0,
      180_000,
      1000,
    ).catch(() => {});
    result.deployments.unconverged = await rollouts.unconverged();
    if (result.deployments.unconverged.length) {
      // what the pods and the real node say, for the report
      const pods = (await call(api(), "GET", `/api/v1/namespaces/${ns}/pods`)).json?.items ?? [];
      for (const p of pods)
        log(
          `pod ${p.metadata.name} on ${p.spec.nodeName}: ${JSON.stringify(p.status?.containerStatuses ?? p.status?.conditions)}`,
        );
      if (node?.proc) log(`the real node's edgelet, last lines:\n${node.proc.out.text.slice(-6000)}`);
    }
    result.deployments.rolled = rollouts.rolled;
    result.deployments.scaled = rollouts.scaled;
    result.pods.duplicates = [
      ...(await rollouts.duplicates()),
      ...(ctd && node ? await sandboxDuplicates(ctd) : []),
    ];
    result.pods.churned = churn.created;
    await watches.caughtUp(writes.lastRv(), 60_000);
    result.watches.violations = watches.violations(writes);
    result.watches.reopened = watches.reopened();
    result.writes = { acked: writes.acked, unanswered: writes.unanswered, lost: await writes.lost() };

    // everything on the real node goes: no sandbox may be left in its containerd
    await call(api(), "DELETE", `/api/v1/namespaces/${ns}`);
    if (ctd) {
      const cri = new CriClient({ endpoint: `unix://${ctd.socket}` });
      try {
        await until(
          "the real node's sandboxes to go",
          async () => (await cri.listPodSandbox()).length === 0,
          120_000,
          1000,
        );
      } catch (e) {
        result.leftBehind.push(`sandboxes on the real node: ${(e as Error).message}`);
        for (const s of await cri.listPodSandbox().catch(() => [])) {
          await cri.stopPodSandbox(s.id).catch(() => {});
          await cri.removePodSandbox(s.id).catch(() => {});
        }
      } finally {
        cri.close();
      }
    }
  } finally {
    watches?.stop();
    await Promise.all([writes?.stop(), churn?.stop(), rollouts?.stop()]);
    await node?.stop();
    await fleet.stop();
    await cp.stop();
    // containerd's own orphans (its sandboxes all gone by now): what its supervisor ends
    if (ctd?.proc?.child.exitCode === null) {
      // (a shim of a sandbox just removed takes a moment to exit)
      await until(
        "shims of removed sandboxes to exit",
        async () => (await ctd.orphanShims()).length === 0,
        5000,
      ).catch(() => {});
      for (const o of await ctd.orphanShims().catch(() => [])) {
        result.containerdOrphans.push(`shim pid ${o.pid} of unknown sandbox ${o.id.slice(0, 12)}`);
        kill9(o.pid);
      }
    }
    await ctd?.stop();
    // what is left once each part was stopped the way it is meant to be
    await until(
      "the run's processes to end",
      () => processesWith(dir).length === 0 && processesWith(cp.stateDir).length === 0,
      20_000,
    ).catch(() => {});
    removeNodeArtifacts(ctd?.bridge, node?.cgroupRoot);
    result.leftBehind.push(...leftovers(dir, ctd?.bridge, node?.cgroupRoot));
    if (!(await portIsFree(cp.port))) result.leftBehind.push(`port ${cp.port} still listening`);
    removeLeftovers(dir, ctd?.bridge, node?.cgroupRoot);
    result.seconds = Math.round((Date.now() - t0) / 1000);
  }
  return result;
}

async function portIsFree(port: number) {
  const { portFree } = await import("./processes");
  return portFree(port);
}

/** Nodes not Ready. */
async function notReady(api: { url: string; token: string }, names: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const n of names) {
    const r = await call(api, "GET", `/api/v1/nodes/${n}`, undefined, 3000);
    const ready = r.json?.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True");
    if (!ready) out.push(n);
  }
  return out;
}

/** Nodes whose Lease was not renewed since `since` (ms since the epoch). */
async function staleLeases(
  api: { url: string; token: string },
  names: string[],
  since: number,
): Promise<string[]> {
  const out: string[] = [];
  for (const n of names) {
    const r = await call(
      api,
      "GET",
      `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${n}`,
      undefined,
      3000,
    );
    if (!(Date.parse(r.json?.spec?.renewTime ?? "") > since)) out.push(n);
  }
  return out;
}

/** Pods with more than one ready sandbox on the real node. */
async function sandboxDuplicates(ctd: PrivateContainerd): Promise<string[]> {
  const cri = new CriClient({ endpoint: `unix://${ctd.socket}` });
  try {
    const byPod = new Map<string, number>();
    for (const s of await cri.listPodSandbox())
      if (String(s.state) === "SANDBOX_READY" || (s.state as unknown) === 0) {
        const key = `${s.metadata?.namespace}/${s.metadata?.name}`;
        byPod.set(key, (byPod.get(key) ?? 0) + 1);
      }
    return [...byPod].filter(([, n]) => n > 1).map(([k, n]) => `${k}: ${n} ready sandboxes`);
  } finally {
    cri.close();
  }
}

interface Parts {
  cp: ControlPlane;
  fleet: SimFleet;
  ctd?: PrivateContainerd;
  node?: RealNode;
}

/** One fault and the recovery after it. */
async function inject(kind: FaultKind, { cp, fleet, ctd, node }: Parts): Promise<FaultRecord> {
  const before = cp.pids();
  let target: string = kind;
  const t0 = Date.now();
  try {
    switch (kind) {
      case "workerd":
      case "engine-host":
      case "npm-start": {
        const pid = kind === "workerd" ? before.workerd : kind === "engine-host" ? before.host : before.start;
        target = `${kind} (pid ${pid})`;
        if (!cp.kill(kind)) throw new Error(`no ${kind} to kill`);
        await cp.recover(kind, before);
        break;
      }
      case "edgelet": {
        const victim = node ?? fleet;
        target = `${node ? `edgelet ${node.name}` : "the simulated nodes' process"} (pid ${victim.proc?.child.pid})`;
        if (!victim.kill()) throw new Error("no edgelet to kill");
        await victim.recover();
        break;
      }
      case "containerd": {
        target = `containerd (pid ${ctd!.proc?.child.pid})`;
        if (!ctd!.kill()) throw new Error("no containerd to kill");
        await ctd!.recover();
        break;
      }
      case "tunnel": {
        target = `the tunnel of ${node!.name}`;
        node!.cutTunnel();
        break;
      }
    }
    // recovered: the API answers, every node is Ready, and each has renewed its Lease since
    // the fault (a node whose agent was killed stays Ready until its Lease runs out)
    await cp.ready(90_000);
    const nodes = [...fleet.names(), ...(node ? [node.name] : [])];
    const api = { url: cp.url, token: cp.token };
    await until("every node Ready", async () => (await notReady(api, nodes)).length === 0, 90_000, 500);
    await until(
      "every node's Lease renewed",
      async () => (await staleLeases(api, nodes, t0)).length === 0,
      90_000,
      500,
    );
    return { kind, target, recoveredMs: Date.now() - t0, survived: true };
  } catch (e) {
    return { kind, target, recoveredMs: Date.now() - t0, survived: false, error: (e as Error).message };
  }
}

export { kill9 };
