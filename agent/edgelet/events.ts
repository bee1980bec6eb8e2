// Kubernetes Events about pods, as the kubelet reports them (Pulling, Pulled,
// Created, Started, Killing, BackOff, Unhealthy, ...). Best effort: a failed
// post is dropped; repeats of the same event within a minute are dropped too.
import { randomBytes } from "node:crypto";
import { rfc3339 } from "../../api/time";
import type { Pod } from "../lib/kube-types";
import { type Api, enc } from "./api";

export type Recorder = (pod: Pod, type: string, reason: string, message: string, fieldPath?: string) => void;

export function eventRecorder(api: Api, nodeName: string, log: (m: string) => void): Recorder {
  const recent = new Map<string, number>();
  return (pod, type, reason, message, fieldPath) => {
    if (!pod?.metadata?.name || !pod.metadata.namespace) return; // an orphan found in the runtime
    const key = `${pod.metadata.uid}|${reason}|${message}|${fieldPath ?? ""}`;
    const now = Date.now();
    if ((recent.get(key) ?? 0) > now - 60_000) return;
    recent.set(key, now);
    if (recent.size > 5000) for (const [k, t] of recent) if (t < now - 60_000) recent.delete(k);
    const ts = rfc3339(now);
    const ns = pod.metadata.namespace;
    const ev = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: `${pod.metadata.name}.${randomBytes(8).toString("hex")}`, namespace: ns },
      involvedObject: {
        apiVersion: "v1",
        kind: "Pod",
        namespace: ns,
        name: pod.metadata.name,
        uid: pod.metadata.uid,
        resourceVersion: pod.metadata.resourceVersion,
        ...(fieldPath ? { fieldPath } : {}),
      },
      reason,
      message,
      type,
      source: { component: "kubelet", host: nodeName },
      reportingComponent: "kubelet",
      reportingInstance: nodeName,
      firstTimestamp: ts,
      lastTimestamp: ts,
      count: 1,
    };
    api.request("POST", `/api/v1/namespaces/${enc(ns)}/events`, ev).then(
      (r) => {
        if (r.status >= 300) log(`event ${reason}: ${r.status} ${r.json?.message ?? ""}`);
      },
      () => {},
    );
  };
}
