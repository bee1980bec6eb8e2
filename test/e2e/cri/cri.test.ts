// End-to-end test of the CRI client against the real private containerd set
// up by `npm run setup:containerd`: image pulls (open and authenticated
// registry), a pod sandbox with CNI networking, a container serving HTTP,
// ExecSync, container logs, and full cleanup.

import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriClient, CriError } from "../../../agent/cri/client";
import type { ContainerConfig, PodSandboxConfig } from "../../../agent/cri/types";

const SOCKET = "/run/edgeplane/containerd.sock";
const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const BUSYBOX = "127.0.0.1:5000/edgeplane/busybox:1";
const PRIVATE = "127.0.0.1:5001/private/busybox:1";
const available = existsSync(SOCKET);

if (!available) {
  console.warn("\n*** SKIPPED: containerd not running (run npm run setup:containerd) ***\n");
}

async function httpGet(url: string, totalMs: number): Promise<{ status: number; body: string }> {
  const until = Date.now() + totalMs;
  let lastError: unknown;
  while (Date.now() < until) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      return { status: res.status, body: await res.text() };
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`GET ${url} never answered: ${String(lastError)}`);
}

/** Removes the per-pod cgroup directories runc created under every hierarchy. */
async function removeCgroups(relative: string): Promise<void> {
  const roots = ["/sys/fs/cgroup", ...listDirs("/sys/fs/cgroup")];
  for (const root of roots) {
    for (const dir of [join(root, relative), join(root, relative, "..")]) {
      await rmdir(dir).catch(() => undefined);
    }
  }
}

function listDirs(path: string): string[] {
  try {
    return readFileSync("/proc/self/mountinfo", "utf8")
      .split("\n")
      .map((line) => line.split(" ")[4] ?? "")
      .filter((mount) => mount.startsWith(`${path}/`));
  } catch {
    return [];
  }
}

