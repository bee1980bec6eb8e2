// The apiserver side of pods/log, pods/exec, pods/attach and pods/portforward, and the node
// agents' tunnel endpoint. The pod is checked here (bound to a node, a valid container), then
// the request goes to the node's NodeTunnel Durable Object, which streams it over the agent's
// outbound WebSocket (api/wire/node-tunnel.ts).
import { badRequest, field, invalid, notFoundPath, StatusError } from "../../api/errors";
import type { KubeObject } from "../../api/types";
import { noTunnelMessage, OPEN_HEADER, type OpenRequest } from "../../api/wire/node-tunnel";
import {
  offersSpdyUpgrade,
  PORT_FORWARD_STREAM_PROTOCOL,
  REMOTECOMMAND_STREAM_PROTOCOL,
  spdyUpgradeProtocol,
} from "../../api/wire/spdy-upgrade";
import type { Env } from "../../durable-objects/env";
import type { NodeTunnel } from "../../durable-objects/node-tunnel/node-tunnel";
import { admit } from "../admission";
import { isTrue } from "../request-info";
import type { WriteContext } from "./write-context";

/** The binding this module needs (to be part of Env once wired). */
export interface TunnelEnv {
  NODE_TUNNEL: DurableObjectNamespace<NodeTunnel>;
}

export const TUNNEL_PATH_PREFIX = "/edgeplane/tunnel/";
// (and a plain SPDY upgrade, which the local front door carries over WebSocket:
// api/wire/spdy-upgrade.ts)
export const EXEC_PROTOCOLS = [
  "v5.channel.k8s.io",
  "v4.channel.k8s.io",
  spdyUpgradeProtocol(REMOTECOMMAND_STREAM_PROTOCOL),
];
// kubectl 1.31+ tunnels SPDY in WebSocket messages under the subprotocol
// "SPDY/3.1+portforward.k8s.io" (checked against the kubectl 1.32 binary; falls back to a
// plain SPDY upgrade, which Workers cannot serve, if refused); other clients (the Python
// client, @kubernetes/client-node, older client-go) speak the kubelet's channel protocol
// v4.channel.k8s.io: two channels per port, data and error.
export const PORT_FORWARD_PROTOCOLS = [
  "SPDY/3.1+portforward.k8s.io",
  "v4.channel.k8s.io",
  spdyUpgradeProtocol(PORT_FORWARD_STREAM_PROTOCOL),
];

const STREAM_SUBRESOURCES = /\/pods\/[^/]+\/(exec|attach|portforward)$/;

/**
 * The method a request is authorized by: a plain SPDY upgrade the front door carried over
 * WebSocket was a POST (so `create`, as upstream authorizes it), every other request its own.
 */
export function authorizedMethod(req: Request, path: string): string {
  if (
    req.method === "GET" &&
    STREAM_SUBRESOURCES.test(path) &&
    offersSpdyUpgrade(req.headers.get("sec-websocket-protocol"))
  )
    return "POST";
  return req.method;
}

function tunnelStub(env: Env, node: string): DurableObjectStub<NodeTunnel> {
  const ns = (env as Env & Partial<TunnelEnv>).NODE_TUNNEL;
  if (!ns) throw new StatusError(503, "ServiceUnavailable", "node tunnels are not configured");
  return ns.get(ns.idFromName(`${env.EDGEPLANE_CLUSTER}/${node}`));
}

/** GET /edgeplane/tunnel/<node> (WebSocket): a node agent connects its tunnel. */
export async function handleNodeTunnel(req: Request, env: Env): Promise<Response> {
  const path = new URL(req.url).pathname;
  if (!path.startsWith(TUNNEL_PATH_PREFIX)) throw notFoundPath();
  const node = decodeURIComponent(path.slice(TUNNEL_PATH_PREFIX.length));
  if (!node || node.includes("/")) throw notFoundPath();
  // authorization already decided: the Node authorizer lets system:node:X open only
  // /edgeplane/tunnel/X; anyone else needs RBAC on that non-resource URL (get)
  if (req.headers.get("upgrade")?.toLowerCase() !== "websocket")
    throw badRequest("the node tunnel needs a WebSocket upgrade");
  return tunnelStub(env, node).fetch(new Request("https://node-tunnel/agent", req));
}

function intParam(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null || v === "") return undefined;
  if (!/^-?\d+$/.test(v)) throw badRequest(`invalid value for ${name}: ${v}`);
  return Number(v);
}

const names = (list: unknown): string[] =>
  Array.isArray(list) ? list.map((c: { name?: string }) => String(c?.name ?? "")) : [];

