// The KWOK-style simulator (agent/simulated) against the shared control plane: nodes join
// Ready, pods bound to them run and finish deleting, leases renew until stopped, and a
// couple of hundred nodes join from one process quickly.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Informer } from "../../agent/lib/informer";
import { ApiClient } from "../../agent/simulated/client";
import { type SimulatedNodes, startSimulatedNodes } from "../../agent/simulated/simnodes";
import { api, freshNamespace, hasKubectl, kubectl, shared } from "../helpers/cluster";

const t = shared();
// the scheduler must not place other suites' pods on these nodes
const TAINTS = [{ key: "edgeplane.dev/simulated", value: "true", effect: "NoSchedule" }];
const LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function renewTime(name: string): Promise<string> {
  const r = await api(t, "GET", `${LEASES}/${name}`);
  expect(r.status).toBe(200);
  return r.json.spec.renewTime;
}

async function cleanup(sim: SimulatedNodes | undefined): Promise<void> {
  if (!sim) return;
  await sim.stop();
  const names = [...sim.nodes];
  const work = async () => {
    for (let n = names.pop(); n; n = names.pop()) {
      await api(t, "DELETE", `/api/v1/nodes/${n}`);
      await api(t, "DELETE", `${LEASES}/${n}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, work));
}

describe("simulated nodes", () => {
  const prefix = `simt-${Math.random().toString(36).slice(2, 7)}-`;
  let sim: SimulatedNodes | undefined;

  beforeAll(async () => {
    sim = await startSimulatedNodes({
      server: t.url,
      token: t.token,
      count: 3,
      namePrefix: prefix,
      taints: TAINTS,
      leaseSeconds: 1,
    });
  });
  afterAll(() => cleanup(sim));

  it("registers Ready nodes with kubelet-like labels, status and leases", async () => {
    expect(sim!.nodes).toEqual([`${prefix}0`, `${prefix}1`, `${prefix}2`]);
    const zones: string[] = [];
    for (const name of sim!.nodes) {
      // the InternalIP comes from the pod CIDR the node IPAM controller allocates just after
      // registration, so a busy control plane may show the node a moment without it
      const node = await until(`${name} with an InternalIP`, async () => {
        const r = await api(t, "GET", `/api/v1/nodes/${name}`);
        expect(r.status).toBe(200);
        return r.json.status?.addresses?.some((a: any) => a.type === "InternalIP") ? r.json : undefined;
      });
      expect(node.metadata.labels).toMatchObject({
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
      });
      expect(node.metadata.labels["node.kubernetes.io/instance-type"]).toBeTruthy();
      expect(node.metadata.annotations).toMatchObject({
        "node.alpha.kubernetes.io/ttl": "0",
        "kwok.x-k8s.io/node": "fake",
      });
      zones.push(node.metadata.labels["topology.kubernetes.io/zone"]);
      const ready = node.status.conditions.find((c: any) => c.type === "Ready");
      expect(ready).toMatchObject({
        status: "True",
        reason: "KubeletReady",
        message: "kubelet is posting ready status",
      });
      for (const type of ["MemoryPressure", "DiskPressure", "PIDPressure"])
        expect(node.status.conditions.find((c: any) => c.type === type)?.status).toBe("False");
      expect(node.status.capacity).toMatchObject({ cpu: "32", memory: "256Gi", pods: "110" });
      expect(node.status.allocatable).toMatchObject({ cpu: "32", memory: "256Gi", pods: "110" });
      expect(node.status.addresses.find((a: any) => a.type === "InternalIP").address).toMatch(
        /^10\.\d+\.\d+\.\d+$/,
      );
      expect(node.status.nodeInfo).toMatchObject({
        kubeletVersion: "v1.32.0-edgeplane-sim",
        containerRuntimeVersion: "simulated://1.0",
        operatingSystem: "linux",
        architecture: "amd64",
      });
      const lease = await api(t, "GET", `${LEASES}/${name}`);
      expect(lease.status).toBe(200);
      expect(lease.json.spec).toMatchObject({ holderIdentity: name, leaseDurationSeconds: 40 });
      expect(lease.json.metadata.ownerReferences?.[0]).toMatchObject({
        kind: "Node",
        name,
        uid: node.metadata.uid,
      });
    }
    expect(zones).toEqual(["zone-a", "zone-b", "zone-c"]);
  });

  it.skipIf(!hasKubectl)("kubectl get nodes shows them Ready with roles, age and version", async () => {
    const r = await kubectl(t, ["get", "nodes"]);
    expect(r.code, r.stderr).toBe(0);
    const [header, ...rows] = String(r.stdout).trim().split("\n");
    expect(header.split(/\s+/)).toEqual(["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    for (const name of sim!.nodes) {
      const row = rows.map((l) => l.split(/\s+/)).find((cols) => cols[0] === name);
      expect(row, `${name} in\n${r.stdout}`).toBeDefined();
      expect(row![1]).toBe("Ready");
      expect(row![2]).toBe("<none>");
      expect(row![3]).toMatch(/^\d+(s|m)/);
      expect(row![4]).toBe("v1.32.0-edgeplane-sim");
    }
  });

  it("runs a pod bound to a simulated node, then finishes its deletion", async () => {
    const ns = await freshNamespace(t, "sim");
    const node = sim!.nodes[1];
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "web" },
      spec: {
        nodeName: node,
        initContainers: [{ name: "setup", image: "busybox:1", command: ["true"] }],
        containers: [
          { name: "app", image: "nginx:1" },
          { name: "side", image: "busybox:1", command: ["sleep", "3600"] },
        ],
      },
    };
    const created = await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod);
    expect(created.status, created.text).toBe(201);
    const uid = created.json.metadata.uid;
    const running = await until("pod Running", async () => {
      const r = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/web`);
      return r.json?.status?.phase === "Running" && r.json.status.podIP ? r.json : undefined;
    });
    const st = running.status;
    expect(st.podIP).toMatch(/^10\.\d+\.\d+\.\d+$/);
    expect(st.podIPs).toEqual([{ ip: st.podIP }]);
    expect(st.hostIP).toMatch(/^10\./);
    expect(st.startTime).toBeTruthy();
    expect(st.qosClass).toBe("BestEffort");
    for (const type of [
      "PodScheduled",
      "Initialized",
      "ContainersReady",
      "Ready",
      "PodReadyToStartContainers",
    ])
      expect(st.conditions.find((c: any) => c.type === type)?.status, type).toBe("True");
    expect(st.containerStatuses.map((c: any) => c.name).sort()).toEqual(["app", "side"]);
    for (const c of st.containerStatuses) {
      expect(c).toMatchObject({
        ready: true,
        started: true,
        restartCount: 0,
        containerID: `simulated://${uid}-${c.name}`,
      });
      expect(c.state.running.startedAt).toBeTruthy();
    }
    expect(st.initContainerStatuses[0].state.terminated).toMatchObject({ exitCode: 0, reason: "Completed" });
    if (hasKubectl) {
      const k = await kubectl(t, ["get", "pod", "web", "-n", ns, "-o", "wide"]);
      expect(k.stdout).toMatch(
        new RegExp(`web\\s+2/2\\s+Running\\s+0\\s+\\S+\\s+${st.podIP.replaceAll(".", "\\.")}\\s+${node}`),
      );
    }

    const started = Date.now();
    const del = await api(t, "DELETE", `/api/v1/namespaces/${ns}/pods/web`);
    expect(del.status).toBe(200);
    expect(del.json.metadata.deletionTimestamp).toBeTruthy(); // graceful: the node finishes it
    await until(
      "pod gone",
      async () => {
        const r = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/web`);
        return r.status === 404 ? true : undefined;
      },
      8000,
    );
    expect(Date.now() - started).toBeLessThan(8000);
    await api(t, "DELETE", `/api/v1/namespaces/${ns}`);
  });

  it("stopLeases kills a node (lease frozen, pods left waiting) and resumeLeases revives it", async () => {
    const [alive, , dead] = sim!.nodes;
    const before = await renewTime(dead);
    await until("lease renewed", async () => ((await renewTime(dead)) > before ? true : undefined), 5000);
    sim!.stopLeases(dead);
    await new Promise((r) => setTimeout(r, 1500)); // a renewal in flight may still land
    const frozen = await renewTime(dead);
    const aliveBefore = await renewTime(alive);
    await new Promise((r) => setTimeout(r, 3000));
    expect(await renewTime(dead)).toBe(frozen);
    expect((await renewTime(alive)) > aliveBefore).toBe(true);

    // a dead node runs nothing; once back, it renews again and starts what was bound to it
    const ns = await freshNamespace(t, "sim");
    const pod = {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "late" },
      spec: { nodeName: dead, containers: [{ name: "c", image: "x" }] },
    };
    expect((await api(t, "POST", `/api/v1/namespaces/${ns}/pods`, pod)).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1500));
    const waiting = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/late`);
    expect(waiting.json.status.phase).toBe("Pending");
    expect(waiting.json.status.podIP).toBeUndefined();
    sim!.resumeLeases(dead);
    await until("pod Running on the revived node", async () => {
      const r = await api(t, "GET", `/api/v1/namespaces/${ns}/pods/late`);
      return r.json?.status?.phase === "Running" ? true : undefined;
    });
    await until(
      "lease renewed after revival",
      async () => ((await renewTime(dead)) > frozen ? true : undefined),
      5000,
    );
    await api(t, "DELETE", `/api/v1/namespaces/${ns}`);
  });
});

