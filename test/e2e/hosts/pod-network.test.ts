// The pod network across real hosts (issue 28): three hosts, each a network namespace with its
// own containerd and edgelet (local-engine/hosts), over two L2 subnets: host-1 and host-3 share
// one (host-gw between them), host-2 is on the other (VXLAN to it). One set of hosts serves the
// whole file; the last test stops them and checks that nothing of theirs is left.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hierarchies } from "../../../agent/edgelet/cgroups";
import { type SimulatedNodes, startSimulatedNodes } from "../../../agent/simulated/simnodes";
import { contains, overlaps, parseCIDR } from "../../../api/network";
import { type Hosts, hostsUnavailable, startHosts } from "../../../local-engine/hosts/hosts";
import { readLedger } from "../../../local-engine/hosts/ledger";
import { api, freshNamespace, kubectl, until } from "../../helpers/cluster";
import { type OwnServer, removeStateDir, startOwnServer } from "../../helpers/own-server";

const why = hostsUnavailable();
if (why) console.warn(`\n*** SKIPPED: pod network across hosts: ${why} ***\n`);

const BUSYBOX = "127.0.0.1:5000/edgeplane/busybox:1";
/** busybox httpd whose /cgi-bin/ip answers the address the request came from */
const HTTPD = [
  "sh",
  "-c",
  "mkdir -p /w/cgi-bin && printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho $REMOTE_ADDR\\n' > /w/cgi-bin/ip && chmod +x /w/cgi-bin/ip && echo ok > /w/index.html && head -c 300000 /dev/zero > /w/big && exec httpd -f -p 8080 -h /w",
];

/** The machine's own network state: what a run must leave as it found it. */
function machineState() {
  const run = (cmd: string, args: string[]) =>
    execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  return {
    netns: run("ip", ["netns", "list"]),
    links: run("ip", ["-o", "link", "show"]),
    routes: run("ip", ["route", "show", "table", "all"]),
    rules: run("ip", ["rule", "show"]),
    nft: run("nft", ["list", "tables"]),
    mounts: readFileSync("/proc/self/mountinfo", "utf8"),
  };
}

/** A pod's IPv4 as httpd prints it ([::ffff:a.b.c.d] on a dual-stack socket). */
const v4 = (s: string) => /(\d+\.\d+\.\d+\.\d+)/.exec(s)?.[1] ?? s.trim();

