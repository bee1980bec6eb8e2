// Where an APIService's requests go: its Service's port, one ready endpoint of the Service's
// EndpointSlices with that port's name, and the node that endpoint runs on (whose tunnel
// carries the request). The same checks, in upstream's order and words, decide the
// availability controller's condition (ServiceNotFound, ServicePortError, EndpointsNotFound,
// MissingEndpoints) and where the aggregator's proxy sends a request. Also the front-proxy
// headers that tell the extension server who asked.
import type { APIService } from "./strategies/apiservices";
import type { KubeObject } from "./types";
import type { UserInfo } from "./user";

/** The label an EndpointSlice names its Service with. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

export interface Backend {
  ok: true;
  /** the endpoint's address and port */
  ip: string;
  port: number;
  /** the node the endpoint runs on */
  node: string;
  /** the name the server's certificate must hold: <service>.<namespace>.svc */
  serverName: string;
}

export interface Unresolved {
  ok: false;
  status: "False" | "Unknown";
  reason: string;
  message: string;
}

interface SlicePort {
  name?: string | null;
  port?: number | null;
}

interface SliceEndpoint {
  addresses?: string[];
  conditions?: { ready?: boolean | null };
  nodeName?: string;
}

/** The checks before any request: the Service, its port, ready endpoints with the port's name. */
export function resolveBackend(
  apiService: APIService,
  service: KubeObject | undefined,
  slices: KubeObject[],
  pick: (n: number) => number = (n) => Math.floor(Math.random() * n),
): Backend | Unresolved {
  const ref = apiService.spec?.service;
  const ns = ref?.namespace ?? "";
  const name = ref?.name ?? "";
  const no = (reason: string, message: string): Unresolved => ({
    ok: false,
    status: "False",
    reason,
    message,
  });
  if (!ref) return no("Local", "Local APIServices are always available");
  if (!service) return no("ServiceNotFound", `service/${name} in "${ns}" is not present`);
  const wantPort = ref.port ?? 443;
  const ports = (service.spec?.ports ?? []) as { port?: number; name?: string }[];
  const sp = ports.find((p) => p.port === wantPort);
  if (!sp) return no("ServicePortError", `service/${name} in "${ns}" is not listening on port ${wantPort}`);
  const portName = sp.name ?? "";
  if (!slices.length)
    return no("EndpointsNotFound", `cannot find endpointslices for service/${name} in "${ns}"`);
  const candidates: { ip: string; port: number; node: string }[] = [];
  for (const s of slices) {
    const port = ((s as { ports?: SlicePort[] }).ports ?? []).find(
      (p) => (p.name ?? "") === portName && p.port,
    );
    if (!port?.port) continue;
    for (const e of ((s as { endpoints?: SliceEndpoint[] }).endpoints ?? []) as SliceEndpoint[]) {
      if (e.conditions?.ready === false || !e.addresses?.length || !e.nodeName) continue;
      candidates.push({ ip: e.addresses[0], port: port.port, node: e.nodeName });
    }
  }
  if (!candidates.length)
    return no(
      "MissingEndpoints",
      `endpointslices for service/${name} in "${ns}" have no addresses with port name "${portName}"`,
    );
  const c = candidates[pick(candidates.length)];
  return { ok: true, ...c, serverName: `${name}.${ns}.svc` };
}

/** The discovery path upstream's availability check and proxy use for the group/version. */
export function discoveryPath(apiService: APIService): string {
  const g = apiService.spec?.group ?? "";
  const v = apiService.spec?.version ?? "";
  return g ? `/apis/${g}/${v}` : `/api/${v}`;
}

/** A caBundle (base64 of PEM) as the PEM text the agent's TLS client takes. */
export function caBundlePEM(apiService: APIService): string | undefined {
  const ca = apiService.spec?.caBundle;
  if (!ca) return undefined;
  try {
    return atob(ca);
  } catch {
    return undefined;
  }
}

/** Request headers the aggregator never passes on: credentials, hop-by-hop, and front-proxy ones. */
const DROPPED =
  /^(authorization|connection|keep-alive|proxy-.*|te|trailer|transfer-encoding|upgrade|host|content-length|x-remote-.*|impersonate-.*|cookie|x-edgeplane-.*)$/i;

/**
 * The headers sent to the extension server: the client's own (minus credentials and
 * hop-by-hop ones), then upstream's front-proxy headers naming the authenticated user:
 * X-Remote-User, one X-Remote-Group per group, X-Remote-Extra-<key> per extra value (the key
 * percent-encoded, as upstream writes it).
 */
export function frontProxyHeaders(incoming: Iterable<[string, string]>, user: UserInfo): [string, string][] {
  const out: [string, string][] = [];
  for (const [k, v] of incoming) if (!DROPPED.test(k)) out.push([k, v]);
  out.push(["X-Remote-User", user.name]);
  for (const g of user.groups) out.push(["X-Remote-Group", g]);
  for (const [key, values] of Object.entries(user.extra ?? {}))
    for (const v of values) out.push([`X-Remote-Extra-${encodeURIComponent(key)}`, v]);
  return out;
}