describe("CRI client without a runtime", () => {
  it("fails fast with a clean UNAVAILABLE error", async () => {
    const client = new CriClient({ endpoint: "/run/edgeplane/no-such-runtime.sock", timeoutMs: 2_000 });
    const started = Date.now();
    const err = await client.version().then(
      () => undefined,
      (e: unknown) => e,
    );
    client.close();
    expect(err).toBeInstanceOf(CriError);
    expect((err as CriError).isUnavailable).toBe(true);
    expect((err as CriError).method).toBe("Version");
    expect((err as CriError).message).toContain("unix:///run/edgeplane/no-such-runtime.sock");
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe.skipIf(!available)("CRI client against containerd", () => {
  const client = new CriClient({ endpoint: `unix://${SOCKET}`, timeoutMs: 30_000 });
  const uid = randomUUID();
  const logDir = mkdtempSync(join(tmpdir(), "edgeplane-cri-e2e-"));
  const cgroupParent = `/edgeplane-e2e/pod${uid}`;
  const sandboxConfig: PodSandboxConfig = {
    metadata: { name: "cri-e2e", uid, namespace: "edgeplane-e2e", attempt: 0 },
    hostname: "cri-e2e",
    log_directory: logDir,
    labels: { "edgeplane.io/e2e": "cri", "edgeplane.io/pod-uid": uid },
    annotations: { "edgeplane.io/purpose": "e2e" },
    linux: {
      cgroup_parent: cgroupParent,
      security_context: {
        namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" },
        seccomp: { profile_type: "RuntimeDefault" },
      },
    },
  };
  const containerConfig: ContainerConfig = {
    metadata: { name: "httpd", attempt: 0 },
    image: { image: BUSYBOX },
    command: ["httpd", "-f", "-p", "8080", "-h", "/var/www"],
    envs: [{ key: "GREETING", value: "grüße, wörld" }],
    log_path: "httpd/0.log",
    labels: { "edgeplane.io/container": "httpd" },
    linux: {
      security_context: {
        namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" },
        seccomp: { profile_type: "RuntimeDefault" },
      },
    },
  };
  let sandboxId = "";
  let containerId = "";
  let podIP = "";
  let auth = { username: "", password: "" };

  beforeAll(async () => {
    await client.waitReady(15_000);
    const [username = "", password = ""] = readFileSync(join(REPO, ".edgeplane/registry-credentials"), "utf8")
      .trim()
      .split(/:(.*)/s);
    auth = { username, password };
    // The private image must not be present, so the unauthenticated pull
    // below really goes to the registry.
    if ((await client.imageStatus(PRIVATE)).image) await client.removeImage(PRIVATE);
  }, 30_000);

  afterAll(async () => {
    try {
      if (containerId) await client.removeContainer(containerId).catch(() => undefined);
      if (sandboxId) {
        await client.stopPodSandbox(sandboxId).catch(() => undefined);
        await client.removePodSandbox(sandboxId).catch(() => undefined);
      }
      if ((await client.imageStatus(PRIVATE)).image) await client.removeImage(PRIVATE);
      await removeCgroups(cgroupParent);
    } finally {
      client.close();
      rmSync(logDir, { recursive: true, force: true });
    }
  }, 30_000);

  it("reports version and readiness", async () => {
    const version = await client.version();
    expect(version.runtime_name).toBe("containerd");
    expect(version.runtime_api_version).toBe("v1");
    const status = await client.status();
    const types = (status.status?.conditions ?? []).filter((c) => c.status).map((c) => c.type);
    expect(types).toEqual(expect.arrayContaining(["RuntimeReady", "NetworkReady"]));
  });

  it("pulls busybox from the open registry", async () => {
    const ref = await client.pullImage(BUSYBOX);
    expect(ref).toMatch(/^sha256:[0-9a-f]{64}$/);
    const status = await client.imageStatus(BUSYBOX);
    expect(status.image?.id).toBe(ref);
    expect(status.image?.repo_tags).toContain(BUSYBOX);
    const all = await client.listImages();
    expect(all.some((img) => img.id === ref)).toBe(true);
  }, 60_000);

  it("runs a pod sandbox with a CNI address", async () => {
    sandboxId = await client.runPodSandbox(sandboxConfig);
    expect(sandboxId).toMatch(/^[0-9a-f]{64}$/);
    const res = await client.podSandboxStatus(sandboxId);
    expect(res.status?.state).toBe("SANDBOX_READY");
    expect(res.status?.metadata?.uid).toBe(uid);
    expect(res.status?.labels["edgeplane.io/pod-uid"]).toBe(uid);
    expect(res.status?.linux?.namespaces?.options?.pid).toBe("CONTAINER");
    podIP = res.status?.network?.ip ?? "";
    expect(podIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const listed = await client.listPodSandbox({ label_selector: { "edgeplane.io/pod-uid": uid } });
    expect(listed.map((p) => p.id)).toEqual([sandboxId]);
  }, 60_000);

  it("creates and starts an httpd container reachable from the host", async () => {
    containerId = await client.createContainer(sandboxId, containerConfig, sandboxConfig);
    const created = await client.containerStatus(containerId);
    expect(created.status?.state).toBe("CONTAINER_CREATED");
    await client.startContainer(containerId);
    const running = await client.containerStatus(containerId);
    expect(running.status?.state).toBe("CONTAINER_RUNNING");
    expect(running.status?.log_path).toBe(join(logDir, "httpd/0.log"));
    const listed = await client.listContainers({ pod_sandbox_id: sandboxId });
    expect(listed.map((c) => [c.id, c.metadata?.name, c.state])).toEqual([
      [containerId, "httpd", "CONTAINER_RUNNING"],
    ]);
    const res = await httpGet(`http://${podIP}:8080/index.html`, 10_000);
    expect(res.status).toBe(200);
    expect(res.body).toBe("edgeplane busybox\n");
  }, 60_000);

  it("execs commands in the container", async () => {
    const host = await client.execSync(containerId, ["hostname"], 10);
    expect(host.exit_code).toBe(0);
    expect(host.stdout.toString()).toBe("cri-e2e\n");
    const env = await client.execSync(containerId, ["sh", "-c", 'echo "$GREETING"'], 10);
    expect(env.stdout.toString("utf8")).toBe("grüße, wörld\n");
    const failing = await client.execSync(containerId, ["sh", "-c", "echo oops >&2; exit 3"], 10);
    expect(failing.exit_code).toBe(3);
    expect(failing.stderr.toString()).toBe("oops\n");
    // Output of PID 1 lands in the CRI log file under the pod's log directory.
    await client.execSync(containerId, ["sh", "-c", "echo hello-log > /proc/1/fd/1"], 10);
    const logPath = join(logDir, "httpd/0.log");
    let log = "";
    for (let i = 0; i < 50 && !log.includes("hello-log"); i++) {
      await new Promise((r) => setTimeout(r, 100));
      log = existsSync(logPath) ? readFileSync(logPath, "utf8") : "";
    }
    expect(log).toMatch(/^\S+ stdout F hello-log$/m);
  }, 60_000);

  it("updates container resources", async () => {
    await client.updateContainerResources(containerId, {
      cpu_shares: 512,
      memory_limit_in_bytes: 64 * 1024 * 1024,
    });
    const shares = await client.execSync(containerId, ["cat", "/sys/fs/cgroup/cpu/cpu.shares"], 10);
    const limit = await client.execSync(
      containerId,
      ["cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"],
      10,
    );
    if (shares.exit_code === 0) expect(shares.stdout.toString().trim()).toBe("512");
    if (limit.exit_code === 0) expect(limit.stdout.toString().trim()).toBe(String(64 * 1024 * 1024));
    // At least one of the cgroup v1 files is visible (cgroup v2 hosts: cpu.weight/memory.max).
    const v2 = await client.execSync(containerId, ["cat", "/sys/fs/cgroup/memory.max"], 10);
    expect([shares.exit_code, limit.exit_code, v2.exit_code]).toContain(0);
    if (v2.exit_code === 0) expect(v2.stdout.toString().trim()).toBe(String(64 * 1024 * 1024));
  });

  it("reports the image filesystem under the private containerd root", async () => {
    const fs = await client.imageFsInfo();
    expect(fs.image_filesystems.length).toBeGreaterThan(0);
    expect(fs.image_filesystems[0]?.fs_id?.mountpoint).toContain("/var/lib/edgeplane/containerd");
    expect(fs.image_filesystems[0]?.used_bytes?.value).toBeGreaterThan(0);
  });

  it("gives streaming URLs for exec and port-forward", async () => {
    const exec = await client.exec({ container_id: containerId, cmd: ["sh"], stdout: true, stderr: true });
    expect(exec.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/exec\//);
    const pf = await client.portForward(sandboxId, [8080]);
    expect(pf.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/portforward\//);
  });

  it("refuses the private image without credentials and pulls it with them", async () => {
    const failure = await client.pullImage(PRIVATE).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(CriError);
    expect((failure as CriError).details).toMatch(/401|unauthorized/i);
    expect((await client.imageStatus(PRIVATE)).image).toBeNull();

    const wrong = await client
      .pullImage(PRIVATE, { ...auth, password: `${auth.password}x`, server_address: "http://127.0.0.1:5001" })
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(wrong).toBeInstanceOf(CriError);

    const ref = await client.pullImage(PRIVATE, { ...auth, server_address: "http://127.0.0.1:5001" });
    expect(ref).toMatch(/^sha256:/);
    expect(ref).not.toBe((await client.imageStatus(BUSYBOX)).image?.id);
    expect((await client.imageStatus(PRIVATE)).image?.repo_tags).toContain(PRIVATE);
  }, 60_000);

  it("stops and removes everything", async () => {
    await client.stopContainer(containerId, 1);
    const stopped = await client.containerStatus(containerId);
    expect(stopped.status?.state).toBe("CONTAINER_EXITED");
    await client.removeContainer(containerId);
    const missing = await client.containerStatus(containerId).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(missing).toBeInstanceOf(CriError);
    expect((missing as CriError).isNotFound).toBe(true);
    containerId = "";

    await client.stopPodSandbox(sandboxId);
    const notReady = await client.podSandboxStatus(sandboxId);
    expect(notReady.status?.state).toBe("SANDBOX_NOTREADY");
    await client.removePodSandbox(sandboxId);
    const all = await client.listPodSandbox();
    expect(all.map((p) => p.id)).not.toContain(sandboxId);
    sandboxId = "";
  }, 60_000);
});
