// The runtime's view of this node's pods, refreshed by a relist every second
// like the classic kubelet PLEG (containerd 1.6 has no container events).
// Sandboxes and containers are found by their labels, so a restarted edgelet
// adopts what is already running. Changed pods are reported by uid.
import { readFileSync } from "node:fs";
import type { CriClient } from "../cri/client";
import type { ContainerState, ContainerStatus, PodSandboxState } from "../cri/types";

export const NODE_LABEL = "edgeplane.io/node";
export const POD_UID_LABEL = "io.kubernetes.pod.uid";
export const POD_NAME_LABEL = "io.kubernetes.pod.name";
export const POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace";
export const CONTAINER_NAME_LABEL = "io.kubernetes.container.name";
export const RESTART_COUNT_ANNOTATION = "io.kubernetes.container.restartCount";
export const HASH_ANNOTATION = "io.kubernetes.container.hash";

export interface SandboxInfo {
  id: string;
  uid: string;
  name: string;
  namespace: string;
  attempt: number;
  state: PodSandboxState;
  createdAt: number;
  ip?: string;
  logDirectory?: string;
}

export interface ContainerInfo {
  id: string;
  sandboxId: string;
  podUid: string;
  name: string;
  attempt: number;
  state: ContainerState;
  createdAt: number;
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  image: string;
  imageRef: string;
  restartCount: number;
  hash: string;
  logPath: string;
}

export interface PodRuntime {
  uid: string;
  /** Newest first. */
  sandboxes: SandboxInfo[];
  /** Newest first. */
  containers: ContainerInfo[];
}

export class RuntimeCache {
  private pods = new Map<string, PodRuntime>();
  private sandboxIPs = new Map<string, { ip?: string; logDirectory?: string }>();
  private statusCache = new Map<string, ContainerInfo>();
  private timer?: NodeJS.Timeout;
  private relisting?: Promise<void>;
  relists = 0;

  constructor(
    private readonly cri: CriClient,
    private readonly nodeName: string,
    private readonly onChange: (uid: string) => void,
    private readonly log: (m: string) => void = () => {},
  ) {}