describe("simulated nodes at scale", () => {
  const prefix = `simscale-${Math.random().toString(36).slice(2, 7)}-`;
  let sim: SimulatedNodes | undefined;
  afterAll(() => cleanup(sim), 120_000);

  it("joins 200 nodes from one process within ~20 s and keeps their leases renewed", async () => {
    const t0 = Date.now();
    sim = await startSimulatedNodes({
      server: t.url,
      token: t.token,
      count: 200,
      namePrefix: prefix,
      taints: TAINTS,
      leaseSeconds: 3,
    });
    const joinMs = Date.now() - t0;
    console.log(`simnodes: 200 nodes joined in ${joinMs} ms`);
    expect(joinMs).toBeLessThan(30_000);
    const mine = async () => {
      const r = await api(t, "GET", LEASES);
      expect(r.status).toBe(200);
      return new Map<string, string>(
        r.json.items
          .filter((l: any) => l.metadata.name.startsWith(prefix))
          .map((l: any) => [l.metadata.name, l.spec.renewTime]),
      );
    };
    const first = await mine();
    expect(first.size).toBe(200);
    const nodes = await api(t, "GET", "/api/v1/nodes");
    const ready = nodes.json.items.filter(
      (n: any) =>
        n.metadata.name.startsWith(prefix) &&
        n.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True"),
    );
    expect(ready.length).toBe(200);
    await new Promise((r) => setTimeout(r, 7000));
    const later = await mine();
    const stale = [...first].filter(([name, rt]) => !((later.get(name) ?? "") > rt)).map(([name]) => name);
    expect(stale).toEqual([]);
    const s = sim.stats();
    expect(s.fleet.renewFailures).toBe(0);
    console.log(`simnodes: ${JSON.stringify(s)}`);
  }, 90_000);
});