describe.skipIf(!!why)("pod network across hosts", () => {
  let server: OwnServer;
  let hosts: Hosts;
  let ns: string;
  const before = why ? undefined : machineState();

  beforeAll(async () => {
    server = await startOwnServer();
    hosts = await startHosts({ count: 3, subnets: 2, server: { url: server.url, token: server.token } });
    ns = await freshNamespace(server, "podnet");
  }, 150_000);

  afterAll(async () => {
    await hosts?.stop();
    await server?.stop();
    removeStateDir(server?.stateDir);
  }, 60_000);

  const host = (name: string) => hosts.hosts.find((h) => h.name === name)!;
  const node = async (name: string) => (await api(server, "GET", `/api/v1/nodes/${name}`)).json;
  const exec = async (pod: string, cmd: string) => {
    const r = await kubectl(server, ["exec", "-n", ns, pod, "--", "sh", "-c", cmd]);
    return { ...r, stdout: r.stdout.trim() };
  };
  const running = (name: string) =>
    until(
      `pod ${name} Running`,
      async () => {
        const p = (await api(server, "GET", `/api/v1/namespaces/${ns}/pods/${name}`)).json;
        return p?.status?.phase === "Running" && p.status.podIP ? p : undefined;
      },
      60_000,
      200,
    );
  const makePod = async (name: string, nodeName: string, spec: Record<string, unknown> = {}) => {
    const r = await api(server, "POST", `/api/v1/namespaces/${ns}/pods`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, labels: { app: name } },
      spec: {
        nodeName,
        terminationGracePeriodSeconds: 0,
        containers: [{ name: "c", image: BUSYBOX, command: ["sleep", "3600"] }],
        ...spec,
      },
    });
    expect(r.status, r.text).toBe(201);
    return running(name);
  };

  it("gives every node its own podCIDR and routes to the others: host-gw on its subnet, VXLAN across", async () => {
    // what the agents read when they join
    const cm = await api(server, "GET", "/api/v1/namespaces/kube-system/configmaps/edgeplane-network");
    expect(cm.json.data).toMatchObject({
      clusterCIDR: "10.244.0.0/16",
      nodeCIDRMaskSize: "24",
      serviceCIDR: "10.96.0.0/12",
      backend: "auto",
      vxlanVNI: "1",
      vxlanPort: "4789",
    });
    const nodes = await Promise.all(hosts.nodes.map(node));
    const cidrs = nodes.map((n) => n.spec.podCIDR);
    expect(new Set(cidrs).size).toBe(3);
    for (const c of cidrs) expect(contains(parseCIDR("10.244.0.0/16")!, parseCIDR(c)!.base)).toBe(true);
    const [h1, h2, h3] = ["host-1", "host-2", "host-3"].map(host);
    const cidrOf = (name: string) => nodes.find((n) => n.metadata.name === name).spec.podCIDR;
    // host-1 and host-3 share a subnet: a plain route via the peer; host-2 is behind the router: VXLAN
    const routes = await until("host-1's routes to both peers", async () => {
      const out = (await h1!.exec(["ip", "route", "show", "proto", "77"])).stdout;
      return out.includes(cidrOf("host-2")) && out.includes(cidrOf("host-3")) ? out : undefined;
    });
    expect(routes).toContain(`${cidrOf("host-3")} via ${h3!.ip} dev eth0`);
    expect(routes).toMatch(
      new RegExp(`${cidrOf("host-2").replace(/\./g, "\\.")} via \\S+ dev edgeplane\\.1 .*onlink`),
    );
    const vx = (await h1!.exec(["ip", "-d", "link", "show", "edgeplane.1"])).stdout;
    expect(vx).toContain("mtu 1450");
    expect(vx).toMatch(/vxlan id 1 local \S+ dev eth0 .*dstport 4789/);
    const mac = (await node("host-2")).metadata.annotations["network.edgeplane.dev/vtep-mac"];
    expect((await h1!.exec(["bridge", "fdb", "show", "dev", "edgeplane.1"])).stdout).toContain(
      `${mac} dst ${h2!.ip}`,
    );
    expect((await h1!.exec(["ip", "neigh", "show", "dev", "edgeplane.1"])).stdout).toContain(mac);
    // the pods' MTU leaves room for VXLAN's 50 bytes
    expect(
      JSON.parse(readFileSync(`${h1!.dir}/net.d/10-edgeplane.conflist`, "utf8")).plugins[0],
    ).toMatchObject({
      ipMasq: false,
      mtu: 1450,
    });
  });

  it("a Deployment spread over two hosts answers a client on another host, which it sees by its pod IP", async () => {
    const deploy = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ${ns}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 0
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [host-1, host-2]}]}]
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname}
      containers:
      - name: httpd
        image: ${BUSYBOX}
        command: ${JSON.stringify(HTTPD)}
        readinessProbe: {httpGet: {path: /index.html, port: 8080}, periodSeconds: 1}
