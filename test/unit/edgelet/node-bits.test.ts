import { mkdtempSync, readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { admitPod } from "../../../agent/edgelet/admission";
import { writeAtomic } from "../../../agent/edgelet/atomic-writer";
import { podCgroupParent, podLimits } from "../../../agent/edgelet/cgroups";
import { authsFromSecrets, registryHost } from "../../../agent/edgelet/images";
import { computeQOSClass, linuxResources } from "../../../agent/edgelet/qos";
import { containerConfig, sandboxConfig } from "../../../agent/edgelet/specs";
import { milliCPU, units } from "../../../api/quantity";

const c = (name: string, resources?: any, ports?: any[]) => ({
  name,
  image: "busybox",
  ...(resources ? { resources } : {}),
  ...(ports ? { ports } : {}),
});
const pod = (containers: any[], uid = "u1") => ({
  metadata: { name: `p-${uid}`, namespace: "ns", uid },
  spec: { containers },
});

describe("quantities and QoS", () => {
  it("parses CPU and memory quantities", () => {
    expect(milliCPU("250m")).toBe(250);
    expect(milliCPU("1.5")).toBe(1500);
    expect(milliCPU(2)).toBe(2000);
    expect(units("64Mi")).toBe(64 * 1024 * 1024);
    expect(units("1G")).toBe(1e9);
    expect(units("1e3")).toBe(1000);
  });

  it("classifies Guaranteed, Burstable and BestEffort", () => {
    expect(computeQOSClass(pod([c("a")]))).toBe("BestEffort");
    expect(computeQOSClass(pod([c("a", { limits: { cpu: "1", memory: "1Gi" } })]))).toBe("Guaranteed");
    expect(
      computeQOSClass(
        pod([c("a", { requests: { cpu: "1000m", memory: "1Gi" }, limits: { cpu: "1", memory: "1Gi" } })]),
      ),
    ).toBe("Guaranteed");
    expect(computeQOSClass(pod([c("a", { requests: { cpu: "100m" } })]))).toBe("Burstable");
    expect(computeQOSClass(pod([c("a", { limits: { cpu: "1", memory: "1Gi" } }), c("b")]))).toBe("Burstable");
  });

  it("maps resources to CRI Linux resources", () => {
    const r = linuxResources(
      c("a", { requests: { cpu: "250m", memory: "64Mi" }, limits: { cpu: "500m", memory: "128Mi" } }),
      "Burstable",
      1024 * 1024 * 1024,
    );
    expect(r).toMatchObject({
      cpu_shares: 256,
      cpu_period: 100000,
      cpu_quota: 50000,
      memory_limit_in_bytes: 128 * 1024 * 1024,
    });
    expect(linuxResources(c("b"), "BestEffort", 1).cpu_shares).toBe(2);
    expect(linuxResources(c("b"), "BestEffort", 1).oom_score_adj).toBe(1000);
  });

  it("computes pod-level cgroup limits only where every container has one", () => {
    expect(
      podLimits(
        pod([
          c("a", { requests: { cpu: "250m" }, limits: { cpu: "1", memory: "64Mi" } }),
          c("b", { limits: { cpu: "500m", memory: "32Mi" } }),
        ]),
      ),
    ).toEqual({
      cpuShares: 768,
      cpuPeriod: 100000,
      cpuQuota: 150000,
      memoryLimit: 96 * 1024 * 1024,
    });
    expect(
      podLimits(pod([c("a", { limits: { memory: "64Mi" } }), c("b", { requests: { cpu: "100m" } })])),
    ).toEqual({ cpuShares: 102 });
  });

  it("puts pod cgroups under their QoS parent", () => {
    expect(podCgroupParent("/edgeplane", "Burstable", "x")).toBe("/edgeplane/burstable/podx");
    expect(podCgroupParent("/edgeplane", "BestEffort", "x")).toBe("/edgeplane/besteffort/podx");
    expect(podCgroupParent("/edgeplane", "Guaranteed", "x")).toBe("/edgeplane/podx");
  });
});

describe("node admission", () => {
  const alloc = { cpuMilli: 2000, memory: 4 * 1024 ** 3, pods: 3 };
  it("admits what fits and rejects with upstream's reasons", () => {
    const small = pod([c("a", { requests: { cpu: "1500m" } })], "a");
    expect(admitPod(small, [], alloc).admit).toBe(true);
    const more = pod([c("b", { requests: { cpu: "600m" } })], "b");
    expect(admitPod(more, [small], alloc)).toMatchObject({ admit: false, reason: "OutOfcpu" });
    expect(admitPod(pod([c("m", { requests: { memory: "5Gi" } })]), [], alloc)).toMatchObject({
      admit: false,
      reason: "OutOfmemory",
    });
    const hp = (uid: string) => pod([c("h", undefined, [{ containerPort: 80, hostPort: 8080 }])], uid);
    expect(admitPod(hp("2"), [hp("1")], alloc)).toMatchObject({ admit: false, reason: "NodePorts" });
    expect(admitPod(pod([c("x")]), [pod([c("1")]), pod([c("2")]), pod([c("3")])], alloc)).toMatchObject({
      admit: false,
      reason: "OutOfpods",
    });
  });
});

describe("pull secrets", () => {
  it("finds the registry of an image", () => {
    expect(registryHost("127.0.0.1:5001/private/busybox:1")).toBe("127.0.0.1:5001");
    expect(registryHost("library/busybox")).toBe("docker.io");
    expect(registryHost("busybox")).toBe("docker.io");
  });
  it("turns a dockerconfigjson secret into CRI auth with an http:// server_address", () => {
    const cfg = {
      auths: {
        "http://127.0.0.1:5001": { auth: Buffer.from("u:p:w").toString("base64") },
        "other:1": { username: "x", password: "y" },
      },
    };
    const secret = {
      type: "kubernetes.io/dockerconfigjson",
      data: { ".dockerconfigjson": Buffer.from(JSON.stringify(cfg)).toString("base64") },
    };
    expect(authsFromSecrets("127.0.0.1:5001/private/busybox:1", [secret])).toEqual([
      { username: "u", password: "p:w", server_address: "http://127.0.0.1:5001" },
    ]);
    expect(authsFromSecrets("127.0.0.1:5000/x:1", [secret])).toEqual([]);
  });
});

describe("CRI configs", () => {
  const p = {
    metadata: { name: "web", namespace: "ns", uid: "u9", labels: { app: "web" }, annotations: { a: "b" } },
    spec: {
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: "c",
          image: "busybox",
          ports: [{ containerPort: 80, hostPort: 8080 }],
          lifecycle: { preStop: { exec: { command: ["x"] } } },
        },
      ],
    },
  };
  it("labels the sandbox like upstream and asks for RuntimeDefault seccomp", () => {
    const s = sandboxConfig({
      pod: p,
      nodeName: "n",
      attempt: 1,
      logDirectory: "/l",
      cgroupParent: "/edgeplane/besteffort/podu9",
      dns: {},
      hostHostname: "h",
    });
    expect(s.metadata).toEqual({ name: "web", uid: "u9", namespace: "ns", attempt: 1 });
    expect(s.labels).toMatchObject({
      app: "web",
      "io.kubernetes.pod.name": "web",
      "io.kubernetes.pod.namespace": "ns",
      "io.kubernetes.pod.uid": "u9",
    });
    expect(s.linux?.security_context?.seccomp).toEqual({ profile_type: "RuntimeDefault" });
    expect(s.port_mappings).toEqual([{ protocol: "TCP", container_port: 80, host_port: 8080, host_ip: "" }]);
    expect(s.hostname).toBe("web");
  });
  it("labels and annotates containers like upstream, with the log path <name>/<restartCount>.log", () => {
    const cc = containerConfig({
      pod: p,
      container: p.spec.containers[0],
      nodeName: "n",
      restartCount: 3,
      env: [],
      mounts: [],
      imageRef: "sha256:1",
      qos: "BestEffort",
      memoryCapacity: 1,
    });
    expect(cc.labels).toMatchObject({ "io.kubernetes.container.name": "c", "io.kubernetes.pod.uid": "u9" });
    expect(cc.annotations).toMatchObject({
      "io.kubernetes.container.restartCount": "3",
      "io.kubernetes.pod.terminationGracePeriod": "5",
      "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
    });
    expect(JSON.parse(cc.annotations?.["io.kubernetes.container.preStopHandler"] ?? "{}")).toEqual({
      exec: { command: ["x"] },
    });
    expect(cc.log_path).toBe("c/3.log");
    expect(cc.metadata).toEqual({ name: "c", attempt: 3 });
  });
  it("puts an ephemeral container with a target into that container's process namespace", () => {
    const base = {
      container: { name: "debugger", image: "busybox" },
      nodeName: "n",
      restartCount: 0,
      env: [],
      mounts: [],
      imageRef: "sha256:1",
      qos: "BestEffort" as const,
      memoryCapacity: 1,
    };
    const ns = (pod: any, targetId?: string) =>
      containerConfig({ ...base, pod, targetId }).linux?.security_context?.namespace_options;
    expect(ns(p, "abc")).toEqual({ network: "POD", pid: "TARGET", target_id: "abc", ipc: "POD" });
    expect(ns(p)).toEqual({ network: "POD", pid: "CONTAINER", ipc: "POD" });
    // a pod-wide or the host's process namespace is kept, as the kubelet keeps it
    const shared = { ...p, spec: { ...p.spec, shareProcessNamespace: true } };
    expect(ns(shared, "abc")).toEqual({ network: "POD", pid: "POD", ipc: "POD" });
    const host = { ...p, spec: { ...p.spec, hostPID: true } };
    expect(ns(host, "abc")?.pid).toBe("NODE");
  });
});

describe("atomic writer", () => {
  it("writes through ..data, applies modes, and swaps on change", () => {
    const dir = join(mkdtempSync(join(tmpdir(), "aw-")), "vol");
    const files = new Map([
      ["a", { data: Buffer.from("1"), mode: 0o400 }],
      ["sub/b", { data: Buffer.from("2"), mode: 0o644 }],
    ]);
    expect(writeAtomic(dir, files)).toBe(true);
    expect(readFileSync(join(dir, "a"), "utf8")).toBe("1");
    expect(readFileSync(join(dir, "sub/b"), "utf8")).toBe("2");
    expect(statSync(join(dir, "a")).mode & 0o777).toBe(0o400);
    expect(readlinkSync(join(dir, "a"))).toBe("..data/a");
    expect(writeAtomic(dir, files)).toBe(false);
    expect(writeAtomic(dir, new Map([["a", { data: Buffer.from("3"), mode: 0o644 }]]))).toBe(true);
    expect(readFileSync(join(dir, "a"), "utf8")).toBe("3");
    expect(readdirSync(dir).filter((n) => !n.startsWith(".."))).toEqual(["a"]);
    expect(readdirSync(dir).filter((n) => n.startsWith("..") && n !== "..data")).toHaveLength(1);
  });
});