  start(periodMs: number): void {
    const tick = async () => {
      try {
        await this.relist();
      } catch (e) {
        this.log(`relist: ${(e as Error).message}`);
      }
      this.timer = setTimeout(tick, periodMs);
    };
    this.timer = setTimeout(tick, periodMs);
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  get(uid: string): PodRuntime {
    return this.pods.get(uid) ?? { uid, sandboxes: [], containers: [] };
  }

  uids(): string[] {
    return [...this.pods.keys()];
  }

  /** Finds the pod runtime by namespace and name. */
  byName(namespace: string, name: string): PodRuntime | undefined {
    let best: PodRuntime | undefined;
    for (const p of this.pods.values()) {
      const s = p.sandboxes[0];
      if (!s || s.namespace !== namespace || s.name !== name) continue;
      if (!best || (best.sandboxes[0]?.createdAt ?? 0) < s.createdAt) best = p;
    }
    return best;
  }

  /** Relists everything; coalesces concurrent callers. */
  relist(): Promise<void> {
    this.relisting ??= this.doRelist({ [NODE_LABEL]: this.nodeName }).finally(() => {
      this.relisting = undefined;
    });
    return this.relisting;
  }

  /** Refreshes one pod right now (after the worker changed it). */
  async refreshPod(uid: string): Promise<PodRuntime> {
    await this.doRelist({ [NODE_LABEL]: this.nodeName, [POD_UID_LABEL]: uid }, uid);
    return this.get(uid);
  }

  private async doRelist(selector: Record<string, string>, onlyUid?: string): Promise<void> {
    const [sandboxes, containers] = await Promise.all([
      this.cri.listPodSandbox({ label_selector: selector }),
      this.cri.listContainers({ label_selector: selector }),
    ]);
    const next = new Map<string, PodRuntime>();
    const entry = (uid: string) => {
      let p = next.get(uid);
      if (!p) next.set(uid, (p = { uid, sandboxes: [], containers: [] }));
      return p;
    };
    for (const s of sandboxes) {
      const uid = s.metadata?.uid ?? s.labels[POD_UID_LABEL] ?? "";
      const key = `${s.id}:${s.state}`;
      let extra = this.sandboxIPs.get(key);
      if (!extra) {
        extra = {};
        try {
          const st = await this.cri.podSandboxStatus(s.id);
          extra = { ip: st.status?.network?.ip || undefined };
          this.sandboxIPs.set(key, extra);
        } catch {}
      }
      entry(uid).sandboxes.push({
        id: s.id,
        uid,
        name: s.metadata?.name ?? s.labels[POD_NAME_LABEL] ?? "",
        namespace: s.metadata?.namespace ?? s.labels[POD_NAMESPACE_LABEL] ?? "",
        attempt: s.metadata?.attempt ?? 0,
        state: s.state,
        createdAt: s.created_at,
        ip: extra.ip,
      });
    }
    for (const c of containers) {
      const uid = c.labels[POD_UID_LABEL] ?? "";
      let info = this.statusCache.get(c.id);
      if (!info || info.state !== c.state) {
        try {
          const st = (await this.cri.containerStatus(c.id)).status;
          if (!st) continue;
          info = {
            id: c.id,
            sandboxId: c.pod_sandbox_id,
            podUid: uid,
            name: c.metadata?.name ?? c.labels[CONTAINER_NAME_LABEL] ?? "",
            attempt: c.metadata?.attempt ?? 0,
            state: st.state,
            createdAt: st.created_at,
            startedAt: st.started_at,
            finishedAt: st.finished_at,
            exitCode: st.exit_code,
            reason: st.reason,
            message: st.state === "CONTAINER_EXITED" ? terminationMessage(st) || st.message : st.message,
            image: st.image?.image ?? c.image?.image ?? "",
            imageRef: st.image_ref || c.image_ref,
            restartCount: Number(c.annotations[RESTART_COUNT_ANNOTATION] ?? 0) || 0,
            hash: c.annotations[HASH_ANNOTATION] ?? "",
            logPath: st.log_path,
          };
          this.statusCache.set(c.id, info);
        } catch (_e) {
          continue; // removed between list and status
        }
      }
      entry(uid).containers.push(info);
    }
    for (const p of next.values()) {
      p.sandboxes.sort((a, b) => b.createdAt - a.createdAt);
      p.containers.sort((a, b) => b.createdAt - a.createdAt);
    }
    const changed: string[] = [];
    if (onlyUid) {
      const p = next.get(onlyUid);
      if (p) this.pods.set(onlyUid, p);
      else this.pods.delete(onlyUid);
    } else {
      for (const [uid, p] of next) if (fingerprint(this.pods.get(uid)) !== fingerprint(p)) changed.push(uid);
      for (const uid of this.pods.keys()) if (!next.has(uid)) changed.push(uid);
      this.pods = next;
      this.relists++;
      const liveC = new Set(containers.map((c) => c.id));
      for (const id of this.statusCache.keys()) if (!liveC.has(id)) this.statusCache.delete(id);
      const liveS = new Set(sandboxes.map((s) => `${s.id}:${s.state}`));
      for (const id of this.sandboxIPs.keys()) if (!liveS.has(id)) this.sandboxIPs.delete(id);
    }
    for (const uid of changed) this.onChange(uid);
  }
}

function fingerprint(p: PodRuntime | undefined): string {
  if (!p) return "";
  return [
    ...p.sandboxes.map((s) => `${s.id}:${s.state}`),
    ...p.containers.map((c) => `${c.id}:${c.state}`),
  ].join(",");
}

const MAX_MESSAGE = 4096;

/** The termination message a container left: its terminationMessagePath file, or (FallbackToLogsOnError) its log tail. */
export function terminationMessage(st: ContainerStatus): string {
  const path = st.annotations?.["io.kubernetes.container.terminationMessagePath"];
  const policy = st.annotations?.["io.kubernetes.container.terminationMessagePolicy"];
  const mount = path ? st.mounts?.find((m) => m.container_path === path) : undefined;
  let msg = "";
  if (mount) {
    try {
      msg = readFileSync(mount.host_path, "utf8").slice(0, MAX_MESSAGE);
    } catch {}
  }
  if (!msg && policy === "FallbackToLogsOnError" && st.exit_code !== 0 && st.log_path) {
    try {
      const lines = readFileSync(st.log_path, "utf8")
        .split("\n")
        .filter(Boolean)
        .slice(-80)
        .map((l) => l.replace(/^\S+ (stdout|stderr) [FP] /, ""));
      msg = lines.join("\n").slice(-2048);
    } catch {}
  }
  return msg;
}
