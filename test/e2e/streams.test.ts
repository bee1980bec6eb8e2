// kubectl logs / exec / attach / port-forward end to end: real kubectl -> the apiserver Worker ->
// the node's NodeTunnel Durable Object -> the agent tunnel (in this process, dialled out with
// a node token) -> real containerd. The container is made directly through CRI and the pod
// object bound to a node no edgelet runs, so only the streaming path is under test.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmdirSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig, PortForward } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { CriClient } from "../../agent/cri/client";
import type { ContainerConfig, PodSandboxConfig } from "../../agent/cri/types";
import { startTunnel, type Tunnel } from "../../agent/tunnel/tunnel";
import { startDevServer } from "../../local-engine/devserver";
import { api, hasKubectl, KUBECTL, kubectl, type Target } from "../helpers/cluster";

const SOCKET = "/run/edgeplane/containerd.sock";
const BUSYBOX = "127.0.0.1:5000/edgeplane/busybox:1";
const available = existsSync(SOCKET) && hasKubectl;
if (!existsSync(SOCKET))
  console.warn("\n*** SKIPPED: containerd not running (run npm run setup:containerd) ***\n");

const NODE = `tunnel-e2e-${randomBytes(3).toString("hex")}`;
const NODE_TOKEN = randomBytes(18).toString("base64url");
const NS = "default";
const GET_ONLY_TOKEN = randomBytes(18).toString("base64url");
const CREATE_ONLY_TOKEN = randomBytes(18).toString("base64url");
const POD = "web";

const SCRIPT = [
  "mkdir -p /tmp/www && echo hello-from-pod > /tmp/www/index.html",
  "echo started",
  "echo oops >&2",
  "httpd -p 8080 -h /tmp/www",
  "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.3; done",
].join("; ");

/** Removes the empty per-pod cgroup directories runc left under every hierarchy. */
function removeCgroups(relative: string): void {
  let roots: string[] = [];
  try {
    roots = readdirSync("/sys/fs/cgroup").map((d) => join("/sys/fs/cgroup", d));
  } catch {
    return;
  }
  for (const root of ["/sys/fs/cgroup", ...roots]) {
    try {
      rmdirSync(join(root, relative));
    } catch {
      // absent or not empty
    }
  }
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}

