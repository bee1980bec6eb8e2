// Events about the objects the node's network parts act on (its Node, Services,
// NetworkPolicies), as kube-proxy records them: source component "kube-proxy", the Node's in
// the default namespace as upstream files node events. Best effort; repeats within a minute
// are dropped.
import { randomBytes } from "node:crypto";
import { rfc3339 } from "../../api/time";
import type { Reply } from "../lib/http";

const API_VERSIONS: Record<string, string> = {
  Node: "v1",
  Service: "v1",
  EndpointSlice: "discovery.k8s.io/v1",
  NetworkPolicy: "networking.k8s.io/v1",
};

export type ObjectEvent = (
  kind: string,
  namespace: string,
  name: string,
  reason: string,
  message: string,
  type?: string,
) => void;

export function objectEventRecorder(
  client: { request(method: string, path: string, body?: unknown): Promise<Reply> },
  nodeName: string,
  log: (m: string) => void,
): ObjectEvent {
  const recent = new Map<string, number>();
  return (kind, namespace, name, reason, message, type = "Warning") => {
    const key = `${kind}|${namespace}|${name}|${reason}|${message}`;
    const now = Date.now();
    if ((recent.get(key) ?? 0) > now - 60_000) return;
    recent.set(key, now);
    const ns = namespace || "default";
    const ts = rfc3339(now);
    const ev = {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name: `${name}.${randomBytes(8).toString("hex")}`, namespace: ns },
      involvedObject: {
        apiVersion: API_VERSIONS[kind] ?? "v1",
        kind,
        name,
        ...(namespace ? { namespace } : {}),
        ...(kind === "Node" ? { uid: name } : {}),
      },
      reason,
      message: message.slice(0, 1024),
      type,
      source: { component: "kube-proxy", host: nodeName },
      reportingComponent: "kube-proxy",
      reportingInstance: nodeName,
      firstTimestamp: ts,
      lastTimestamp: ts,
      count: 1,
    };
    client.request("POST", `/api/v1/namespaces/${encodeURIComponent(ns)}/events`, ev).then(
      (r) => {
        if (r.status >= 300) log(`event ${reason}: ${r.status} ${r.json?.message ?? ""}`);
      },
      () => {},
    );
  };
}