describe("the simulator's list-watch", () => {
  it("re-lists after a 410 ERROR event and resumes from the last resourceVersion after a disconnect", async () => {
    const pod = (name: string, rv: string) => ({ metadata: { name, uid: name, resourceVersion: rv } });
    const watches: string[] = [];
    let lists = 0;
    // a scripted apiserver: list, watch answers 410, list again, watch delivers one event and hangs up, watch idles
    const server = createServer((req, res) => {
      const q = new URL(req.url ?? "", "http://x").searchParams;
      res.setHeader("content-type", "application/json");
      if (!q.get("watch")) {
        lists++;
        const body =
          lists === 1
            ? { metadata: { resourceVersion: "5" }, items: [pod("a", "5")] }
            : { metadata: { resourceVersion: "7" }, items: [pod("b", "7")] };
        res.end(JSON.stringify(body));
        return;
      }
      watches.push(q.get("resourceVersion") ?? "");
      res.writeHead(200);
      if (watches.length === 1) {
        res.write(
          `${JSON.stringify({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired", message: "too old resource version: 5 (6)" } })}\n`,
        );
        return; // left open: the client must close it itself
      }
      if (watches.length === 2) {
        res.end(`${JSON.stringify({ type: "ADDED", object: pod("c", "8") })}\n`);
        return;
      }
      res.write(`${JSON.stringify({ type: "BOOKMARK", object: { metadata: { resourceVersion: "9" } } })}\n`);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const client = new ApiClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    const listed: string[][] = [];
    const events: string[] = [];
    const informer = new Informer(
      client,
      "/api/v1/pods",
      { fieldSelector: "spec.nodeName!=" },
      {
        onList: (items) => listed.push(items.map((i) => i.metadata.name)),
        onEvent: (type, obj) => events.push(`${type} ${obj.metadata.name}`),
      },
    );
    try {
      informer.start();
      await until("third watch", async () => (watches.length >= 3 ? true : undefined), 5000, 20);
      expect(listed).toEqual([["a"], ["b"]]);
      expect(events).toEqual(["ADDED c"]);
      expect(watches).toEqual(["5", "7", "8"]);
    } finally {
      await informer.stop();
      client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});

describe("agent/bin/simnodes.mjs", () => {
  it("joins the nodes it is asked for, and leaves them registered on SIGTERM", async () => {
    const prefix = `simcli-${Math.random().toString(36).slice(2, 7)}-`;
    const bin = new URL("../../agent/bin/simnodes.mjs", import.meta.url).pathname;
    const child = spawn(
      process.execPath,
      [bin, "--server", t.url, "--token", t.token, "--count", "2", "--prefix", prefix],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    try {
      await until("joined", async () => (out.includes("joined") ? true : undefined), 30_000);
      expect(out).toContain(`2 simulated node(s) joined ${t.url}`);
      for (const name of [`${prefix}0`, `${prefix}1`]) {
        const r = await api(t, "GET", `/api/v1/nodes/${name}`);
        expect(r.status).toBe(200);
        expect(r.json.status.conditions.find((c: any) => c.type === "Ready")?.status).toBe("True");
      }
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(out).toContain("SIGTERM: stopping");
      expect((await api(t, "GET", `/api/v1/nodes/${prefix}0`)).status).toBe(200);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      for (const name of [`${prefix}0`, `${prefix}1`]) {
        await api(t, "DELETE", `/api/v1/nodes/${name}`);
        await api(t, "DELETE", `${LEASES}/${name}`);
      }
    }
  });
});
