// The APIServices' Available condition (upstream's kube-aggregator AvailableConditionController):
// a local APIService is always available (Local); one that names a Service is checked in
// upstream's order: the Service (ServiceNotFound), its port (ServicePortError), its
// EndpointSlices (EndpointsNotFound) and a ready endpoint with the port's name
// (MissingEndpoints), then a GET of its discovery path through the endpoint's node tunnel as
// system:kube-aggregator (FailedDiscoveryCheck: re-checked after a while), else Passed.
// Level-triggered: the key is the APIService's name; Service and EndpointSlice changes enqueue
// the APIServices that name the Service.
import {
  type Backend,
  caBundlePEM,
  discoveryPath,
  frontProxyHeaders,
  resolveBackend,
  SERVICE_NAME_LABEL,
} from "../../../api/apiservice-backend";
import {
  type APIService,
  type APIServiceCondition,
  apiservices,
  availableCondition,
} from "../../../api/strategies/apiservices";
import { rfc3339 } from "../../../api/time";
import type { KubeObject } from "../../../api/types";
import type { HttpRequest } from "../../../api/wire/node-tunnel";
import { errorMessage, isConflict, isNotFound } from "../lib/api-errors";
import { setCondition } from "../lib/conditions";
import type { Controller, ControllerContext } from "../runtime/controller";

export const APISERVICES = "apiregistration.k8s.io/apiservices";
const SERVICES = "/services";
const SLICES = "discovery.k8s.io/endpointslices";
/** index of APIServices by the "<namespace>/<name>" of the Service they name */
const BY_SERVICE = "apiservice-by-service";

/** How long a failing discovery check waits before the next (upstream re-checks on a tight loop). */
const RECHECK_FAILED_MS = 10_000;
/** A discovery check's answer must start within this (upstream: 5 s client timeout). */
const CHECK_TIMEOUT_MS = 5_000;

/** Makes one HTTP request from a node (the manager gives it the node tunnels). */
export type NodeHttp = (node: string, req: HttpRequest) => Promise<Response>;

const serviceKey = (svc: APIService) => {
  const ref = svc.spec?.service;
  return ref ? [`${ref.namespace}/${ref.name}`] : [];
};

/** The message of the tunnel's own failure (not the backend's answer), if the body is one. */
function tunnelFailure(text: string): string | undefined {
  try {
    const s = JSON.parse(text);
    const m = s?.kind === "Status" ? String(s.message ?? "") : "";
    return /^error trying to reach service|tunnel|did not answer/.test(m) ? m : undefined;
  } catch {
    return undefined;
  }
}

/** The discovery check: undefined when it passed, else upstream's message. */
async function discoveryCheck(
  svc: APIService,
  backend: Backend,
  http: NodeHttp,
): Promise<string | undefined> {
  const path = discoveryPath(svc);
  const url = `https://${backend.ip}:${backend.port}${path}`;
  try {
    const res = await http(backend.node, {
      kind: "http",
      host: backend.ip,
      port: backend.port,
      method: "GET",
      path,
      headers: frontProxyHeaders([["accept", "application/json"]], {
        name: "system:kube-aggregator",
        uid: "",
        groups: ["system:masters"],
      }),
      tls: {
        serverName: backend.serverName,
        ca: caBundlePEM(svc),
        insecureSkipTLSVerify: svc.spec?.insecureSkipTLSVerify === true,
      },
      timeoutMs: CHECK_TIMEOUT_MS,
    });
    const text = await res.text();
    if (res.status >= 200 && res.status < 300) return undefined;
    // the tunnel's own failures (unreachable endpoint, no agent) are its 503/504 Status
    const tunnel = res.status === 503 || res.status === 504 ? tunnelFailure(text) : undefined;
    return `failing or missing response from ${url}: ${tunnel ?? `bad status from ${url}: ${res.status}`}`;
  } catch (e) {
    return `failing or missing response from ${url}: ${errorMessage(e)}`;
  }
}

export function createAvailabilityController(http?: NodeHttp): Controller {
  async function sync(name: string, ctx: ControllerContext): Promise<void> {
    const svc = ctx.informers.get(APISERVICES, name) as APIService | undefined;
    if (!svc || svc.metadata.deletionTimestamp) return;
    const now = rfc3339(ctx.now());
    let cond: APIServiceCondition;
    let recheck = false;
    const ref = svc.spec?.service;
    if (!ref) {
      cond = {
        type: "Available",
        status: "True",
        reason: "Local",
        message: "Local APIServices are always available",
      };
    } else {
      const service = ctx.informers.get(SERVICES, `${ref.namespace}/${ref.name}`);
      const slices = ctx.informers
        .list(SLICES, ref.namespace)
        .filter((s: KubeObject) => s.metadata.labels?.[SERVICE_NAME_LABEL] === ref.name);
      const backend = resolveBackend(svc, service, slices);
      if (!backend.ok) {
        cond = {
          type: "Available",
          status: backend.status,
          reason: backend.reason,
          message: backend.message,
        };
      } else {
        const failed = http
          ? await discoveryCheck(svc, backend, http)
          : "failing or missing response: no node tunnels";
        if (failed) {
          recheck = true;
          cond = { type: "Available", status: "False", reason: "FailedDiscoveryCheck", message: failed };
        } else {
          cond = { type: "Available", status: "True", reason: "Passed", message: "all checks passed" };
        }
      }
    }
    if (recheck) ctx.enqueue(name, RECHECK_FAILED_MS);
    const old = availableCondition(svc);
    if (old && old.status === cond.status && old.reason === cond.reason && old.message === cond.message)
      return;
    const conditions = setCondition(svc.status?.conditions, { ...cond, lastTransitionTime: now });
    try {
      await ctx.api.update(
        apiservices,
        { ...svc, status: { ...svc.status, conditions } } as KubeObject,
        "status",
      );
    } catch (e) {
      if (isNotFound(e)) return;
      if (isConflict(e)) {
        ctx.enqueue(name);
        return;
      }
      throw e;
    }
  }

  const byService = (obj: KubeObject, _old: KubeObject | undefined, ctx: ControllerContext) =>
    ctx.informers
      .byIndex(APISERVICES, BY_SERVICE, `${obj.metadata.namespace}/${obj.metadata.name}`)
      .map((s) => s.metadata.name!);

  return {
    name: "apiservice-availability",
    workers: 2,
    setup: (ctx) => ctx.informers.addIndex(APISERVICES, BY_SERVICE, (o) => serviceKey(o as APIService)),
    watches: {
      [APISERVICES]: (obj) => [obj.metadata.name!],
      [SERVICES]: byService,
      [SLICES]: (slice, _old, ctx) => {
        const name = slice.metadata.labels?.[SERVICE_NAME_LABEL];
        if (!name) return [];
        return ctx.informers
          .byIndex(APISERVICES, BY_SERVICE, `${slice.metadata.namespace}/${name}`)
          .map((s) => s.metadata.name!);
      },
    },
    resync: (ctx) => ctx.informers.keys(APISERVICES),
    sync,
  };
}
