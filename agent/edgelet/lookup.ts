// Finding a container by (namespace, pod name, container name): what the
// streaming tunnel (kubectl logs/exec/attach/port-forward) needs to reach CRI.
// Inside edgelet use locateContainer over the runtime cache; a process without
// the cache can ask CRI directly by label with locateContainerViaCri.
import type { CriClient } from "../cri/client";
import {
  CONTAINER_NAME_LABEL,
  POD_NAME_LABEL,
  POD_NAMESPACE_LABEL,
  POD_UID_LABEL,
  RESTART_COUNT_ANNOTATION,
  type RuntimeCache,
} from "./runtime-cache";

/** Where a container of a pod lives: what a streaming tunnel needs for logs, exec, attach. */
export interface ContainerLocation {
  podUid: string;
  sandboxId: string;
  containerId: string;
  logPath: string;
  restartCount: number;
  running: boolean;
}

/**
 * Finds a container by (namespace, pod name, container name) in the cache;
 * `previous` picks the one before the newest (kubectl logs --previous).
 */
export function locateContainer(
  cache: RuntimeCache,
  namespace: string,
  podName: string,
  containerName: string,
  previous = false,
): ContainerLocation | undefined {
  const p = cache.byName(namespace, podName);
  if (!p) return undefined;
  const list = p.containers.filter((c) => c.name === containerName);
  const c = list[previous ? 1 : 0];
  if (!c) return undefined;
  return {
    podUid: p.uid,
    sandboxId: c.sandboxId,
    containerId: c.id,
    logPath: c.logPath,
    restartCount: c.restartCount,
    running: c.state === "CONTAINER_RUNNING",
  };
}

/** The same lookup straight from CRI, for a process that holds no cache. */
export async function locateContainerViaCri(
  cri: CriClient,
  namespace: string,
  podName: string,
  containerName: string,
  previous = false,
): Promise<ContainerLocation | undefined> {
  const list = await cri.listContainers({
    label_selector: {
      [POD_NAMESPACE_LABEL]: namespace,
      [POD_NAME_LABEL]: podName,
      [CONTAINER_NAME_LABEL]: containerName,
    },
  });
  list.sort((a, b) => b.created_at - a.created_at);
  const c = list[previous ? 1 : 0];
  if (!c) return undefined;
  const st = (await cri.containerStatus(c.id)).status;
  return {
    podUid: c.labels[POD_UID_LABEL] ?? "",
    sandboxId: c.pod_sandbox_id,
    containerId: c.id,
    logPath: st?.log_path ?? "",
    restartCount: Number(c.annotations[RESTART_COUNT_ANNOTATION] ?? 0) || 0,
    running: c.state === "CONTAINER_RUNNING",
  };
}

/** The ready sandbox of a pod (for port-forward), newest first. */
export function locateSandbox(
  cache: RuntimeCache,
  namespace: string,
  podName: string,
): { podUid: string; sandboxId: string; podIP?: string } | undefined {
  const p = cache.byName(namespace, podName);
  const s = p?.sandboxes.find((x) => x.state === "SANDBOX_READY");
  return p && s ? { podUid: p.uid, sandboxId: s.id, podIP: s.ip } : undefined;
}