/** Runs kubectl in the background, collecting output until `until` matches or it exits. */
function background(t: Target, args: string[], until: RegExp, ms = 20_000) {
  const p: ChildProcess = spawn(KUBECTL, ["--kubeconfig", t.kubeconfigPath, ...args]);
  let out = "";
  let err = "";
  p.stdout?.on("data", (d) => (out += d));
  p.stderr?.on("data", (d) => (err += d));
  const matched = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout; stdout=${out} stderr=${err}`)), ms);
    const check = () => {
      if (until.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    };
    p.stdout?.on("data", check);
    p.on("exit", (code) => {
      clearTimeout(timer);
      if (until.test(out)) resolve(out);
      else reject(new Error(`kubectl exited ${code}; stdout=${out} stderr=${err}`));
    });
  });
  return { p, matched, output: () => out };
}

describe.skipIf(!available)("kubectl logs/exec/port-forward through the node tunnel", () => {
  const cri = new CriClient({ endpoint: `unix://${SOCKET}`, timeoutMs: 30_000 });
  const stateDir = mkdtempSync(join(tmpdir(), "edgeplane-streams-"));
  const logDir = mkdtempSync(join(tmpdir(), "edgeplane-streams-logs-"));
  const uid = randomUUID();
  let server: Target & { url: string; stop(): Promise<void> };
  let tunnel: Tunnel | undefined;
  let sandboxId = "";
  let containerId = "";

  beforeAll(async () => {
    server = await startDevServer({
      stateDir,
      quiet: true,
      tokens: [
        `${NODE_TOKEN},system:node:${NODE},${NODE},system:nodes`,
        `${GET_ONLY_TOKEN},exec-getter,exec-getter`,
        `${CREATE_ONLY_TOKEN},exec-creator,exec-creator`,
      ],
    });
    await cri.waitReady(15_000);
    await cri.pullImage(BUSYBOX);
    const sandbox: PodSandboxConfig = {
      metadata: { name: POD, uid, namespace: NS, attempt: 0 },
      hostname: "web-host",
      log_directory: logDir,
      labels: { "edgeplane.io/e2e": "streams" },
      linux: {
        cgroup_parent: `/edgeplane-e2e/pod${uid}`,
        security_context: {
          namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" },
          seccomp: { profile_type: "RuntimeDefault" },
        },
      },
    };
    const container: ContainerConfig = {
      metadata: { name: "web", attempt: 0 },
      image: { image: BUSYBOX },
      command: ["sh", "-c", SCRIPT],
      log_path: "web/0.log",
      labels: { "edgeplane.io/e2e": "streams" },
      linux: {
        security_context: {
          namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" },
          seccomp: { profile_type: "RuntimeDefault" },
        },
      },
    };
    sandboxId = await cri.runPodSandbox(sandbox);
    containerId = await cri.createContainer(sandboxId, container, sandbox);
    await cri.startContainer(containerId);
    const podIP = (await cri.podSandboxStatus(sandboxId)).status?.network?.ip ?? "";

    const node = await api(server, "POST", "/api/v1/nodes", {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: NODE },
    });
    expect(node.status).toBe(201);
    for (const [name, nodeName] of [
      [POD, NODE],
      ["unbound", undefined],
    ] as const) {
      const r = await api(server, "POST", `/api/v1/namespaces/${NS}/pods`, {
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name },
        spec: { nodeName, containers: [{ name: "web", image: BUSYBOX }] },
      });
      expect(r.status, r.text).toBe(201);
    }
    const st = await api(
      server,
      "PATCH",
      `/api/v1/namespaces/${NS}/pods/${POD}/status`,
      { status: { phase: "Running", podIP, podIPs: [{ ip: podIP }] } },
      { "content-type": "application/merge-patch+json" },
    );
    expect(st.status, st.text).toBe(200);

    tunnel = startTunnel({
      server: server.url,
      token: NODE_TOKEN,
      nodeName: NODE,
      cri,
      log: () => {},
      lookup: {
        locate: async (ns, pod, c, previous) => {
          if (ns !== NS || pod !== POD || c !== "web" || previous) return undefined;
          const s = (await cri.containerStatus(containerId)).status;
          return { containerId, logPath: s?.log_path ?? "", running: s?.state === "CONTAINER_RUNNING" };
        },
        locateSandbox: (ns, pod) => (ns === NS && pod === POD ? { sandboxId, podIP } : undefined),
      },
    });
    await tunnel.connected();
    // the container has written its first lines
    await sleep(500);
  }, 120_000);

  afterAll(async () => {
    await tunnel?.stop();
    if (containerId) {
      await cri.stopContainer(containerId, 0).catch(() => undefined);
      await cri.removeContainer(containerId).catch(() => undefined);
    }
    if (sandboxId) {
      await cri.stopPodSandbox(sandboxId).catch(() => undefined);
      await cri.removePodSandbox(sandboxId).catch(() => undefined);
    }
    cri.close();
    removeCgroups(`edgeplane-e2e/pod${uid}`);
    await server?.stop();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(logDir, { recursive: true, force: true });
  }, 60_000);

  it("kubectl logs prints stdout and stderr in order", async () => {
    const r = await kubectl(server, ["logs", POD]);
    expect(r.stderr).toBe("");
    // stdout and stderr are separate pipes: their relative order is not guaranteed
    expect(r.stdout).toContain("oops\n");
    expect(r.stdout.replace("oops\n", "").startsWith("started\ntick 1\ntick 2\n")).toBe(true);
  });

  it("honours --tail and --timestamps", async () => {
    const tail = await kubectl(server, ["logs", POD, "--tail=2"]);
    const lines = tail.stdout.split("\n").filter(Boolean);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^tick \d+$/);
    const ts = await kubectl(server, ["logs", POD, "--timestamps", "--tail=1"]);
    expect(ts.stdout).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z tick \d+\n$/);
  });

  it("streams a followed log over plain HTTP as it is written", async () => {
    const ac = new AbortController();
    const res = await fetch(`${server.url}/api/v1/namespaces/${NS}/pods/${POD}/log?follow=true&tailLines=1`, {
      headers: { authorization: `Bearer ${server.token}` },
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let text = "";
    const until = Date.now() + 10_000;
    while ((text.match(/tick/g) ?? []).length < 3 && Date.now() < until) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    ac.abort();
    expect((text.match(/tick \d+\n/g) ?? []).length).toBeGreaterThanOrEqual(3);
  });

  it("kubectl logs -f follows new lines", async () => {
    const first = await kubectl(server, ["logs", POD, "--tail=1"]);
    const n = Number(/tick (\d+)/.exec(first.stdout)?.[1]);
    const f = background(server, ["logs", "-f", POD, "--tail=1"], new RegExp(`tick ${n + 3}\\n`));
    try {
      const out = await f.matched;
      expect(out).toContain(`tick ${n + 2}\n`);
    } finally {
      f.p.kill();
    }
  });

  it("rejects an unknown container and an unscheduled pod with upstream's messages", async () => {
    const bad = await kubectl(server, ["logs", POD, "-c", "nope"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain(`container nope is not valid for pod ${POD}`);
    const unbound = await kubectl(server, ["exec", "unbound", "--", "true"]);
    expect(unbound.code).not.toBe(0);
    expect(unbound.stderr).toContain("pod unbound does not have a host assigned");
    const r = await api(server, "GET", `/api/v1/namespaces/${NS}/pods/${POD}/log?tailLines=-1`);
    expect(r.status).toBe(422);
  });

  it("kubectl exec runs a command and reports its exit code", async () => {
    const r = await kubectl(server, ["exec", POD, "--", "hostname"]);
    expect(r).toMatchObject({ code: 0, stdout: "web-host\n" });
    const fail = await kubectl(server, ["exec", POD, "--", "sh", "-c", "echo to-stderr >&2; exit 3"]);
    expect(fail.code).toBe(3);
    expect(fail.stderr).toContain("to-stderr");
  });

  it("kubectl exec -i passes stdin", async () => {
    const r = await kubectl(server, ["exec", "-i", POD, "--", "sh", "-c", "read x; echo got:$x; exit 4"], {
      input: "hello\n",
    });
    expect(r.stdout).toBe("got:hello\n");
    expect(r.code).toBe(4);
  });

  it("kubectl exec -i delivers the end of stdin", async () => {
    const input = "one\ntwo\nthree\n".repeat(2000);
    const r = await kubectl(server, ["exec", "-i", POD, "--", "wc", "-l"], { input });
    expect(r.stdout.trim()).toBe("6000");
    expect(r.code).toBe(0);
  });

  it.skipIf(!existsSync("/usr/bin/script"))("kubectl exec -it runs on a terminal", async () => {
    // script(1) gives kubectl a pseudo-terminal, so it asks for a TTY and sends its size
    const cmd = `${KUBECTL} --kubeconfig ${server.kubeconfigPath} exec -it ${POD} -- sh -c 'tty; sleep 1; echo size=$(stty size)'`;
    const out = await new Promise<string>((resolve) => {
      const p = spawn("/usr/bin/script", ["-qec", `stty cols 91 rows 17; ${cmd}`, "/dev/null"]);
      let text = "";
      p.stdout.on("data", (d) => (text += d));
      p.on("close", () => resolve(text));
      setTimeout(() => p.kill(), 15_000);
    });
    expect(out).toMatch(/\/dev\/pts\/\d+/);
    // the size arrives on the resize channel just after the start, as from the kubelet
    expect(out, JSON.stringify(out)).toContain("size=17 91");
  });

  it("kubectl attach streams the running container's output", async () => {
    const a = background(server, ["attach", POD, "-c", "web"], /tick \d+\n[\s\S]*tick \d+\n/);
    try {
      const out = await a.matched;
      // attach sees only what is written from now on, not the log's start
      expect(out).not.toContain("started");
    } finally {
      a.p.kill();
    }
  });

  it("kubectl port-forward reaches the pod's port", async () => {
    const pf = background(
      server,
      ["port-forward", `pod/${POD}`, ":8080"],
      /Forwarding from 127\.0\.0\.1:\d+/,
    );
    try {
      const out = await pf.matched;
      const port = Number(/127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
      const res = await fetch(`http://127.0.0.1:${port}/index.html`);
      expect(await res.text()).toBe("hello-from-pod\n");
      const again = await fetch(`http://127.0.0.1:${port}/index.html`);
      expect(again.status).toBe(200);
      await again.text();
    } finally {
      pf.p.kill();
    }
  });

  // kubectl before 1.31, and client-go programs without WebSockets, upgrade to SPDY: the
  // front door answers that upgrade and carries the SPDY session (api/wire/spdy-upgrade.ts)
  const SPDY_ONLY = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: "false", KUBECTL_PORT_FORWARD_WEBSOCKETS: "false" };

  it("kubectl exec over a plain SPDY upgrade runs a command, passes stdin and reports exit codes", async () => {
    const r = await kubectl(server, ["exec", POD, "--", "hostname"], { env: SPDY_ONLY });
    expect(r).toMatchObject({ code: 0, stdout: "web-host\n" });
    const fail = await kubectl(server, ["exec", POD, "--", "sh", "-c", "echo to-stderr >&2; exit 3"], {
      env: SPDY_ONLY,
    });
    expect(fail.code).toBe(3);
    expect(fail.stderr).toContain("to-stderr");
    const input = "one\ntwo\nthree\n".repeat(2000);
    const wc = await kubectl(server, ["exec", "-i", POD, "--", "sh", "-c", "wc -l; exit 4"], {
      input,
      env: SPDY_ONLY,
    });
    expect(wc.stdout.trim()).toBe("6000");
    expect(wc.code).toBe(4);
  });

  it("a plain SPDY upgrade the Worker refuses gets the Worker's Status (an unknown container)", async () => {
    const r = await kubectl(server, ["exec", POD, "-c", "nope", "--", "true"], { env: SPDY_ONLY });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("container nope is not valid for pod web");
  });

  it("a plain SPDY upgrade is authorized as create, as upstream authorizes the POST", async () => {
    for (const [user, verb] of [
      ["exec-getter", "get"],
      ["exec-creator", "create"],
    ]) {
      const role = await api(server, "POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`, {
        metadata: { name: user },
        rules: [
          { apiGroups: [""], resources: ["pods/exec"], verbs: [verb] },
          // kubectl reads the pod first
          { apiGroups: [""], resources: ["pods"], verbs: ["get"] },
        ],
      });
      expect(role.status, role.text).toBe(201);
      const binding = await api(
        server,
        "POST",
        `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`,
        {
          metadata: { name: user },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: user },
          subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: user }],
        },
      );
      expect(binding.status, binding.text).toBe(201);
    }
    const exec = (token: string, env: Record<string, string> = {}) =>
      kubectl(server, [`--token=${token}`, "exec", POD, "--", "hostname"], { env });
    // get alone: the WebSocket upgrade (a GET) is allowed, the SPDY one (a POST) is not
    expect((await exec(GET_ONLY_TOKEN)).stdout).toBe("web-host\n");
    const refused = await exec(GET_ONLY_TOKEN, SPDY_ONLY);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('cannot create resource "pods/exec"');
    // create alone: the SPDY upgrade is allowed
    expect((await exec(CREATE_ONLY_TOKEN, SPDY_ONLY)).stdout).toBe("web-host\n");
  });

  it("kubectl attach over a plain SPDY upgrade streams the container's output", async () => {
    const p: ChildProcess = spawn(
      KUBECTL,
      ["--kubeconfig", server.kubeconfigPath, "attach", POD, "-c", "web"],
      {
        env: { ...process.env, ...SPDY_ONLY },
      },
    );
    let out = "";
    p.stdout?.on("data", (d) => (out += d));
    try {
      for (let i = 0; i < 100 && !/tick \d+\n[\s\S]*tick \d+\n/.test(out); i++) await sleep(100);
      expect(out).toMatch(/tick \d+\n[\s\S]*tick \d+\n/);
    } finally {
      p.kill();
    }
  });

  it("kubectl port-forward over a plain SPDY upgrade reaches the pod's port", async () => {
    const p: ChildProcess = spawn(
      KUBECTL,
      ["--kubeconfig", server.kubeconfigPath, "port-forward", `pod/${POD}`, ":8080"],
      { env: { ...process.env, ...SPDY_ONLY } },
    );
    let out = "";
    p.stdout?.on("data", (d) => (out += d));
    try {
      for (let i = 0; i < 100 && !/127\.0\.0\.1:\d+/.test(out); i++) await sleep(100);
      const port = Number(/127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
      expect(port).toBeGreaterThan(0);
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/index.html`);
        expect(await res.text()).toBe("hello-from-pod\n");
      }
    } finally {
      p.kill();
    }
  });

  /** A raw port-forward WebSocket (v4.channel.k8s.io) to the pod: every message as [channel, bytes]. */
  function channelSocket(query: string) {
    const url = `${server.url.replace(/^http/, "ws")}/api/v1/namespaces/${NS}/pods/${POD}/portforward?${query}`;
    const ws = new WebSocket(url, ["v4.channel.k8s.io"], {
      headers: { authorization: `Bearer ${server.token}` },
    });
    const messages: [number, Buffer][] = [];
    ws.on("message", (m: Buffer) => messages.push([m[0], m.subarray(1)]));
    const closed = new Promise<void>((resolve) => ws.on("close", () => resolve()));
    const opened = new Promise<void>((resolve, reject) => {
      ws.on("open", () => resolve());
      ws.on("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.on("error", reject);
    });
    const on = (channel: number) =>
      Buffer.concat(messages.filter(([c]) => c === channel).map(([, b]) => b)).toString("latin1");
    return { ws, messages, opened, closed, on };
  }

  it("port-forward over v4.channel.k8s.io (the kubelet's channels, as other clients speak it) reaches the pod's port", async () => {
    const c = channelSocket("ports=8080");
    await c.opened;
    expect(c.ws.protocol).toBe("v4.channel.k8s.io");
    c.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from("GET /index.html HTTP/1.0\r\n\r\n")]));
    await c.closed; // httpd closes after an HTTP/1.0 answer, and so does the forward
    // each channel's first message is its port, little-endian
    const port = Buffer.alloc(2);
    port.writeUInt16LE(8080);
    expect(c.messages.find(([ch]) => ch === 0)?.[1]).toEqual(port);
    expect(c.messages.find(([ch]) => ch === 1)?.[1]).toEqual(port);
    const data = c.on(0).slice(2);
    expect(data).toMatch(/^HTTP\/1\.[01] 200/);
    expect(data).toContain("hello-from-pod");
    expect(c.on(1).slice(2)).toBe("");
  });

  it("port-forward over v4.channel.k8s.io to a port nothing listens on: the error comes on the error channel", async () => {
    const c = channelSocket("ports=9");
    await c.opened;
    c.ws.send(Buffer.concat([Buffer.from([0]), Buffer.from("hello")]));
    await c.closed;
    expect(c.on(1).slice(2)).toMatch(/error forwarding port 9 to pod .*connection refused/);
  });

  it("port-forward over WebSocket without ports is 400, as the kubelet answers", async () => {
    const c = channelSocket("");
    await expect(c.opened).rejects.toThrow("HTTP 400");
  });

  it("@kubernetes/client-node's PortForward reaches the pod's port", async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfigPath);
    const forward = new PortForward(kc);
    const local = net.createServer((socket) => {
      forward.portForward(NS, POD, [8080], socket, null, socket).catch(() => socket.destroy());
    });
    await new Promise<void>((resolve) => local.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = local.address() as net.AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/index.html`, { headers: { connection: "close" } });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe("hello-from-pod\n");
    } finally {
      local.close();
    }
  });
});
