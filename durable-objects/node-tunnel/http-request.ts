// One HTTP request made from a node (api/wire/node-tunnel.ts, stream kind "http"): handed to
// the node's NodeTunnel object, which has the node's agent make it and streams back the
// answer. The aggregator's proxy (Worker) and its availability check (controllers) both use it.
import type { HttpRequest } from "../../api/wire/node-tunnel";
import type { Env } from "../env";

/** The node's answer (status, headers, streamed body), or a metav1.Status (503 when unreachable). */
export function httpThroughNode(env: Env, node: string, req: HttpRequest): Promise<Response> {
  const ns = env.NODE_TUNNEL;
  const stub = ns.get(ns.idFromName(`${env.EDGEPLANE_CLUSTER}/${node}`));
  return stub.fetch("https://node-tunnel/open", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(req),
  });
}
