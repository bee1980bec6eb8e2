// Raw CRI pod start: the floor every pod start through the control plane is
// measured against. N sequential pods, each RunPodSandbox (incl. CNI) +
// CreateContainer + StartContainer straight against containerd, image
// pre-pulled, each pod removed (untimed) before the next. Prints median/p90/p99 and writes flat JSON to
// .edgeplane/bench/cri-raw.json.
//
//   node --import tsx bench/cri-raw.ts [N]     (N defaults to 10, or CRI_BENCH_N)

import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { CriClient, DEFAULT_CRI_ENDPOINT } from "../agent/cri/client";
import type { ContainerConfig, PodSandboxConfig } from "../agent/cri/types";

export const CRI_BENCH_IMAGE = "127.0.0.1:5000/edgeplane/busybox:1";

export interface RawCriPodStartOptions {
  endpoint?: string;
  image?: string;
  /** Unmeasured pod starts before the measured ones (default 1). */
  warmup?: number;
}

export interface RawCriPodStartResult {
  n: number;
  /** Whole pod start (sandbox + create + start) per pod, ms. */
  samplesMs: number[];
  p50: number;
  p90: number;
  p99: number;
  /** RunPodSandbox alone, and CreateContainer + StartContainer, medians in ms. */
  sandboxP50: number;
  containerP50: number;
}

/** Nearest-rank percentile of unsorted samples. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

async function removeCgroupDirs(relative: string): Promise<void> {
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((m) => m.startsWith("/sys/fs/cgroup"));
  for (const root of mounts) {
    await rmdir(join(root, relative)).catch(() => undefined);
  }
}

/** The pod a raw CRI benchmark starts: a pause sandbox and one `sleep` container, as edgelet would. */
export function benchPod(
  prefix: string,
  i: number,
  uid: string,
  logRoot: string,
  image: string,
  cgroupBase: string,
) {
  const cgroup = `${cgroupBase}/pod${uid}`;
  const sandboxConfig: PodSandboxConfig = {
    metadata: { name: `${prefix}-${i}`, uid, namespace: "edgeplane-bench", attempt: 0 },
    hostname: `${prefix}-${i}`,
    log_directory: join(logRoot, uid),
    labels: { "edgeplane.io/bench": prefix },
    linux: {
      cgroup_parent: cgroup,
      security_context: {
        namespace_options: { network: "POD", pid: "CONTAINER", ipc: "POD" },
        seccomp: { profile_type: "RuntimeDefault" },
      },
    },
  };
  const containerConfig: ContainerConfig = {
    metadata: { name: "main", attempt: 0 },
    image: { image },
    command: ["sleep", "3600"],
    log_path: "main/0.log",
    linux: { security_context: { seccomp: { profile_type: "RuntimeDefault" } } },
  };
  return { cgroup, sandboxConfig, containerConfig };
}

/**
 * Starts n pods one after the other straight through CRI and measures each
 * start; every sandbox it made is stopped and removed before it returns.
 */
export async function measureRawCriPodStart(
  n = 10,
  options: RawCriPodStartOptions = {},
): Promise<RawCriPodStartResult> {
  const image = options.image ?? CRI_BENCH_IMAGE;
  const warmup = options.warmup ?? 1;
  const client = new CriClient({ endpoint: options.endpoint ?? DEFAULT_CRI_ENDPOINT });
  const logRoot = mkdtempSync(join(tmpdir(), "edgeplane-cri-bench-"));
  const made: { id: string; cgroup: string }[] = [];
  const total: number[] = [];
  const sandbox: number[] = [];
  const container: number[] = [];
  try {
    await client.waitReady(15_000);
    if (!(await client.imageStatus(image)).image) await client.pullImage(image);

    for (let i = 0; i < warmup + n; i++) {
      const uid = randomUUID();
      const { cgroup, sandboxConfig, containerConfig } = benchPod(
        "cri-raw",
        i,
        uid,
        logRoot,
        image,
        "/edgeplane-bench",
      );
      const t0 = performance.now();
      const id = await client.runPodSandbox(sandboxConfig);
      made.push({ id, cgroup });
      const t1 = performance.now();
      const cid = await client.createContainer(id, containerConfig, sandboxConfig);
      await client.startContainer(cid);
      const t2 = performance.now();
      if (i >= warmup) {
        total.push(t2 - t0);
        sandbox.push(t1 - t0);
        container.push(t2 - t1);
      }
      // Untimed: remove the pod before the next start, so every start sees
      // the same node (running pods left behind slow later starts down).
      await client.stopPodSandbox(id);
      await client.removePodSandbox(id);
      made.pop();
      await removeCgroupDirs(cgroup);
    }
  } finally {
    for (const { id, cgroup } of made) {
      await client.stopPodSandbox(id).catch(() => undefined);
      await client.removePodSandbox(id).catch(() => undefined);
      await removeCgroupDirs(cgroup);
    }
    await removeCgroupDirs("/edgeplane-bench");
    client.close();
    rmSync(logRoot, { recursive: true, force: true });
  }
  return {
    n,
    samplesMs: total.map(round),
    p50: round(percentile(total, 50)),
    p90: round(percentile(total, 90)),
    p99: round(percentile(total, 99)),
    sandboxP50: round(percentile(sandbox, 50)),
    containerP50: round(percentile(container, 50)),
  };
}

async function main(): Promise<void> {
  const socket = (process.env.EDGEPLANE_CRI_ENDPOINT ?? DEFAULT_CRI_ENDPOINT).replace(/^unix:\/\//, "");
  if (!existsSync(socket)) {
    console.warn(
      `\n*** SKIPPED: containerd not running (run npm run setup:containerd); no socket at ${socket} ***\n`,
    );
    return;
  }
  const n = Number(process.argv[2] ?? process.env.CRI_BENCH_N ?? 10);
  if (!Number.isInteger(n) || n < 1) throw new Error(`bad N: ${process.argv[2]}`);
  const r = await measureRawCriPodStart(n, { endpoint: `unix://${socket}` });
  console.log(`raw CRI pod start (RunPodSandbox + CreateContainer + StartContainer), n=${r.n}, 1 warm-up`);
  console.log(`  median ${r.p50} ms   p90 ${r.p90} ms   p99 ${r.p99} ms`);
  console.log(
    `  RunPodSandbox median ${r.sandboxP50} ms, CreateContainer+StartContainer median ${r.containerP50} ms`,
  );
  console.log(`  samples: ${r.samplesMs.join(", ")}`);
  const out = {
    cri_pod_start_p50_ms: r.p50,
    cri_pod_start_p90_ms: r.p90,
    cri_pod_start_p99_ms: r.p99,
    cri_run_sandbox_p50_ms: r.sandboxP50,
    cri_create_start_container_p50_ms: r.containerP50,
    cri_pod_start_n: r.n,
  };
  const dir = fileURLToPath(new URL("../.edgeplane/bench/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "cri-raw.json"), `${JSON.stringify(out, null, 2)}\n`);
  console.log(`  wrote ${join(dir, "cri-raw.json")}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
