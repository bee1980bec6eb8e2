// The apiserver: request info -> authentication -> authorization -> handler, every failure
// a metav1.Status. The same app serves clients (workers/index.ts) and, in process, the
// controllers and scheduler (durable-objects/controllers/runtime/client.ts).
import { Hono } from "hono";
import { notFoundPath } from "../api/errors";
import { RELAY_PATH } from "../durable-objects/store/relay";
import { withAggregated } from "./aggregation/discovery";
import { proxyAggregated } from "./aggregation/proxy";
import type { AppEnv } from "./app-env";
import { audit } from "./audit/index";
import { NODE_CREDENTIAL_PATH, nodeCredentialRequest } from "./authn/node-credentials";
import { bootstrap } from "./bootstrap";
import { servedDefs } from "./custom-resources";
import { mountDashboard } from "./dashboard/routes";
import { handleDiscovery } from "./discovery/routes";
import { decodeObject } from "./encoding/request-body";
import { errorResponse, json } from "./encoding/respond";
import { authentication, issuerDiscovery } from "./filters/authn";
import { authorization } from "./filters/authz";
import { priorityLevel } from "./filters/priority-level";
import { healthCheckResponse, healthResponse } from "./handlers/health";
import { handleMetricsReport, METRICS_REPORT_ROUTE } from "./handlers/metrics-report";
import { handleRelay } from "./handlers/relay";
import { handleResource } from "./handlers/resource";
import { authorizedMethod, handleNodeTunnel } from "./handlers/streams";
import { checkPathEncoding, requestInfo } from "./request-info";
import { handlePodTrace, POD_TRACE_ROUTE } from "./trace/read";
import { startTrace } from "./trace/recorder";

export const app = new Hono<AppEnv>();

app.onError((err) => errorResponse(err));
app.notFound(() => errorResponse(notFoundPath()));

app.use("*", async (c, next) => {
  const url = new URL(c.req.url);
  // a path that does not percent-decode is a 400 before anything else runs (audit, authn,
  // routing): no later decode of the path can then throw
  checkPathEncoding(url.pathname);
  c.set("url", url);
  c.set("info", requestInfo(authorizedMethod(c.req.raw, url.pathname), url));
  startTrace(c.req.raw, c.get("info"), c.env);
  await next();
});
// the local front door's relays: its own secret, not a client's credential (handlers/relay.ts)
app.all(RELAY_PATH, async (c, next) => (await handleRelay(c.req.raw, c.env)) ?? next());
app.use("*", audit());
app.use("*", authentication());
// the local front door learns a credential's priority level from its first answer
app.use("*", priorityLevel());
// the cluster's system namespaces and bootstrap RBAC policy exist before anything is authorized
app.use("*", async (c, next) => {
  await bootstrap(c.env, (p) => {
    try {
      c.executionCtx.waitUntil(p);
    } catch {
      // in-process requests have no execution context; the promise runs on regardless
    }
  });
  await next();
});
// a bootstrap token's one permission: exchanging itself for its node's credential (the
// handler authorizes: system:bootstrappers or system:masters only); a node renews its own here
app.post(NODE_CREDENTIAL_PATH, async (c) => {
  const body = await decodeObject(c.req.raw);
  return json(await nodeCredentialRequest(c.env, c.get("user"), body), 201);
});
// a pod's flow trace: authorized as a get of the pod (workers/trace/read.ts)
app.get(POD_TRACE_ROUTE, (c) => handlePodTrace(c));
// the web dashboard's shell and assets: after authentication, before authorization (no data)
mountDashboard(app);
app.use("*", authorization());
app.use("*", issuerDiscovery());

for (const endpoint of ["healthz", "livez", "readyz"]) {
  app.get(`/${endpoint}`, (c) => healthResponse(endpoint, c.get("url"), c.env));
  app.get(`/${endpoint}/:check{.+}`, (c) => healthCheckResponse(c.req.param("check"), c.env));
}

// a node agent's outbound connection for streams (authorized as the node's own tunnel)
app.get("/edgeplane/tunnel/:node", (c) => handleNodeTunnel(c.req.raw, c.env));
// a node agent's resource-usage report (authorized as the node's own, like its tunnel)
app.post(METRICS_REPORT_ROUTE, (c) => handleMetricsReport(c.req.raw, c.env, c.req.param("node")));

/** Discovery paths whose documents list aggregated groups too (not OpenAPI: backends keep theirs). */
const LISTS_AGGREGATED = /^\/apis(\/[^/]+)?\/?$/;

app.all("*", async (c) => {
  const info = c.get("info");
  const url = c.get("url");
  // a group/version an APIService hands to an extension server (workers/aggregation/proxy.ts)
  if (url.pathname.startsWith("/apis/")) {
    const proxied = await proxyAggregated(c.env, await servedDefs(c.env), c.req.raw, url, c.get("user"));
    if (proxied) return proxied;
  }
  if (!info.isResourceRequest) {
    const served = await servedDefs(c.env);
    const defs = LISTS_AGGREGATED.test(url.pathname) ? await withAggregated(c.env, served) : served;
    const r = handleDiscovery(defs, {
      method: c.req.method,
      path: url.pathname,
      query: url.searchParams,
      accept: c.req.header("accept"),
      ifNoneMatch: c.req.header("if-none-match"),
      host: url.host,
    });
    if (!r) throw notFoundPath();
    return new Response(r.body, { status: r.status, headers: r.headers });
  }
  return handleResource(c);
});