/** The container a request is about, as upstream's podContainerName/LogLocation picks it. */
export function containerFor(pod: KubeObject, requested: string | null): string {
  const name = pod.metadata.name;
  const regular = names(pod.spec?.containers);
  const init = names(pod.spec?.initContainers);
  const ephemeral = names(pod.spec?.ephemeralContainers);
  if (!requested) {
    if (regular.length === 1) return regular[0];
    let msg = `a container name must be specified for pod ${name}, choose one of: [${regular.join(" ")}]`;
    if (init.length) msg += ` or one of the init containers: [${init.join(" ")}]`;
    if (ephemeral.length) msg += ` or one of the ephemeral containers: [${ephemeral.join(" ")}]`;
    throw badRequest(msg);
  }
  if (![...regular, ...init, ...ephemeral].includes(requested))
    throw badRequest(`container ${requested} is not valid for pod ${name}`);
  return requested;
}

function nodeOf(pod: KubeObject): string {
  const node = pod.spec?.nodeName;
  if (!node) throw badRequest(`pod ${pod.metadata.name} does not have a host assigned`);
  return String(node);
}

function logsRequest(pod: KubeObject, q: URLSearchParams): OpenRequest {
  const container = containerFor(pod, q.get("container"));
  const tailLines = intParam(q, "tailLines");
  const sinceSeconds = intParam(q, "sinceSeconds");
  const limitBytes = intParam(q, "limitBytes");
  const sinceTime = q.get("sinceTime") || undefined;
  const causes = [];
  if (tailLines !== undefined && tailLines < 0)
    causes.push(field.invalid("tailLines", tailLines, "must be greater than or equal to 0"));
  if (limitBytes !== undefined && limitBytes < 1)
    causes.push(field.invalid("limitBytes", limitBytes, "must be greater than 0"));
  if (sinceSeconds !== undefined && sinceSeconds < 1)
    causes.push(field.invalid("sinceSeconds", sinceSeconds, "must be greater than 0"));
  if (sinceSeconds !== undefined && sinceTime)
    causes.push(field.forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"));
  if (sinceTime && Number.isNaN(Date.parse(sinceTime)))
    causes.push(field.invalid("sinceTime", sinceTime, "must be an RFC 3339 time"));
  if (causes.length) throw invalid({ group: "", kind: "PodLogOptions" }, pod.metadata.name ?? "", causes);
  return {
    kind: "logs",
    namespace: pod.metadata.namespace ?? "",
    pod: pod.metadata.name ?? "",
    container,
    follow: isTrue(q.get("follow")),
    previous: isTrue(q.get("previous")),
    timestamps: isTrue(q.get("timestamps")),
    tailLines,
    sinceSeconds,
    sinceTime,
    limitBytes,
  };
}

/** The first subprotocol the client offers that we speak. */
export function chooseProtocol(header: string | null | undefined, supported: string[]): string | undefined {
  const offered = (header ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
  return offered.find((p) => supported.includes(p));
}

function streamOptions(q: URLSearchParams) {
  return {
    stdin: isTrue(q.get("stdin")),
    stdout: isTrue(q.get("stdout")),
    stderr: isTrue(q.get("stderr")),
    tty: isTrue(q.get("tty")),
  };
}

function interactiveRequest(pod: KubeObject, sub: "exec" | "attach", req: Request): OpenRequest {
  const q = new URL(req.url).searchParams;
  const container = containerFor(pod, q.get("container"));
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed")
    throw badRequest(`cannot ${sub} into a container in a completed pod; current phase is ${phase}`);
  nodeOf(pod);
  const protocol = upgradeProtocol(req, EXEC_PROTOCOLS);
  const opts = streamOptions(q);
  if (!opts.stdin && !opts.stdout && !opts.stderr)
    throw badRequest("you must specify at least 1 of stdin, stdout, stderr");
  if (opts.tty && opts.stderr) opts.stderr = false; // a terminal merges stderr into stdout
  const base = { namespace: pod.metadata.namespace ?? "", pod: pod.metadata.name ?? "", container, protocol };
  if (sub === "attach") return { kind: "attach", ...base, ...opts };
  const command = q.getAll("command");
  if (!command.length) throw badRequest("you must specify at least 1 command");
  return { kind: "exec", ...base, ...opts, command };
}

/** Refuses a stream asked for over anything but WebSocket (kubectl's SPDY fallback). */
class UpgradeRequired extends StatusError {
  constructor(supported: string[]) {
    super(
      400,
      "BadRequest",
      `Upgrade request required: this server streams over WebSocket (${supported.join(", ")})`,
    );
  }
}

function upgradeProtocol(req: Request, supported: string[]): string {
  if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") throw new UpgradeRequired(supported);
  const protocol = chooseProtocol(req.headers.get("sec-websocket-protocol"), supported);
  if (!protocol)
    throw badRequest(
      `unable to upgrade: none of the requested subprotocols is supported (supported: ${supported.join(", ")})`,
    );
  return protocol;
}

function portForwardRequest(pod: KubeObject, req: Request): OpenRequest {
  const q = new URL(req.url).searchParams;
  const phase = pod.status?.phase;
  if (phase === "Succeeded" || phase === "Failed")
    throw badRequest(`cannot port-forward to a completed pod; current phase is ${phase}`);
  nodeOf(pod);
  const protocol = upgradeProtocol(req, PORT_FORWARD_PROTOCOLS);
  const ports = q
    .getAll("ports")
    .flatMap((p) => p.split(","))
    .filter(Boolean)
    .map((p) => {
      const n = Number(p);
      if (!Number.isInteger(n) || n < 1 || n > 65535) throw badRequest(`invalid port: ${p}`);
      return n;
    });
  // the channel protocol names its ports up front (the kubelet's own words: it reads "port")
  if (protocol === "v4.channel.k8s.io" && !ports.length)
    throw badRequest('query parameter "port" is required');
  return {
    kind: "portforward",
    namespace: pod.metadata.namespace ?? "",
    pod: pod.metadata.name ?? "",
    ports,
    protocol,
  };
}

function openRequest(pod: KubeObject, subresource: string, req: Request): OpenRequest {
  switch (subresource) {
    case "log":
      return logsRequest(pod, new URL(req.url).searchParams);
    case "exec":
    case "attach":
      return interactiveRequest(pod, subresource, req);
    case "portforward":
      return portForwardRequest(pod, req);
    default:
      throw notFoundPath();
  }
}

/**
 * The options object of a CONNECT, as upstream decodes it from the query for admission:
 * PodExecOptions, PodAttachOptions or PodPortForwardOptions (no metadata; false and empty
 * fields left out, as Go's omitempty does).
 */
export function connectOptions(subresource: string, q: URLSearchParams): KubeObject {
  const kind = { exec: "PodExecOptions", attach: "PodAttachOptions", portforward: "PodPortForwardOptions" }[
    subresource
  ];
  const out: Record<string, unknown> = { kind, apiVersion: "v1" };
  if (subresource === "portforward") {
    const ports = q
      .getAll("ports")
      .flatMap((p) => p.split(","))
      .filter(Boolean)
      .map((p) => {
        const n = Number(p);
        if (!Number.isInteger(n) || n < 1 || n > 65535) throw badRequest(`invalid port: ${p}`);
        return n;
      });
    if (ports.length) out.ports = ports;
    return out as unknown as KubeObject;
  }
  for (const [key, value] of Object.entries(streamOptions(q))) if (value) out[key] = true;
  const container = q.get("container");
  if (container) out.container = container;
  const command = q.getAll("command");
  if (subresource === "exec" && command.length) out.command = command;
  return out as unknown as KubeObject;
}

/** pods/log, pods/exec, pods/attach, pods/portforward (already authenticated and authorized). */
export async function streamSubresource(w: WriteContext, namespace: string): Promise<Response> {
  const req = w.c.req.raw;
  // exec, attach and port-forward are a CONNECT, admitted (webhooks, policies) before the pod
  // is looked at, as upstream's connect handler does; a log is a read
  if (w.info.subresource !== "log")
    await admit(w, "CONNECT", connectOptions(w.info.subresource, new URL(req.url).searchParams), undefined);
  const pod = await w.store.get(namespace, w.info.name);
  let open: OpenRequest;
  try {
    open = openRequest(pod, w.info.subresource, req);
  } catch (e) {
    // kubectl asks over SPDY only after its WebSocket attempt failed, and shows the SPDY
    // answer: when the cause was the node, say that, not that SPDY is not spoken here
    if (e instanceof UpgradeRequired && !(await tunnelStub(w.c.env, nodeOf(pod)).connected()))
      throw new StatusError(503, "ServiceUnavailable", noTunnelMessage(nodeOf(pod)));
    throw e;
  }
  // upstream answers an unscheduled pod's log with an empty body, everything else with a 400
  if (open.kind === "logs" && !pod.spec?.nodeName)
    return new Response("", { headers: { "content-type": "text/plain" } });
  const node = nodeOf(pod);
  const headers = new Headers({ [OPEN_HEADER]: JSON.stringify(open) });
  if (open.kind !== "logs") {
    for (const h of ["upgrade", "connection", "sec-websocket-key", "sec-websocket-version"]) {
      const v = req.headers.get(h);
      if (v) headers.set(h, v);
    }
  }
  const res = await tunnelStub(w.c.env, node).fetch("https://node-tunnel/open", {
    headers,
    signal: req.signal,
  });
  if (open.kind !== "logs" || res.status !== 200) return res;
  return new Response(res.body, {
    status: 200,
    headers: {
      "content-type": "text/plain",
      "cache-control": "no-cache, private",
      // a compressed stream would sit in the compressor's buffer: followed lines must go out now
      "content-encoding": "identity",
    },
  });
}
