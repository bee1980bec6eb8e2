// Raw CRI pod starts n at once (RunPodSandbox + CreateContainer + StartContainer straight to
// containerd, each pod timed from its own RunPodSandbox): the floor for "20 pods at once",
// as bench/cri-raw.ts's sequential run is the floor for pods one after another.
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CriClient } from "../../agent/cri/client";
import { benchPod } from "../cri-raw";
import { type Summary, summarize } from "./stats";

const CGROUP_BASE = "/edgeplane-bench-par";

async function removeCgroup(relative: string): Promise<void> {
  const mounts = readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((m) => m.startsWith("/sys/fs/cgroup"));
  for (const root of mounts) await rmdir(join(root, relative)).catch(() => undefined);
}

export async function measureRawCriParallel(n: number, endpoint: string, image: string): Promise<Summary> {
  const client = new CriClient({ endpoint });
  const logRoot = mkdtempSync(join(tmpdir(), "edgeplane-cri-par-"));
  const made: { id: string; cgroup: string }[] = [];
  try {
    await client.waitReady(15_000);
    if (!(await client.imageStatus(image)).image) await client.pullImage(image);
    const one = async (i: number): Promise<number> => {
      const uid = randomUUID();
      const {
        cgroup,
        sandboxConfig: sandbox,
        containerConfig: container,
      } = benchPod("cri-par", i, uid, logRoot, image, CGROUP_BASE);
      const t0 = performance.now();
      const id = await client.runPodSandbox(sandbox);
      made.push({ id, cgroup });
      const cid = await client.createContainer(id, container, sandbox);
      await client.startContainer(cid);
      return performance.now() - t0;
    };
    const samples = await Promise.all(Array.from({ length: n }, (_, i) => one(i)));
    return summarize(samples);
  } finally {
    for (const { id, cgroup } of made) {
      await client.stopPodSandbox(id).catch(() => undefined);
      await client.removePodSandbox(id).catch(() => undefined);
      await removeCgroup(cgroup);
    }
    await removeCgroup(CGROUP_BASE);
    client.close();
    rmSync(logRoot, { recursive: true, force: true });
  }
}