`;
    const applied = await kubectl(server, ["apply", "-f", "-"], { input: deploy });
    expect(applied.code, applied.stderr).toBe(0);
    const done = await kubectl(server, ["rollout", "status", "deployment/web", "-n", ns, "--timeout=90s"]);
    expect(done.code, done.stderr).toBe(0);
    const pods = (await api(server, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dweb`)).json
      .items;
    expect(pods.map((p: any) => p.spec.nodeName).sort()).toEqual(["host-1", "host-2"]);
    const remote = pods.find((p: any) => p.spec.nodeName === "host-2");
    const local = pods.find((p: any) => p.spec.nodeName === "host-1");

    // clients on host-1 (host-2 is across subnets: VXLAN) and host-3 (host-gw to host-1)
    const client = await makePod("client", "host-1");
    const r = await exec("client", `wget -q -O - http://${remote.status.podIP}:8080/cgi-bin/ip`);
    expect(r.code, r.stderr).toBe(0);
    expect(v4(r.stdout)).toBe(client.status.podIP);
    expect(v4(r.stdout)).not.toBe(host("host-1").ip);
    const near = await exec("client", `wget -q -O - http://${local.status.podIP}:8080/cgi-bin/ip`);
    expect(v4(near.stdout)).toBe(client.status.podIP);

    const other = await makePod("client3", "host-3");
    const gw = await exec("client3", `wget -q -O - http://${local.status.podIP}:8080/cgi-bin/ip`);
    expect(gw.code, gw.stderr).toBe(0);
    expect(v4(gw.stdout)).toBe(other.status.podIP);
    // full-size packets cross VXLAN: the pods' MTU leaves room for its header
    const big = await exec("client", `wget -q -O - http://${remote.status.podIP}:8080/big | wc -c`);
    expect(big.stdout).toBe("300000");
    const mtu = await exec("client", "cat /sys/class/net/eth0/mtu");
    expect(mtu.stdout).toBe("1450");
  });

  it("masquerades pod traffic leaving the cluster CIDR: the machine sees the node, and answers", async () => {
    let seen = "";
    const srv: Server = createServer((req, res) => {
      seen = req.socket.remoteAddress ?? "";
      res.end("hello from the machine\n");
    });
    await new Promise<void>((r) => srv.listen(0, hosts.lan.machineIP, () => r()));
    try {
      const port = (srv.address() as AddressInfo).port;
      await running("client");
      const r = await exec("client", `wget -q -O - http://${hosts.lan.machineIP}:${port}/`);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe("hello from the machine");
      // the node's address: the machine has no route back to the pods
      expect(seen.replace("::ffff:", "")).toBe(host("host-1").ip);
    } finally {
      srv.close();
    }
    const table = (await host("host-1").exec(["nft", "list", "table", "ip", "edgeplane-podnet"])).stdout;
    expect(table).toMatch(/ip saddr 10\.244\.0\.0\/16 ip daddr 10\.244\.0\.0\/16 return/);
    expect(table).toMatch(/masquerade/);
  });

  it("serves a hostPort on the node's address (portmap), from the machine and from a pod on another host", async () => {
    await makePod("hp", "host-2", {
      containers: [
        {
          name: "httpd",
          image: BUSYBOX,
          command: HTTPD,
          ports: [{ containerPort: 8080, hostPort: 18080, protocol: "TCP" }],
        },
      ],
    });
    const ip = host("host-2").ip;
    const fromMachine = await until("the hostPort from the machine", async () => {
      const r = await fetch(`http://${ip}:18080/index.html`, { signal: AbortSignal.timeout(2000) });
      return r.ok ? await r.text() : undefined;
    });
    expect(fromMachine.trim()).toBe("ok");
    const fromPod = await exec("client3", `wget -q -O - http://${ip}:18080/index.html`);
    expect(fromPod.code, fromPod.stderr).toBe(0);
    expect(fromPod.stdout).toBe("ok");
  });

  it("follows nodes as they come and go: a peer's routes appear, and go with its Node", async () => {
    const [subnet0, subnet1] = hosts.lan.subnets.map((c) => parseCIDR(c)!);
    const addr = (n: { base: number }, i: number) => {
      const v = n.base + i;
      return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join(".");
    };
    const ghost = (name: string, annotations: Record<string, string>) =>
      api(server, "POST", "/api/v1/nodes", {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name, annotations },
      });
    // a host-gw peer on host-1's subnet, a VXLAN peer across, and a node that publishes nothing
    expect(
      (
        await ghost("ghost-gw", {
          "network.edgeplane.dev/backend": "host-gw",
          "network.edgeplane.dev/public-ip": addr(subnet0!, 29),
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await ghost("ghost-vx", {
          "network.edgeplane.dev/backend": "vxlan",
          "network.edgeplane.dev/public-ip": addr(subnet1!, 29),
          "network.edgeplane.dev/vtep-mac": "0a:58:0a:f4:63:01",
        })
      ).status,
    ).toBe(201);
    expect((await ghost("ghost-none", {})).status).toBe(201);
    const cidr = (name: string) =>
      until(`${name}'s podCIDR`, async () => (await node(name))?.spec?.podCIDR as string | undefined);
    const [gw, vx, none] = [await cidr("ghost-gw"), await cidr("ghost-vx"), await cidr("ghost-none")];
    const h1 = host("host-1");
    const state = async () =>
      [
        (await h1.exec(["ip", "route", "show", "proto", "77"])).stdout,
        (await h1.exec(["ip", "neigh", "show", "dev", "edgeplane.1"])).stdout,
        (await h1.exec(["bridge", "fdb", "show", "dev", "edgeplane.1"])).stdout,
      ].join("\n");
    const with3 = await until("routes to the ghosts", async () => {
      const s = await state();
      return s.includes(gw) && s.includes(vx) ? s : undefined;
    });
    expect(with3).toContain(`${gw} via ${addr(subnet0!, 29)} dev eth0`);
    expect(with3).toMatch(new RegExp(`${vx.replace(/\./g, "\\.")} via \\S+ dev edgeplane\\.1`));
    expect(with3).toContain(`0a:58:0a:f4:63:01 dst ${addr(subnet1!, 29)}`);
    expect(with3).not.toContain(none);
    for (const n of ["ghost-gw", "ghost-vx", "ghost-none"]) await api(server, "DELETE", `/api/v1/nodes/${n}`);
    const after = await until("the ghosts' routes gone", async () => {
      const s = await state();
      return !s.includes(gw) && !s.includes(vx) && !s.includes("0a:58:0a:f4:63:01") ? s : undefined;
    });
    // the real peers stay routed
    expect(after).toContain((await node("host-3")).spec.podCIDR);
  });

  it("never gives two pods one IP nor two nodes one podCIDR, with simulated and real nodes together", async () => {
    // two simulators, as npm start's simulated local node and EDGEPLANE_NODES are: each numbers
    // its nodes from 0, and once gave both its node 0 one podCIDR, one InternalIP and pod IPs
    const sims: SimulatedNodes[] = [];
    try {
      for (const prefix of ["sim-a-", "sim-b-"])
        sims.push(
          await startSimulatedNodes({
            server: server.url,
            token: server.token,
            count: 2,
            namePrefix: prefix,
          }),
        );
      const replicas = 14;
      const deploy = `apiVersion: apps/v1
kind: Deployment
metadata: {name: many, namespace: ${ns}}
spec:
  replicas: ${replicas}
  selector: {matchLabels: {app: many}}
  template:
    metadata: {labels: {app: many}}
    spec:
      terminationGracePeriodSeconds: 0
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: many}}}
      containers: [{name: c, image: ${BUSYBOX}, command: [sleep, "3600"], resources: {requests: {cpu: 1m}}}]
`;
      const applied = await kubectl(server, ["apply", "-f", "-"], { input: deploy });
      expect(applied.code, applied.stderr).toBe(0);
      const pods = await until(
        "every pod Running with an IP",
        async () => {
          const items = (await api(server, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=app%3Dmany`))
            .json.items as any[];
          return items.length === replicas &&
            items.every((p) => p.status?.phase === "Running" && p.status.podIP)
            ? items
            : undefined;
        },
        90_000,
        500,
      );
      const all = (await api(server, "GET", "/api/v1/pods")).json.items.filter(
        (p: any) => p.status?.podIP && !p.spec.hostNetwork && p.status.phase === "Running",
      );
      const nodes = (await api(server, "GET", "/api/v1/nodes")).json.items as any[];
      const byName = new Map(nodes.map((n) => [n.metadata.name, n]));
      // both kinds of node ran some
      const kinds = new Set(pods.map((p) => (p.spec.nodeName.startsWith("sim-") ? "sim" : "real")));
      expect([...kinds].sort()).toEqual(["real", "sim"]);
      const ips = all.map((p: any) => p.status.podIP);
      expect(new Set(ips).size, JSON.stringify(ips)).toBe(ips.length);
      for (const p of all) {
        const cidr = parseCIDR(byName.get(p.spec.nodeName).spec.podCIDR)!;
        expect(
          contains(cidr, p.status.podIP),
          `${p.metadata.name} ${p.status.podIP} on ${p.spec.nodeName}`,
        ).toBe(true);
      }
      const cidrs = nodes.map((n) => parseCIDR(n.spec.podCIDR)!);
      for (let i = 0; i < cidrs.length; i++)
        for (let j = i + 1; j < cidrs.length; j++) expect(overlaps(cidrs[i]!, cidrs[j]!)).toBe(false);
      const addrs = nodes.map((n) => n.status.addresses.find((a: any) => a.type === "InternalIP")?.address);
      expect(addrs.every(Boolean)).toBe(true);
      expect(new Set(addrs).size).toBe(addrs.length);
      // and the store refuses a Node that would share one
      const clash = await api(server, "POST", "/api/v1/nodes", {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: "clash" },
        spec: { podCIDR: nodes[0].spec.podCIDR },
      });
      expect(clash.status).toBe(422);
      expect(clash.json.message).toContain("overlaps the podCIDR of another node");
    } finally {
      await kubectl(server, ["delete", "deployment", "many", "-n", ns, "--wait=false"]);
      for (const sim of sims) await sim.stop();
    }
  }, 150_000);

  it("leaves nothing behind when its launcher dies (SIGKILL): the guard undoes the run", async () => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        fileURLToPath(new URL("./launcher.ts", import.meta.url)),
        server.url,
        server.token,
        "orphan-",
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    try {
      const info = await until(
        "the launcher's hosts",
        async () => (out.includes("\n") ? JSON.parse(out) : undefined),
        90_000,
        200,
      ).catch((e) => {
        throw new Error(`${(e as Error).message}\n${err}`);
      });
      const made = readLedger(info.ledger);
      const pids = (made.filter((m) => m.kind === "process") as { pid: number }[]).map((p) => p.pid);
      expect(pids.length).toBe(3);
      expect(execFileSync("ip", ["netns", "list"], { encoding: "utf8" })).toContain(info.netns);
      child.kill("SIGKILL");
      await until(
        "the dead launcher's run undone",
        async () =>
          !execFileSync("ip", ["netns", "list"], { encoding: "utf8" }).includes(info.runId) &&
          !execFileSync("ip", ["-o", "link", "show"], { encoding: "utf8" }).includes(`eph${info.runId}`) &&
          pids.every((p) => !existsSync(`/proc/${p}`)) &&
          !existsSync(info.ledger),
        30_000,
        200,
      );
    } finally {
      child.kill("SIGKILL");
      await api(server, "DELETE", "/api/v1/nodes/orphan-1");
    }
  }, 120_000);

  it("stops leaving no namespace, link, route, rule, nft table, mount, process or directory of its making", async () => {
    const made = readLedger(hosts.ledgerFile);
    const procs = made.filter((m) => m.kind === "process") as { pid: number }[];
    const dirs = made.filter((m) => m.kind === "dir") as { path: string }[];
    expect(procs.length).toBe(9); // a containerd, a relay and an edgelet per host
    const tag = `eph${hosts.runId}`;
    const lanPrefix = hosts.lan.cidr.split(".").slice(0, 3).join(".");
    await hosts.stop();
    const after = machineState();
    for (const p of procs) expect(existsSync(`/proc/${p.pid}`), `process ${p.pid}`).toBe(false);
    for (const d of dirs) expect(existsSync(d.path), d.path).toBe(false);
    expect(after.netns).not.toContain(tag);
    expect(after.links).not.toContain(tag);
    expect(after.routes).not.toContain(`${lanPrefix}.`);
    expect(after.mounts).not.toContain(hosts.runId);
    // whatever else changed on the machine meanwhile is another program's
    const added = (k: keyof ReturnType<typeof machineState>) =>
      after[k].split("\n").filter((l) => l && !before![k].includes(l));
    for (const k of ["netns", "links", "routes", "rules", "nft"] as const)
      for (const line of added(k))
        expect(line).not.toMatch(
          new RegExp(`${tag}|${lanPrefix.replace(/\./g, "\\.")}\\.|edgeplane-podnet|edgeplane\\.1`),
        );
    for (const h of hierarchies()) expect(existsSync(`${h}/edgeplane-hosts/${hosts.runId}`), h).toBe(false);
  });
});
